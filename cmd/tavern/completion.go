package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newCompletionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes tavern's commands, flags, document kinds and
the names in the store of the working directory: documents (kind/name),
agents, queues, channels, item ids, roles and tuple types. The script asks
the binary (tavern __complete), so it always matches the version you run.

Examples (install):
   bash   echo 'source <(tavern completion bash)' >> ~/.bashrc
   zsh    tavern completion zsh > "${fpath[1]}/_tavern"    (then compinit)
   fish   tavern completion fish > ~/.config/fish/completions/tavern.fish`,
		Action: runCompletion,
	}
}

// The scripts hand the words up to the cursor to `tavern __complete` and
// offer what it prints, one candidate per line; with none, files. A
// finished word takes the shell's space after it; one that goes on (a
// directory agents/, a field=) takes none, so agents/alice follows.
var completionScripts = map[string]string{
	"bash": `# bash completion for tavern (tavern completion bash)
_tavern() {
	local IFS=$'\n'
	local cur=${COMP_WORDS[COMP_CWORD]}
	COMPREPLY=($(tavern __complete -- "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null))
	# A word that goes on (agents/, field=) takes no space after it.
	if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *[/=] ]]; then
		compopt -o nospace 2>/dev/null
	fi
}
complete -o default -F _tavern tavern
`,
	"zsh": `#compdef tavern
# zsh completion for tavern (tavern completion zsh)
_tavern() {
	local -a cands
	cands=("${(@f)$(tavern __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	cands=(${cands:#})
	if (( ${#cands} )); then
		# A word that goes on (agents/, field=) takes no space after it.
		local -a more
		local ret=1
		more=(${(M)cands:#*[/=]})
		cands=(${cands:#*[/=]})
		if (( ${#cands} )); then
			compadd -- "${cands[@]}" && ret=0
		fi
		if (( ${#more} )); then
			compadd -S '' -- "${more[@]}" && ret=0
		fi
		return $ret
	else
		_files
	fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_tavern "$@"
else
	compdef _tavern tavern
fi
`,
	"fish": `# fish completion for tavern (tavern completion fish)
function __tavern_complete
	set -l words (commandline -opc)
	tavern __complete -- $words[2..-1] (commandline -ct) 2>/dev/null
end
complete -c tavern -f -a '(__tavern_complete)'
`,
}

func runCompletion(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("completion takes one SHELL: bash, zsh or fish")
	}
	script, ok := completionScripts[c.Args().First()]
	if !ok {
		if near := schema.Near(c.Args().First(), []string{"bash", "zsh", "fish"}); len(near) > 0 {
			return usageErr("completion: unknown shell %q (did you mean %q? bash, zsh or fish)", c.Args().First(), near[0])
		}
		return usageErr("completion: unknown shell %q (bash, zsh or fish)", c.Args().First())
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"shell": c.Args().First(), "script": script})
	}
	outf(c, "%s", script)
	return nil
}

func newCompleteCommand() *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		Usage:           "print completion candidates for the words after --",
		SkipFlagParsing: true,
		Action:          runComplete,
	}
}

// runComplete prints the candidates for the last word, given the words
// before it (`tavern __complete -- queue ta` prints take). Errors are
// silent: completion offers nothing rather than noise.
func runComplete(c *cli.Context) error {
	words := c.Args().Slice()
	if len(words) > 0 && words[0] == "--" {
		words = words[1:]
	}
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	completeDir = dirWord(words)
	for _, cand := range completions(c, words, cur) {
		if strings.HasPrefix(cand, cur) {
			outf(c, "%s\n", cand)
		}
	}
	return nil
}

// completions lists what may come after words (the current word is
// cur): subcommands, flags, a flag's value or a positional argument.
func completions(c *cli.Context, words []string, cur string) []string {
	cmds := c.App.Commands
	flags := c.App.Flags
	var cmd *cli.Command
	var pos []string // positional arguments so far
	expectValue := ""
	for _, w := range words {
		switch {
		case expectValue != "":
			expectValue = ""
		case w == "--":
			pos = append(pos, w)
		case strings.HasPrefix(w, "-"):
			if takesValue(flags, w) && !strings.Contains(w, "=") {
				expectValue = strings.TrimLeft(w, "-")
			}
		case cmd == nil || len(cmd.Subcommands) > 0 && len(pos) == 0:
			var next *cli.Command
			for _, sc := range cmds {
				if sc.HasName(w) {
					next = sc
				}
			}
			if next == nil {
				pos = append(pos, w)
				continue
			}
			cmd, cmds, flags = next, next.Subcommands, append(next.Flags, dirFlag(), jsonFlag())
		default:
			pos = append(pos, w)
		}
	}
	if expectValue != "" {
		return flagValues(c, expectValue)
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for _, f := range flags {
			if bf, ok := f.(interface{ IsVisible() bool }); ok && !bf.IsVisible() {
				continue
			}
			for _, n := range f.Names() {
				if len(n) > 1 {
					out = append(out, "--"+n)
				}
			}
		}
		return dedupe(out)
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		var out []string
		for _, sc := range cmds {
			if !sc.Hidden {
				out = append(out, sc.Name)
			}
		}
		return out
	}
	if slices.Contains(pos, "--") {
		return nil // a command line for spawn or pool run: files
	}
	return argValues(c, cmd, len(pos), cur)
}

// flagValues completes the value of a flag by what it names.
func flagValues(c *cli.Context, flag string) []string {
	switch flag {
	case "as", "to", "parent":
		return storeNames(c, "agents")
	case "queue":
		return storeNames(c, "queues")
	case "kind":
		return kindNames()
	case "role":
		return storeNames(c, "constitutions")
	case "on-empty":
		return schema.EmptyModes
	}
	return nil
}

// argValues completes the i-th positional argument of cmd from the word
// its ArgsUsage gives it (KIND, REF, Q, CHANNEL, AGENT, ID...).
func argValues(c *cli.Context, cmd *cli.Command, i int, cur string) []string {
	fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ", "...", " ").Replace(cmd.ArgsUsage))
	if i >= len(fields) {
		if len(fields) == 0 || !strings.Contains(cmd.ArgsUsage, "...") {
			return nil
		}
		i = len(fields) - 1 // a repeated last argument
	}
	word := fields[i]
	switch {
	case cmd.Name == "completion":
		return []string{"bash", "fish", "zsh"}
	case word == "KIND":
		return kindNames()
	case word == "NAME|PATH":
		return trashNames()
	case strings.HasPrefix(word, "REF"):
		return refs(c, cur)
	case strings.HasPrefix(word, "Q"):
		return queueList(c, cur)
	case word == "NAME" && parentIs(c, cmd, "channel"):
		return storeNames(c, "channels")
	case word == "NAME" && parentIs(c, cmd, "token"):
		return tokenNames()
	case word == "NAME" && parentIs(c, cmd, "plan"):
		return storeNames(c, "plans")
	case word == "NAME" && parentIs(c, cmd, "budget"):
		return storeNames(c, "budgets")
	case word == "NAME" && parentIs(c, cmd, "pool"):
		return storeNames(c, "pools")
	case word == "ID" && cmd.Name == "answer":
		return storeNames(c, "questions")
	case word == "ID" && (cmd.Name == "approve" || cmd.Name == "reject"):
		return storeNames(c, "gates")
	case word == "ITEM":
		return itemNames(c)
	case word == "CHANNEL":
		return channelNames(c)
	case word == "AGENT", word == "NAME" && parentIs(c, cmd, "agent"):
		return storeNames(c, "agents")
	case word == "ROLE":
		return storeNames(c, "constitutions")
	case word == "TYPE":
		return storeNames(c, "tuples")
	case word == "ID" && parentIs(c, cmd, "item"):
		return itemNames(c)
	case word == "COMMAND":
		var out []string
		for _, sc := range c.App.Commands {
			if !sc.Hidden {
				out = append(out, sc.Name)
			}
		}
		return out
	}
	return nil
}

// parentIs reports whether cmd is a subcommand of the top-level command
// named parent.
func parentIs(c *cli.Context, cmd *cli.Command, parent string) bool {
	for _, top := range c.App.Commands {
		if top.Name == parent && slices.Contains(top.Subcommands, cmd) {
			return true
		}
	}
	return false
}

func kindNames() []string {
	var out []string
	for _, k := range schema.Kinds() {
		out = append(out, k.Plural)
	}
	return dedupe(out)
}

// completeDir is the --dir of the command line being completed, if any.
var completeDir string

// dirWord is the value of the last --dir among words (--dir D or --dir=D).
func dirWord(words []string) string {
	dir := ""
	for i, w := range words {
		if v, ok := strings.CutPrefix(w, "--dir="); ok {
			dir = v
		} else if w == "--dir" && i+1 < len(words) {
			dir = words[i+1]
		}
	}
	return dir
}

// completionStore opens the store the command line names (--dir), else
// that of the working directory (or $TAVERN_DIR), for reading names, or
// nil.
func completionStore() *docstore.Store {
	dir := os.Getenv("TAVERN_DIR")
	if completeDir != "" {
		dir = completeDir
	}
	if dir != "" {
		d, err := namedStoreDir(dir)
		if err != nil {
			return nil
		}
		dir = d
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return nil
		}
		if dir, err = docstore.Find(wd); err != nil {
			return nil
		}
	}
	s, err := docstore.Open(dir)
	if err != nil {
		return nil
	}
	return s
}

// storeNames lists the names in a directory of the store: files without
// .md, directories as they are.
func storeNames(c *cli.Context, dir string) []string {
	s := completionStore()
	if s == nil {
		return nil
	}
	names, _ := s.Names(dir)
	var out []string
	for _, n := range names {
		out = append(out, strings.TrimSuffix(n, ".md"))
	}
	return out
}

func channelNames(c *cli.Context) []string {
	out := storeNames(c, "channels") // a message directory alone is no channel
	for _, a := range storeNames(c, "agents") {
		out = append(out, "@"+a)
	}
	return dedupe(out)
}

// queueList completes a queue, or the next of a comma-separated list
// (build,docs) with the queues not in it yet.
func queueList(c *cli.Context, cur string) []string {
	i := strings.LastIndex(cur, ",")
	if i < 0 {
		return storeNames(c, "queues")
	}
	prefix := cur[:i+1]
	given := strings.Split(cur[:i], ",")
	var out []string
	for _, q := range storeNames(c, "queues") {
		if !slices.Contains(given, q) {
			out = append(out, prefix+q)
		}
	}
	return out
}

// tokenNames lists the tokens that have a slot.
func tokenNames() []string {
	s := completionStore()
	if s == nil {
		return nil
	}
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{})
	if err != nil {
		return nil
	}
	slots, _ := sp.Slots("")
	var out []string
	for _, sl := range slots {
		out = append(out, sl.Name)
	}
	return dedupe(out)
}

// trashNames lists the trash's entries by name and by the path each had,
// as trash restore takes them.
func trashNames() []string {
	s := completionStore()
	if s == nil {
		return nil
	}
	entries, _ := s.Trash()
	var out []string
	for _, e := range entries {
		out = append(out, e.Name)
		if e.Path != "" {
			out = append(out, e.Path)
		}
	}
	return dedupe(out)
}

// itemNames lists QUEUE/ID of every item.
func itemNames(c *cli.Context) []string {
	s := completionStore()
	if s == nil {
		return nil
	}
	var out []string
	for _, q := range storeNames(c, "queues") {
		for _, st := range schema.ItemStates {
			ids, _ := s.Names(filepath.ToSlash(filepath.Join("queues", q, st)))
			for _, id := range ids {
				if n, ok := strings.CutSuffix(id, ".md"); ok {
					out = append(out, q+"/"+n)
				}
			}
		}
	}
	return out
}

// refs completes a document reference: kinds ("agents/") until a kind is
// typed, then that kind's document names.
func refs(c *cli.Context, cur string) []string {
	kind, _, ok := strings.Cut(cur, "/")
	if !ok {
		var out []string
		for _, k := range kindNames() {
			out = append(out, k+"/")
		}
		return out
	}
	k, err := schema.Lookup(kind)
	if err != nil {
		return nil
	}
	s := completionStore()
	if s == nil {
		return nil
	}
	files, _ := s.ListFiles(k)
	var out []string
	for _, f := range files {
		_, caps, err := schema.KindOfPath(f)
		if err != nil {
			continue
		}
		out = append(out, kind+"/"+refName(k, caps))
	}
	return out
}

// refName is the name part of a reference from a path's captures, in
// the order of the kind's pattern (item: QUEUE/ID, without the state).
func refName(k *schema.Kind, caps map[string]string) string {
	var parts []string
	for _, seg := range strings.Split(strings.TrimSuffix(k.Pattern, ".md"), "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if strings.Contains(name, ":") {
				continue // a state directory, not part of the name
			}
			parts = append(parts, caps[name])
		}
	}
	return strings.Join(parts, "/")
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
