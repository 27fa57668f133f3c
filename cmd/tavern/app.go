package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
)

var commands []*cli.Command

// register adds a command; each command file calls it from init.
func register(c *cli.Command) { commands = append(commands, c) }

var dirFlag = &cli.StringFlag{
	Name:    "dir",
	Usage:   "the .tavern directory to use (default: search upward from the working directory)",
	EnvVars: []string{"TAVERN_DIR"},
}

type ctxKey struct{}

// run is the whole program but for exiting: it parses args and runs one
// command. main reports the error and maps it to the exit code (exit.go).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// A watch that cannot use inotify polls and says so (the journal
	// records it too): pools, the verifier, watch, blocking waits.
	watcher.SetDegradeHandler(func(err error) { fmt.Fprintf(stderr, "tavern: warning: %v\n", err) })
	app := newApp(stdin, stdout, stderr)
	err := app.RunContext(ctx, reorderArgs(app, args))
	return unknownCommand(err)
}

// unknownCommand rewrites urfave/cli's report of an unknown (sub)command,
// "No help topic for 'x'. Did you mean \"\"?", as a usage error that says
// what happened.
func unknownCommand(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "No help topic for '")
	if !ok {
		return err
	}
	name, hint, _ := strings.Cut(rest, "'.")
	out := fmt.Sprintf("unknown command %q", name)
	if _, s, ok := strings.Cut(hint, "Did you mean "); ok {
		if s = strings.TrimSuffix(s, "?"); s != `""` && s != "" {
			out += "; did you mean " + s + "?"
		}
	}
	return usageErr("%s", out)
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	for _, c := range commands {
		addDirFlag(c)
	}
	addExamples("", commands)
	return &cli.App{
		Name:  "tavern",
		Usage: "coordinate agents through a directory of markdown documents",
		Description: "Tavern keeps agents, queues, work items, commitments and messages as markdown\n" +
			"files with YAML frontmatter under .tavern/. Edit them by hand, grep them,\n" +
			"diff them; use these commands to create, query, claim and supervise.\n\n" +
			"Exit codes: 0 ok, 1 error, 2 usage, 3 not found / nothing matched / timed out,\n" +
			"4 conflict (stale revision, lost claim, illegal transition), 5 invalid documents.",
		Commands:        commands,
		Flags:           []cli.Flag{dirFlag, jsonFlag},
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Suggest:         true,
		ExitErrHandler:  func(*cli.Context, error) {}, // exit codes are ours (exit.go)
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v", err)
		},
	}
}

func addDirFlag(c *cli.Command) {
	if len(c.Subcommands) > 0 {
		for _, s := range c.Subcommands {
			addDirFlag(s)
		}
	}
	for _, f := range c.Flags {
		if f.Names()[0] == "dir" {
			return
		}
	}
	c.Flags = append(c.Flags, dirFlag)
	if c.OnUsageError == nil {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErr("%v", err) }
	}
}

// storeDir finds the .tavern directory: --dir / TAVERN_DIR, else search
// upward from the working directory. --dir names the .tavern directory
// itself; a project directory holding a .tavern/ is accepted too.
func storeDir(c *cli.Context) (string, error) {
	if d := dirOption(c); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(filepath.Join(abs, docstore.ConfigFile)); err != nil {
			if fi, err := os.Stat(filepath.Join(abs, docstore.DirName, docstore.ConfigFile)); err == nil && !fi.IsDir() {
				return filepath.Join(abs, docstore.DirName), nil
			}
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return docstore.Find(wd)
}

// dirOption is the --dir value: given after the command, else before it
// (`tavern --dir D show x`), else TAVERN_DIR. Every command defines --dir
// too (so it may follow the command), and urfave/cli reads a flag from the
// innermost context that defines it, which would silently drop a --dir
// given before the command; hence the walk up the lineage.
func dirOption(c *cli.Context) string {
	env := os.Getenv("TAVERN_DIR")
	for _, cc := range c.Lineage() {
		if cc.App == nil {
			continue // the bare root context, which has no flags
		}
		if v := cc.String("dir"); v != env {
			return v
		}
	}
	return env
}

func openStore(c *cli.Context) (*docstore.Store, error) {
	dir, err := storeDir(c)
	if err != nil {
		return nil, err
	}
	s, err := docstore.Open(dir)
	if err != nil {
		return nil, err
	}
	recordJournal(c, s) // log.go: every mutation is journaled
	return s, nil
}

// printJSON writes v as indented JSON to the command's output.
func printJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func outf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.Writer, format, args...)
}

func errf(c *cli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.ErrWriter, format, args...)
}

var jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"}

// reorderArgs lets flags follow positional arguments, as in
// `tavern set agents/alice n=3 --if-rev R` (urfave/cli v2 stops parsing
// flags at the first argument). Everything after "--" stays positional.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	i := 1
	flags := app.Flags
	var cmd *cli.Command
	cmds := app.Commands
	// Global flags and the command path.
	for i < len(args) {
		a := args[i]
		if a == "--" {
			return args
		}
		if isFlag(a) {
			out = append(out, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd = next
		out = append(out, a)
		flags = cmd.Flags
		cmds = cmd.Subcommands
		i++
		if len(cmds) == 0 {
			break
		}
	}
	// An unknown subcommand (`tavern item shwo X --json`): leave the rest
	// alone so it is reported as such, not as a flag of the parent.
	if cmd == nil || cmd.SkipFlagParsing || len(cmd.Subcommands) > 0 {
		return append(out, args[i:]...)
	}
	var fl, pos, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = args[i+1:]
			break
		}
		if isFlag(a) {
			fl = append(fl, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				fl = append(fl, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out = append(out, fl...)
	// `tavern ls agents --help` asks for the command's help; passed on,
	// the positionals would read as a help topic ("No help topic for ...").
	if slices.ContainsFunc(fl, func(f string) bool { return f == "--help" || f == "-h" || f == "-help" }) {
		return out
	}
	if len(pos)+len(rest) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
		out = append(out, rest...)
	}
	return out
}

func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if a[1] >= '0' && a[1] <= '9' { // a negative number
		return false
	}
	return true
}

func takesValue(flags []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	if name == "dir" {
		return true
	}
	return false
}
