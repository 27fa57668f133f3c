package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// commands is every top-level command, one file each (command_name.go
// holds newNameCommand and its runName functions). Help lists them in
// this order.
func commands() []*cli.Command {
	return []*cli.Command{
		newAgentCommand(),
		newAnswerCommand(),
		newApproveCommand(),
		newAskCommand(),
		newBackupCommand(),
		newBubbleCommand(),
		newBudgetCommand(),
		newChannelCommand(),
		newCheckCommand(),
		newCommitCommand(),
		newCompletionCommand(),
		newCompleteCommand(),
		newConstitutionCommand(),
		newContextCommand(),
		newDaemonCommand(),
		newDemoCommand(),
		newDoctorCommand(),
		newEditCommand(),
		newExportCommand(),
		newGateCommand(),
		newGuardCommand(),
		newHelpCommand(),
		newHookCommand(),
		newInboxCommand(),
		newInitCommand(),
		newItemCommand(),
		newKnowledgeCommand(),
		newLogCommand(),
		newLsCommand(),
		newMCPCommand(),
		newMemoryCommand(),
		newMigrateCommand(),
		newNewCommand(),
		newNextCommand(),
		newNoteCommand(),
		newNotesCommand(),
		newPlanCommand(),
		newPoolCommand(),
		newPrimeCommand(),
		newQuestionsCommand(),
		newQueueCommand(),
		newReapCommand(),
		newRecvCommand(),
		newRejectCommand(),
		newReservationsCommand(),
		newReserveCommand(),
		newRestoreCommand(),
		newRmCommand(),
		newSchemaCommand(),
		newSendCommand(),
		newServeCommand(),
		newSetCommand(),
		newSetupCommand(),
		newShowCommand(),
		newSleepCommand(),
		newSpawnCommand(),
		newSyncCommand(),
		newTokenCommand(),
		newTraceCommand(),
		newTrashCommand(),
		newTupleCommand(),
		newUICommand(),
		newUnreserveCommand(),
		newUsageCommand(),
		newVerifierCommand(),
		newVerifyCommand(),
		newWakeCommand(),
		newWatchCommand(),
		newWorkspaceCommand(),
	}
}

// run is the whole program but for exiting: it parses args and runs one
// command. main reports the error and maps it to the exit code (exit.go).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// A watch that cannot use inotify polls and says so (the journal
	// records it too): pools, the verifier, watch, blocking waits.
	watcher.SetDegradeHandler(func(err error) { fmt.Fprintf(stderr, "tavern: warning: %v\n", err) })
	app := newApp(stdin, stdout, stderr)
	if h, ok := helpJSONArgs(app, args); ok {
		return app.RunContext(ctx, h)
	}
	return app.RunContext(ctx, reorderArgs(app, args))
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	cmds := commands()
	for _, c := range cmds {
		prepare(c)
		if c.Name == "hook" {
			hookFailsOpen(c)
		}
		if c.Name == "prime" {
			primeFailsSoft(c)
		}
	}
	return &cli.App{
		Name:  "tavern",
		Usage: "coordinate agents through a directory of markdown documents",
		Description: "Tavern keeps agents, queues, work items, commitments and messages as markdown\n" +
			"files with YAML frontmatter under .tavern/. Edit them by hand, grep them,\n" +
			"diff them; use these commands to create, query, claim and supervise.\n\n" +
			"Exit codes: 0 ok, 1 error, 2 usage, 3 not found / nothing matched / timed out,\n" +
			"4 conflict (stale revision, lost claim, illegal transition), 5 invalid documents.",
		Commands: cmds,
		// cli.HelpFlag by hand: urfave/cli adds it only when no command
		// is called help, and ours is.
		Flags:           []cli.Flag{dirFlag(), jsonFlag(), &cli.BoolFlag{Name: "version", Usage: "print the version (module version and VCS revision) and exit"}, cli.HelpFlag},
		Version:         readVersion().Version,
		HideVersion:     true, // --version is ours: one line, or JSON with --json
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // exit codes are ours (exit.go)
		OnUsageError:    onUsageError,
		Action:          rootAction,
	}
}

// prepare gives every command what all of them take: --dir (so it may
// follow the command name), --json (one meaning everywhere: `tavern
// --json CMD` is `tavern CMD --json`), flag errors as usage errors, and,
// for a command with subcommands, an unknown subcommand as a usage error.
func prepare(c *cli.Command) {
	for _, s := range c.Subcommands {
		prepare(s)
	}
	if !hasFlag(c, "dir") {
		c.Flags = append(c.Flags, dirFlag())
	}
	// A parent takes --json too, as it takes --dir: tavern queue --json ls
	// (its subcommands inherit it, as from before the command name).
	if !hasFlag(c, "json") {
		c.Flags = append(c.Flags, jsonFlag())
	}
	if len(c.Subcommands) == 0 || c.Action != nil {
		c.Before = inheritJSON(c.Before)
		if n := maxArgs(c.ArgsUsage); n >= 0 && !c.Hidden {
			c.Before = checkArity(n, c.Before)
		}
	}
	c.OnUsageError = onUsageError
	if len(c.Subcommands) == 0 {
		// urfave/cli adds a help subcommand (alias h) to every command: a
		// leaf's first argument h or help (a valid name) printed help.
		c.HideHelpCommand = true
	}
	if len(c.Subcommands) > 0 && c.Action == nil {
		c.Action = parentAction
	}
}

// runs reports whether a (prepared) command does something itself: a
// leaf, or a command with subcommands and an action of its own (demo),
// not a parent that only dispatches (queue).
func runs(c *cli.Command) bool {
	return len(c.Subcommands) == 0 || reflect.ValueOf(c.Action).Pointer() != reflect.ValueOf(parentAction).Pointer()
}

// inheritJSON runs before a command: a --json given before the command
// name (`tavern --json ls agents`) sets the command's own --json, which
// urfave/cli would otherwise read as unset (it reads a flag from the
// innermost context that defines it).
func inheritJSON(next cli.BeforeFunc) cli.BeforeFunc {
	return func(c *cli.Context) error {
		if !c.IsSet("json") {
			for _, anc := range c.Lineage()[1:] {
				if anc.Command != nil && anc.IsSet("json") && anc.Bool("json") {
					if err := c.Set("json", "true"); err != nil {
						return err
					}
					break
				}
			}
		}
		if c.Bool("json") {
			// Under --json a polling watch says so as a JSON object too.
			watcher.SetDegradeHandler(func(err error) { warnf(c, nil, "%w", err) })
		}
		if next != nil {
			return next(c)
		}
		return nil
	}
}

// maxArgs is the most arguments a command's ArgsUsage allows, or -1 for
// no limit: "NAME" 1, "[DIR]" 1, "ID ANSWER..." and "-- CMD [ARGS...]"
// none; "Q[,Q2...]" is one argument (a list in one word), "--at TIME"
// a flag, "A | B" alternatives.
func maxArgs(usage string) int {
	most := 0
	for _, alt := range strings.Split(usage, " | ") {
		n := 0
		words := strings.Fields(alt)
		for i := 0; i < len(words); i++ {
			w := strings.Trim(words[i], "[]")
			switch {
			case w == "--":
				return -1
			case strings.HasPrefix(w, "-"):
				i++ // a flag and its value
			case strings.Contains(w, "...") && !strings.Contains(w, "[,"):
				return -1
			case w != "":
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// checkArity is a Before hook: more arguments than the command takes is
// a usage error, not silently ignored (`tavern agent ls extra`).
func checkArity(n int, next cli.BeforeFunc) cli.BeforeFunc {
	return func(c *cli.Context) error {
		if got := c.NArg(); got > n && c.Command.Command(c.Args().First()) == nil { // not a subcommand (demo workflow)
			name := commandPath(c)
			switch n {
			case 0:
				return usageErr("%s takes no arguments (got %q)", name, c.Args().Slice())
			case 1:
				if got == 2 && hasFlag(c.Command, "title") {
					// The title as an argument, as gh issue create takes it.
					return usageErr("%s takes at most 1 argument, %s (got %d); a title is --title %q", name, c.Command.ArgsUsage, got, c.Args().Get(1))
				}
				return usageErr("%s takes at most 1 argument, %s (got %d)", name, c.Command.ArgsUsage, got)
			}
			return usageErr("%s takes at most %d arguments, %s (got %d)", name, n, c.Command.ArgsUsage, got)
		}
		if next != nil {
			return next(c)
		}
		return nil
	}
}

// commandPath is the running command's full name ("queue take").
func commandPath(c *cli.Context) string {
	var names []string
	for _, anc := range c.Lineage() {
		if anc.Command != nil && anc.Command.Name != "" && anc.Command.Name != anc.App.Name {
			names = append([]string{anc.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

func hasFlag(c *cli.Command, name string) bool {
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// onUsageError makes urfave/cli's flag parsing errors usage errors. An
// unknown flag is named as the flags are documented (--name, where Go's
// flag package says -name; a single letter stays -n) with the command's nearest flag, if any, as a
// suggestion: a mistyped --queue should say so, not only that -qeueu is
// not defined.
func onUsageError(c *cli.Context, err error, _ bool) error {
	const undefined = "flag provided but not defined: -"
	if m := badFlagValue.FindStringSubmatch(err.Error()); m != nil && c != nil {
		var flags []cli.Flag
		if c.App != nil {
			flags = c.App.Flags // before the command: tavern --json=x
		}
		if c.Command != nil {
			flags = c.Command.Flags
		}
		return usageErr("invalid value %q for --%s: want %s", m[1], m[2], flagWants(flags, m[2]))
	}
	name, ok := strings.CutPrefix(err.Error(), undefined)
	if !ok || c == nil || c.Command == nil {
		return usageErr("%v", err)
	}
	var names []string
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if len(n) > 1 {
				names = append(names, n)
			}
		}
	}
	msg := undefined + name // a letter: -n
	if len(name) > 1 {
		msg = undefined + "-" + name
	}
	if alt, ok := flagHabits[name]; ok && hasFlag(c.Command, alt) {
		return usageErr("%s (did you mean --%s?)", msg, alt)
	}
	if near := schema.Near(name, names); len(near) > 0 {
		return usageErr("%s (did you mean --%s?)", msg, near[0])
	}
	return usageErr("%s", msg)
}

// badFlagValue is Go's flag package's error for a value of the wrong
// type: `invalid value "x" for flag -limit: parse error`.
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): `)

// flagWants says what form the flag name of flags takes.
func flagWants(flags []cli.Flag, name string) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
			return "a whole number"
		case *cli.Float64Flag:
			return "a number"
		case *cli.DurationFlag:
			return "a duration such as 30s, 5m or 2h"
		case *cli.BoolFlag:
			return "true or false"
		}
	}
	return "a value of its type (see --help)"
}

// flagHabits are the flags other tools give what a tavern flag does
// (kubectl's -o json and -l SELECTOR, head's -n): spelling suggests
// nothing for them.
var flagHabits = map[string]string{
	"o": "json", "output": "json",
	"l": "where", "selector": "where",
	"n": "limit",
}

// rootAction runs when the first argument names no command: without
// arguments it shows the help.
func rootAction(c *cli.Context) error {
	if c.Bool("version") {
		return printVersion(c)
	}
	if c.NArg() == 0 {
		if c.Bool("json") {
			return printJSON(c, helpJSON(c.App, nil, nil))
		}
		return cli.ShowAppHelp(c)
	}
	if c.Args().First() == "version" { // as gh, kubectl and go have it
		return usageErr("unknown command %q; did you mean %q?", "version", "tavern --version")
	}
	return unknownCommand(c.Args().First(), "", c.App.Commands)
}

// parentAction is the action of every command with subcommands: urfave/cli
// runs it when the first argument names none of them.
func parentAction(c *cli.Context) error {
	if c.NArg() == 0 {
		if jsonWanted(c) { // its help, as help --json prints it
			return printJSON(c, helpJSON(c.App, strings.Fields(commandPath(c)), c.Command))
		}
		return cli.ShowSubcommandHelp(c)
	}
	return unknownCommand(c.Args().First(), commandPath(c), c.Command.Subcommands)
}

// jsonWanted reports whether --json was given to the running command or
// before it (`tavern --json queue`): a parent, which has no inheritJSON,
// reads its own --json only.
func jsonWanted(c *cli.Context) bool {
	for _, anc := range c.Lineage() {
		if anc.Command != nil && anc.IsSet("json") {
			return anc.Bool("json")
		}
	}
	return c.Bool("json")
}

// habits are the names other tools give a command (git, kubectl, gh):
// spelling suggests nothing for them, or worse (get: set, cat: gate).
var habits = map[string]string{
	"delete": "rm", "remove": "rm",
	"cat": "show", "get": "show", "describe": "show",
	"list": "ls", "create": "new",
}

// unknownCommand is the usage error for name, with the command another
// tool's name stands for (habits), else the nearest command name (at
// most two edits away), as a suggestion. parent is the group name was
// looked for in ("queue"; "" for tavern's own commands), so that
// `tavern queue nosuch` says it is no command of tavern queue.
func unknownCommand(name, parent string, cmds []*cli.Command) error {
	what := strconv.Quote(name)
	if parent != "" {
		what += fmt.Sprintf(" for %q", "tavern "+parent)
	}
	if alt, ok := habits[name]; ok && slices.ContainsFunc(cmds, func(c *cli.Command) bool { return c.HasName(alt) }) {
		return usageErr("unknown command %s; did you mean %q?", what, alt)
	}
	best, dist := "", 3
	for _, c := range cmds {
		for _, n := range c.Names() {
			if d := editDistance(name, n); d < dist && d < len(name) && n != "help" && n != "h" {
				best, dist = n, d
			}
		}
	}
	if best != "" {
		return usageErr("unknown command %s; did you mean %q?", what, best)
	}
	return usageErr("unknown command %s", what)
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// requireFlags is a Before hook: a flag the command cannot do without is
// a usage error (urfave/cli's Required flags report theirs untyped).
func requireFlags(names ...string) cli.BeforeFunc {
	return func(c *cli.Context) error {
		var missing []string
		for _, n := range names {
			if !c.IsSet(n) {
				missing = append(missing, n)
			}
		}
		switch len(missing) {
		case 0:
			return nil
		case 1:
			return usageErr("Required flag %q not set", missing[0])
		}
		return usageErr("Required flags %q not set", strings.Join(missing, ", "))
	}
}
