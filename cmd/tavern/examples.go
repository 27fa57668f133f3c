package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// helpExamples are the examples shown by `tavern CMD --help` for commands
// whose own description has none, keyed by the command path. Every
// command's help shows at least one example (a CLI contract, checked by
// the tests).
var helpExamples = map[string][]string{
	"agent":             {"tavern agent new alice --role builder --queue build", "tavern agent state alice working", "tavern agent ls --json"},
	"agent new":         {"tavern agent new alice --role builder --parent lead --queue build", "tavern agent new --role reviewer   # a themed name"},
	"agent ls":          {"tavern agent ls", "tavern agent ls --json"},
	"agent show":        {"tavern agent show alice", "tavern agent show alice --json"},
	"agent state":       {"tavern agent state alice working", "tavern agent state alice verifying --reason \"parser done\""},
	"agent audit":       {"tavern agent audit", "tavern agent audit --json"},
	"agent reap":        {"tavern agent reap", "tavern agent reap --json"},
	"agent note":        {"tavern agent note alice \"blocked on the lexer\""},
	"agent log":         {"tavern agent log alice", "tavern agent log alice --tail 20 --json"},
	"answer":            {"tavern questions --as lead", "tavern answer 01a2f0c4 \"use postgres\""},
	"bubble":            {"tavern bubble", "tavern bubble --after 10m --json"},
	"channel":           {"tavern channel create general --topic \"project chat\"", "tavern channel ls", "tavern channel archive general"},
	"channel create":    {"tavern channel create general --topic \"project chat\""},
	"channel ls":        {"tavern channel ls", "tavern channel ls --all --json"},
	"channel archive":   {"tavern channel archive general"},
	"commit":            {"tavern commit add alice --desc \"tests pass\" --assert \"go test ./...\" --timeout 5m", "tavern commit ls alice"},
	"commit ls":         {"tavern commit ls alice", "tavern commit ls alice --json"},
	"constitution":      {"tavern constitution set builder --body builder.md", "tavern constitution sha builder"},
	"constitution set":  {"tavern constitution set builder --body builder.md", "tavern constitution set reviewer --text \"Never merge your own work.\""},
	"constitution sha":  {"tavern constitution sha builder"},
	"demo":              {"tavern demo", "make demo   # the same, from a clone"},
	"item":              {"tavern item show ID --json", "tavern item done ID --attempt 1 --result out.md", "tavern item fail ID --attempt 1 --reason \"tests fail\""},
	"knowledge add":     {"tavern knowledge add --domain decision --as alice \"we use postgres\"", "echo \"one package per concern\" | tavern knowledge add --domain architecture"},
	"knowledge ls":      {"tavern knowledge ls", "tavern knowledge ls --domain decision --json"},
	"knowledge search":  {"tavern knowledge search \"package layering\"", "tavern knowledge search postgres --domain decision --limit 3 --json"},
	"knowledge inspect": {"tavern knowledge inspect 01a2f0c4", "tavern knowledge inspect 01a2f0c4 --limit 5 --json"},
	"knowledge archive": {"tavern knowledge archive 01a2f0c4"},
	"memory add":        {"tavern memory add --as alice --topic db-choice \"we chose postgres\"", "tavern memory add --as alice --topic role --core \"I own the parser\""},
	"memory ls":         {"tavern memory ls --as alice", "tavern memory ls --as alice --core --json"},
	"memory search":     {"tavern memory search postgres --as alice", "tavern memory search \"parser bug\" --as alice --limit 3 --json"},
	"memory inspect":    {"tavern memory inspect 01a2f0c4 --as alice"},
	"memory archive":    {"tavern memory archive 01a2f0c4 --as alice"},
	"notes":             {"tavern note general \"this channel is noisy\" --as alice", "tavern notes general --json"},
	"pool":              {"tavern pool run builders --queue build,test --max 8 --on-empty terminate -- ./build-one.sh"},
	"questions":         {"tavern questions              # questions that reached the user", "tavern questions --as lead --json"},
	"queue":             {"tavern queue create build --max-attempts 3 --lease 5m", "id=$(tavern queue add build --title \"compile parser\")", "tavern queue take build --json", "tavern queue ls"},
	"reservations":      {"tavern reservations", "tavern reservations --json"},
	"token init":        {"tavern token init merge --count 2"},
	"token acquire":     {"h=$(tavern token acquire merge --wait 10m --as alice)", "tavern token acquire api-quota --ttl 1m --json"},
	"token release":     {"tavern token release merge \"$h\"", "tavern token release merge --as alice"},
	"token ls":          {"tavern token ls", "tavern token ls merge --json"},
	"tuple out":         {"tavern tuple out job status=pending n=3 --ttl 1h", "echo \"details\" | tavern tuple out job status=pending --body -"},
	"tuple rd":          {"tavern tuple rd job status=pending       # rdp: answer at once", "tavern tuple rd result task=42 --wait 5m --json"},
	"tuple in":          {"tavern tuple in job status=pending n=?  # inp: answer at once", "tavern tuple in job status=pending --wait 30s --json"},
	"tuple ls":          {"tavern tuple ls", "tavern tuple ls job 'n>2' --json"},
	"tuple gc":          {"tavern tuple gc", "tavern tuple gc job --json"},
	"unreserve":         {"tavern unreserve 'src/parser/**' --as alice", "tavern unreserve --as alice   # all of alice's"},
	"verifier":          {"tavern verifier                # runs until Ctrl-C", "tavern verifier --once"},
	"verify":            {"tavern verify alice", "tavern verify alice --json"},
}

// addExamples appends helpExamples to the descriptions of the commands
// (and subcommands) under prefix that do not show an example yet.
func addExamples(prefix string, cmds []*cli.Command) {
	for _, c := range cmds {
		path := strings.TrimSpace(prefix + " " + c.Name)
		if ex := helpExamples[path]; len(ex) > 0 && !strings.Contains(c.Description, "Example") {
			var b strings.Builder
			if c.Description == "" {
				b.WriteString(c.Usage)
				b.WriteString(".")
			} else {
				b.WriteString(strings.TrimRight(c.Description, "\n"))
			}
			b.WriteString("\n\nExamples:\n")
			for _, e := range ex {
				b.WriteString("   " + e + "\n")
			}
			c.Description = strings.TrimRight(b.String(), "\n")
		}
		addExamples(path, c.Subcommands)
	}
}
