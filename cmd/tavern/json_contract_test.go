package main

// The JSON contract: one scenario runs every command that prints JSON,
// with --json before the command name (the global flag), against the
// built binary; the shape of each output (keys
// and the types of their values) is rendered into docs/json.md, which is
// the golden file (make docs rewrites it with -update; make check fails
// when it is stale). A key removed or renamed, or a type changed, fails
// here: that is a new jsonSchemaVersion.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// jsonStep is one command of the scenario. Its args may name values
// captured by earlier steps ($ITEM); capture takes values from its own
// output (a name and a dot path, as the scripts' json command reads).
type jsonStep struct {
	name    string // the section in docs/json.md; "" to run without documenting
	args    []string
	code    int               // expected exit code
	stderr  bool              // the JSON is on stderr (the error object)
	capture map[string]string // NAME: dot path
	env     []string
	note    string    // a line of prose under the section
	write   [2]string // a file (project-relative) to write first, and its text
}

// noJSON lists the commands that print no JSON of their own with --json,
// and why. Every other command must have a step (TestJSONCovered).
var noJSON = map[string]string{
	"completion":    "prints a shell script",
	"demo":          "a narrated run for people",
	"demo workflow": "a narrated run for people",
	"hook":          "speaks each agent tool's own hook protocol on stdout",
	"mcp":           "speaks JSON-RPC (the Model Context Protocol) on stdin and stdout",
	"serve":         "serves HTTP; with --json its first line is one object (url, listen, root, person, token when not on loopback); /api/snapshot is the `ui --json` snapshot",
	"verifier":      "a daemon: with --json, one object per line per verification (event, agent, state, passed, failed) or bubbled question (event, question, to)",
	"watch":         "a stream: with --json, one journal event per line (as `log --json`)",
	"export":        "with --json prints the `ui --json` snapshot",
}

func jsonScenario() []jsonStep {
	return []jsonStep{
		{name: "version", args: []string{"--version", "--json"}, note: "`tavern --version --json`: json_schema_version is the version of every shape below."},
		{name: "error", args: []string{"show", "agents/nobody", "--json"}, code: 3, stderr: true, note: "Every error with --json: one object on stderr; path, line and col are null when the error has none. `code` is the exit code (README's table); `kind` is `error`. A warning (a problem the command goes on despite: a file that does not parse, a likely typo of a name or field) is an object of this shape on stderr too, one per line, `kind` `warning`; its `code` is the exit code its problem maps to as if it had stopped the command (2 a typo, 3 a name that names nothing, 5 a document that does not parse), and the command's own exit status says whether it failed. A note, which reports no problem (a listing answered from the engine's view an earlier command fetched, `--max-age`), has `kind` `note` and `code` 0."},
		{name: "error", args: []string{"show", "agents/broken", "--json"}, code: 5, stderr: true, write: [2]string{".tavern/agents/broken.md", "---\nname: broken\nstate: [\n---\n"}},
		{args: []string{"rm", "agents/broken", "--json"}},
		{name: "new", args: []string{"new", "agent", "alice", "role=reviewer", "--json"}, note: "A document (show, set, new, ls and others print documents in this shape): `fields` is the frontmatter, migrated to the current schema version; `tavern schema KIND` lists a kind's fields."},
		{name: "set", args: []string{"set", "agents/alice", "n=3", "--json"}},
		{name: "show", args: []string{"show", "agents/alice", "--json"}},
		{name: "ls", args: []string{"ls", "agents", "--json"}, note: "An array of documents, without `body` unless --body is given."},
		{name: "schema", args: []string{"schema", "agent", "--json"}},
		{name: "help", args: []string{"help", "token", "--json"}, note: "The help of a command (`tavern help --json`: of tavern itself), as --help prints it; default is null for a flag without a value or a default. `tavern COMMAND --help --json`, `tavern PARENT help SUB --json` and a parent run without a subcommand under --json (`tavern queue --json`) print the same document."},
		{name: "help", args: []string{"help", "serve", "--json"}},
		{name: "agent new", args: []string{"agent", "new", "bob", "--json"}},
		{args: []string{"agent", "new", "boss", "--json"}},
		{args: []string{"set", "agents/bob", "parent=boss", "--json"}},
		{name: "agent ls", args: []string{"agent", "ls", "--json"}},
		{name: "agent state", args: []string{"agent", "state", "bob", "working", "--json"}},
		{name: "agent note", args: []string{"agent", "note", "bob", "a note", "--json"}},
		{name: "agent audit", args: []string{"agent", "audit", "--json"}},
		{name: "agent reap", args: []string{"agent", "reap", "--json"}},
		{name: "constitution set", args: []string{"constitution", "set", "reviewer", "--text", "Review every change.", "--json"}},
		{name: "constitution sha", args: []string{"constitution", "sha", "reviewer", "--json"}},
		{name: "commit add", args: []string{"commit", "add", "bob", "--desc", "tests pass", "--assert", "true", "--json"}},
		{name: "commit ls", args: []string{"commit", "ls", "bob", "--json"}},
		{args: []string{"agent", "state", "bob", "verifying", "--json"}},
		{name: "verify", args: []string{"verify", "bob", "--json"}},
		{name: "agent show", args: []string{"agent", "show", "bob", "--json"}},
		{name: "ask", args: []string{"ask", "--as", "bob", "--to", "alice", "which branch?", "--json"}, capture: map[string]string{"Q": ".id"}},
		{name: "questions", args: []string{"questions", "--all", "--json"}},
		{name: "bubble", args: []string{"bubble", "--after", "0s", "--json"}},
		{name: "answer", args: []string{"answer", "$Q", "main", "--json"}},
		{name: "channel create", args: []string{"channel", "create", "general", "--json"}},
		{name: "send", args: []string{"send", "general", "hello", "--as", "alice", "--json"}},
		{name: "channel ls", args: []string{"channel", "ls", "--json"}},
		{name: "inbox", args: []string{"inbox", "--as", "bob", "--json"}},
		{name: "recv", args: []string{"recv", "general", "--as", "bob", "--json"}},
		{name: "note", args: []string{"note", "general", "decided: main", "--as", "alice", "--json"}},
		{name: "notes", args: []string{"notes", "general", "--json"}},
		{args: []string{"channel", "create", "old", "--json"}},
		{name: "channel archive", args: []string{"channel", "archive", "old", "--json"}},
		{name: "memory add", args: []string{"memory", "add", "--as", "bob", "--topic", "db", "postgres runs on 5432", "--json"}, capture: map[string]string{"MEM": ".id"}},
		{name: "memory ls", args: []string{"memory", "ls", "--as", "bob", "--json"}},
		{name: "memory search", args: []string{"memory", "search", "postgres", "--as", "bob", "--json"}},
		{name: "memory inspect", args: []string{"memory", "inspect", "$MEM", "--as", "bob", "--json"}},
		{name: "memory archive", args: []string{"memory", "archive", "$MEM", "--as", "bob", "--json"}},
		{name: "knowledge add", args: []string{"knowledge", "add", "--as", "bob", "--domain", "infra", "the build cache lives in /var/cache", "--json"}, capture: map[string]string{"KN": ".id"}},
		{name: "knowledge ls", args: []string{"knowledge", "ls", "--json"}},
		{name: "knowledge search", args: []string{"knowledge", "search", "cache", "--json"}},
		{name: "knowledge inspect", args: []string{"knowledge", "inspect", "$KN", "--json"}},
		{name: "knowledge archive", args: []string{"knowledge", "archive", "$KN", "--json"}},
		{name: "queue create", args: []string{"queue", "create", "build", "--backoff", "0s", "--json"}},
		{name: "queue add", args: []string{"queue", "add", "build", "--title", "compile", "--json"}, capture: map[string]string{"ITEM": ".id"}},
		{args: []string{"queue", "add", "build", "--title", "link", "--json"}, capture: map[string]string{"ITEM2": ".id"}},
		{args: []string{"queue", "add", "build", "--title", "ship", "--json"}, capture: map[string]string{"ITEM3": ".id"}},
		{name: "queue ls", args: []string{"queue", "ls", "--json"}},
		{name: "next", args: []string{"next", "--as", "alice", "--json"}, note: "The items take would claim, in its order; those the agent holds first, with `held: true` and `attempt`. An item whose work is done (an earlier claim ran its command and waited at a gate) adds `work_done: true`, `waits_at` (the ids of the gates that hold it) and `next_step` (what to do instead of the work), as `queue take --json` does."},
		{name: "prime", args: []string{"prime", "--as", "alice", "--json"}, note: "What `tavern prime` prints, as data: lists uncut; `for` is `agent` (the person's brief has `user`), `usage` is .tavern/PRIME.md as applied when there is one. `--hook-json` prints the SessionStart envelope of the agent tools instead."},
		{name: "prime (the person)", args: []string{"prime", "--json"}, note: "Without an agent (no --as, no $TAVERN_AGENT, no hook payload; or --as user), the person's prime: `person` (the name approve and answer record), `needs_you` (what waits on a person, as `ui --json --lens needs` lists it: key, kind, what, why, do, path, agent, text), `next` (items nobody holds), `commands`, `for` (`user`: the person's brief), `usage` (.tavern/PRIME.md as applied, when there is one); `errors` when a part could not be read; `why` when a hook got it for want of an agent."},
		{name: "setup", args: []string{"setup", "claude", "--json"}, note: "One entry per file setup wrote or left (`action`: created, updated, unchanged, removed with --remove, note)."},
		{name: "guard", args: []string{"guard", "--as", "alice", "--json"}, note: "The staged paths checked against other agents' reservations: `conflicts` (each staged path and the reservation it hits), `skipped` (reservation files that do not parse); exit 4 when there is a conflict."},
		{name: "setup --check", args: []string{"setup", "claude", "--check", "--json"}, note: "One entry per part installed (`status`: ok, outdated, missing, warning); exit 3 when a part is missing or outdated."},
		{name: "queue take", args: []string{"queue", "take", "build", "--json"}, note: "The `show --json` object of the item plus id, queue, state and attempt, and what the take saw besides claimable items, as `queue ls --json` shows them: `invalid` (item files that do not parse: error, path, line, col) and `blocked` (items whose dependency is dead or missing: id, queue, path, dep, dep_state). An item whose work is done (an earlier claim ran its command and waited at a gate) adds `work_done: true`, `waits_at` (the ids of the gates that hold it) and `next_step` (what to do instead of the work). `next --take --json` prints the same. When nothing is claimable (exit 3), the error object on stderr carries `invalid` and `blocked` too; no warning is printed as text."},
		{args: []string{"queue", "create", "idle", "--json"}},
		{name: "queue take: nothing to claim", args: []string{"queue", "take", "idle", "--json"}, code: 3, stderr: true, note: "The error object (exit 3), with what the take saw besides claimable items (as above)."},
		{name: "item renew", args: []string{"item", "renew", "$ITEM", "--json"}},
		{name: "item show", args: []string{"item", "show", "$ITEM", "--json"}},
		{name: "item release", args: []string{"item", "release", "$ITEM", "--json"}},
		{args: []string{"queue", "take", "build", "--json"}},
		{name: "item fail", args: []string{"item", "fail", "$ITEM", "--reason", "flaky", "--json"}},
		{args: []string{"queue", "take", "build", "--json"}},
		{name: "item done", args: []string{"item", "done", "$ITEM", "--result", "plan.md", "--json"}},
		{name: "trace", args: []string{"trace", "$ITEM", "--json"}},
		{name: "spawn", args: []string{"spawn", "--name", "drone-1", "--queue", "build", "--json", "--", "sh", "-c", "echo linked"}},
		{name: "agent log", args: []string{"agent", "log", "drone-1", "--json"}},
		{name: "context", args: []string{"context", "hello", "--json"}},
		{name: "pool run", args: []string{"pool", "run", "builders", "--queue", "build", "--max", "1", "--on-empty", "terminate", "--quiet", "--json", "--", "true"}},
		{name: "pool drain", args: []string{"pool", "drain", "builders", "--json"}, note: "A pool that is not running: `running` false, `state` stopped; pid and host are its last run's."},
		{args: []string{"queue", "create", "tiny", "--max-attempts", "1", "--json"}},
		{args: []string{"queue", "add", "tiny", "--json"}, capture: map[string]string{"DEAD": ".id"}},
		{args: []string{"queue", "take", "tiny", "--json"}},
		{args: []string{"item", "fail", "$DEAD", "--json"}},
		{name: "queue retry", args: []string{"queue", "retry", "tiny", "--json"}},
		{args: []string{"queue", "take", "tiny", "--json"}},
		{args: []string{"item", "fail", "$DEAD", "--json"}},
		{name: "item retry", args: []string{"item", "retry", "$DEAD", "--json"}, note: "The item moved back to pending, as `item show --json` prints it (`queue retry --json` prints an array of these)."},
		{name: "reap", args: []string{"reap", "--json"}},
		{name: "usage", args: []string{"usage", "--json"}},
		{name: "budget set", args: []string{"budget", "set", "daily", "--cost", "5", "--json"}},
		{name: "budget ls", args: []string{"budget", "ls", "--json"}},
		{args: []string{"queue", "create", "deploy", "--json"}},
		{args: []string{"queue", "add", "deploy", "--title", "ship 2.0", "--gate", "human", "--json"}, capture: map[string]string{"SHIP": ".id"}},
		{name: "gate ls", args: []string{"gate", "ls", "--json"}},
		{name: "approve", args: []string{"approve", "$SHIP", "--reason", "reviewed", "--json"}},
		{args: []string{"queue", "add", "deploy", "--title", "ship 3.0", "--json"}, capture: map[string]string{"SHIP3": ".id"}},
		{name: "gate add", args: []string{"gate", "add", "$SHIP3", "--reason", "needs sign-off", "--json"}},
		{name: "reject", args: []string{"reject", "$SHIP3", "--reason", "not yet", "--json"}},
		{name: "plan import", args: []string{"plan", "import", "plan.md", "--queue", "build", "--json"}},
		{name: "plan status", args: []string{"plan", "status", "plan", "--json"}},
		{name: "plan sync", args: []string{"plan", "sync", "--json"}},
		{name: "tuple out", args: []string{"tuple", "out", "job", "n=1", "--json"}},
		{args: []string{"tuple", "out", "job", "n=2", "--json"}},
		{name: "tuple rd", args: []string{"tuple", "rd", "job", "n=1", "--json"}},
		{name: "tuple ls", args: []string{"tuple", "ls", "job", "--json"}, note: "With a TYPE: an array of its live tuples (those matching the patterns)."},
		{name: "tuple ls (types)", args: []string{"tuple", "ls", "--json"}, note: "Without a TYPE: an array of the types, each with how many live tuples it has (`[]` when there are none)."},
		{name: "tuple in", args: []string{"tuple", "in", "job", "n=1", "--json"}},
		{name: "tuple gc", args: []string{"tuple", "gc", "--json"}},
		{name: "token init", args: []string{"token", "init", "gpu", "--count", "2", "--json"}},
		{name: "token acquire", args: []string{"token", "acquire", "gpu", "--ttl", "1m", "--json"}, capture: map[string]string{"HANDLE": ".handle"}},
		{name: "token ls", args: []string{"token", "ls", "--json"}, note: "A slot held on another machine (coordination etcd or git: known from the engine only) has `machine` (string) and `held_by`, and no `id`, `epoch` or `path`, which only that machine knows."},
		{name: "token release", args: []string{"token", "release", "gpu", "$HANDLE", "--json"}},
		{name: "reserve", args: []string{"reserve", "src/*", "--as", "alice", "--reason", "refactor", "--json"}},
		{name: "reservations", args: []string{"reservations", "--json"}, note: "A reservation made on another machine whose file has not synced here (coordination etcd or git: known from the engine only) has `machine` (string), and no `id`, `created` or `path`, which only that machine has."},
		{name: "unreserve", args: []string{"unreserve", "--as", "alice", "--json"}},
		{args: []string{"memory", "add", "--as", "alice", "--core", "--topic", "style", "short functions", "--json"}},
		{args: []string{"ask", "--as", "bob", "--to", "alice", "and the tag?", "--json"}},
		// Unread for alice (her own "hello" is not: wake's unread shape).
		{args: []string{"send", "general", "tag it v2", "--as", "bob", "--json"}},
		{name: "wake", args: []string{"wake", "--as", "alice", "--json"}},
		{name: "sleep", args: []string{"sleep", "--as", "alice", "--summary", "done for today", "--json"}},
		{name: "log", args: []string{"log", "--type", "agent.state", "--json"}, note: "JSON lines, not an array: one journal event per line (as `watch --json`), so that --follow can stream; nothing at all when no event matches. With --machines, the events of other machines follow, each with a `from_machine` key first."},
		{name: "sync", args: []string{"sync", "--json"}, env: []string{"TAVERN_SYNC_REMOTE=."}, note: "One round of `tavern sync` (here to the project's own repository, on refs/tavern/state): `applied` lists the changes of other machines written here ({path, op, machine}), `conflicts` the values a merge dropped ({path, field, kept, lost, kept_machine, lost_machine, rule}), `deferred` the paths changed here during the round, `offline` why the remote could not be pushed to. `--every` prints one such object per round; `--clone` prints {dir, remote, machine}."},
		{name: "daemon start", args: []string{"daemon", "start", "--json"}},
		{name: "daemon status", args: []string{"daemon", "status", "--json"}},
		{name: "daemon stop", args: []string{"daemon", "stop", "--json"}},
		{name: "check", args: []string{"check", "--json"}},
		{name: "doctor", args: []string{"doctor", "--json"}},
		{args: []string{"show", "agents/old", "--json"}, write: [2]string{".tavern/agents/old.md", "---\nname: old\nstatus: idle\n---\n"}},
		{name: "migrate", args: []string{"migrate", "--dry-run", "--json"}, code: 5, write: [2]string{".tavern/agents/broken.md", "---\nname: broken\nstate: [\n---\n"},
			note: "One element per document of an older schema version and per file that could not be read: `diff` is the unified diff (\"\" for a file skipped), `written` whether the document was written (never with --dry-run), `skipped` whether the file could not be read (it does not parse, or is not a regular file in the store), `error`, `line` and `col` why it is not migrated (null when it is). Each problem is also an error object on stderr."},
		{name: "migrate", args: []string{"migrate", "--json"}, write: [2]string{".tavern/agents/broken.md", "---\nname: broken\nschema_version: 1\n---\n"}},
		{name: "rm", args: []string{"rm", "agents/boss", "--json"}},
		{name: "trash ls", args: []string{"trash", "ls", "--json"}, capture: map[string]string{"TRASHED": ".0.name"}},
		{name: "trash restore", args: []string{"trash", "restore", "$TRASHED", "--json"}},
		{name: "edit", args: []string{"edit", "agents/alice", "--json"}, env: []string{"EDITOR=sed -i s/role:.reviewer/role:\\ critic/"}},
		{name: "backup", args: []string{"backup", "--json"}, capture: map[string]string{"BACKUP": ".dir"},
			note: "`skipped` lists what was not copied, each {path, reason}: symlinks (never followed) and special files (`[]` when none)."},
		{name: "restore", args: []string{"restore", "$BACKUP", "--force", "--json"}, note: "`skipped` as for backup: what the backup held that is not a regular file or directory."},
		{name: "workspace ls", args: []string{"workspace", "ls", "--json"}},
		{name: "workspace prune", args: []string{"workspace", "prune", "--json"}},
		{name: "ui", args: []string{"ui", "--json", "--lens", "needs"}, note: "`ui --json` without --lens prints the whole snapshot (every lens as a key, as `export --json` and serve's /api/snapshot)."},
		{name: "init", args: []string{"init", "--dir", "other/.tavern", "--nested", "--json"}},
	}
}

// jsonShape is the shape of a JSON value: its keys and the types of
// their values, arrays by the union of their elements.
func jsonShape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = jsonShape(x)
		}
		return out
	case []any:
		if len(v) == 0 {
			return []any{}
		}
		var merged any
		for _, x := range v {
			merged = mergeShapes(merged, jsonShape(x))
		}
		return []any{merged}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// mergeShapes is the union of two shapes: the keys of both objects,
// "a|b" for different types.
func mergeShapes(a, b any) any {
	if a == nil {
		return b
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		out := map[string]any{}
		for k, v := range am {
			out[k] = v
		}
		for k, v := range bm {
			out[k] = mergeShapes(out[k], v)
		}
		return out
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		switch {
		case len(as) == 0:
			return bs
		case len(bs) == 0:
			return as
		}
		return []any{mergeShapes(as[0], bs[0])}
	}
	sa, sb := shapeText(a), shapeText(b)
	if sa == sb {
		return a
	}
	types := strings.Split(sa, "|")
	for _, t := range strings.Split(sb, "|") {
		if !contains(types, t) {
			types = append(types, t)
		}
	}
	sort.Strings(types)
	return strings.Join(types, "|")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func shapeText(v any) string {
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// TestJSONContract runs the scenario and compares the shapes with
// docs/json.md.
func TestJSONContract(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", p.dir}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git %s: %v %s", args[0], err, out) // workspace needs a repository
		}
	}
	if err := os.WriteFile(filepath.Join(p.dir, "plan.md"), []byte("# Plan\n\n- [ ] write the parser\n- [x] pick a name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	var b strings.Builder
	fmt.Fprintf(&b, "# JSON output of tavern\n\nGenerated by `make docs` from a scenario that runs each command with `--json`\n"+
		"(cmd/tavern/json_contract_test.go, TestJSONContract, which fails when a shape changes).\n\n"+
		"schema_version: %d (`tavern --version --json` prints it as json_schema_version).\n\n"+
		"Rules: every command takes `--json`, before or after its name, with the same meaning. Within a\n"+
		"schema version keys are only added, never removed, renamed or given another type; consumers ignore\n"+
		"keys they do not know. A list is always an array (`[]` when empty), never null; a stream (`log`,\n"+
		"`watch`) is JSON lines, one object per line and nothing when empty. Times are RFC 3339\n"+
		"UTC strings of one width, with milliseconds (2006-01-02T15:04:05.000Z), so they sort as\n"+
		"strings; durations are Go durations (\"1m30s\") unless the key ends in _seconds. Each shape below\n"+
		"names the type of every value (string, number, boolean, null; \"a|b\" when it varies); an array shows\n"+
		"the union of its elements. `fields` of a document is its frontmatter: its keys depend on the kind\n"+
		"(`tavern schema KIND`); the ones shown are those of the scenario.\n\n", jsonSchemaVersion)
	fmt.Fprintf(&b, "Commands that print no JSON document of their own:\n\n")
	var names []string
	for n := range noJSON {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "- `tavern %s`: %s\n", n, noJSON[n])
	}
	varRef := regexp.MustCompile(`\$[A-Z0-9]+`)
	type section struct {
		st    jsonStep
		shape any
		lines bool
	}
	var order []string
	sections := map[string]*section{}
	for _, st := range jsonScenario() {
		if st.write[0] != "" {
			if err := os.WriteFile(filepath.Join(p.dir, filepath.FromSlash(st.write[0])), []byte(st.write[1]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		args := make([]string, len(st.args))
		for i, a := range st.args {
			args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
				v, ok := vars[ref[1:]]
				if !ok {
					t.Fatalf("%s: %s not captured", strings.Join(st.args, " "), ref)
				}
				return v
			})
		}
		// --json moves before the command name: the scenario checks that
		// the global flag means what the command's own does (the scripts
		// give it after the name).
		if i := slices.Index(args, "--json"); i >= 0 && (slices.Index(args, "--") < 0 || i < slices.Index(args, "--")) {
			args = append([]string{"--json"}, slices.Delete(args, i, i+1)...)
		}
		p.env = st.env
		r := p.run(args...)
		if r.code != st.code {
			t.Fatalf("tavern %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, st.code, r)
		}
		out := r.out
		if st.stderr {
			out = r.err
		}
		var docs []any
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("tavern %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
			}
			docs = append(docs, v)
		}
		if len(docs) == 0 {
			t.Fatalf("tavern %s: no JSON\n%s", strings.Join(args, " "), r)
		}
		for _, d := range docs {
			for _, bad := range badTimes(d, "") {
				t.Errorf("tavern %s: %s", strings.Join(args, " "), bad)
			}
		}
		for name, path := range st.capture {
			v, err := jsonPath(docs[0], path)
			if err != nil {
				t.Fatalf("tavern %s: capture %s: %v", strings.Join(args, " "), path, err)
			}
			vars[name] = fmt.Sprint(v)
		}
		if st.name == "" {
			continue
		}
		sec := sections[st.name]
		if sec == nil {
			sec = &section{st: st}
			sections[st.name] = sec
			order = append(order, st.name)
		}
		for _, d := range docs {
			sec.shape = mergeShapes(sec.shape, jsonShape(d))
		}
		sec.lines = sec.lines || len(docs) > 1
	}
	for _, name := range order {
		sec := sections[name]
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		if sec.st.note != "" {
			b.WriteString(sec.st.note + "\n\n")
		}
		lines := ""
		if sec.lines {
			lines = " (one object per line)"
		}
		shown, _ := json.MarshalIndent(sec.shape, "", "  ")
		fmt.Fprintf(&b, "`tavern %s`%s\n\n```json\n%s\n```\n", strings.Join(redactArgs(sec.st.args), " "), lines, shown)
	}
	path := filepath.Join("docs", "json.md")
	if got, err := os.ReadFile(path); err == nil && !*update && string(got) != b.String() {
		t.Errorf("a JSON shape changed (a key removed, renamed or retyped is a new jsonSchemaVersion; an added key is fine): run make docs\n%s",
			unifiedDiff(path, got, []byte(b.String())))
		return
	}
	checkGenerated(t, path, []byte(b.String()))
}

var (
	// timeLike is a string value that is a time: a date and an hour.
	timeLike = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d`)
	// timeFixed is the one format of a time in JSON (schema.FormatTime):
	// fixed width, so that times sort as strings.
	timeFixed = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
)

// badTimes lists the time values in v (at dot paths under at) that are
// not in the fixed format.
func badTimes(v any, at string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out = append(out, badTimes(e, at+"."+k)...)
		}
	case []any:
		for i, e := range x {
			out = append(out, badTimes(e, fmt.Sprintf("%s.%d", at, i))...)
		}
	case string:
		if timeLike.MatchString(x) && !timeFixed.MatchString(x) {
			out = append(out, fmt.Sprintf("%s is %q, want a time as 2006-01-02T15:04:05.000Z", at, x))
		}
	}
	sort.Strings(out)
	return out
}

// redactArgs shows captured references by their names.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " ") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

// TestJSONCovered: every command that runs has a step in the JSON
// scenario, or says in noJSON why it prints no JSON of its own.
func TestJSONCovered(t *testing.T) {
	have := map[string]bool{}
	for _, st := range jsonScenario() {
		if st.name != "" {
			have[st.name] = true
		}
	}
	leafCommands(docsApp().Commands, "", func(path string, c *cli.Command) {
		if runs(c) && !have[path] && noJSON[path] == "" {
			t.Errorf("tavern %s: no step in the JSON scenario (json_contract_test.go) and not in noJSON", path)
		}
	})
}
