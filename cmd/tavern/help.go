package main

import (
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

func newHelpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of a command",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Description: `Prints what ` + "`tavern COMMAND --help`" + ` prints: usage, description, examples and
flags. Without COMMAND, the list of commands. With --json, the same as one
object: name, usage, description, flags (name, aliases, usage, default) and
commands (name, usage); ` + "`tavern COMMAND --help --json`" + ` and a command that has
subcommands run without one under --json (` + "`tavern queue --json`" + `) print the same.

Examples:
   tavern help queue
   tavern help queue take`,
		Action: runHelp,
	}
}

func runHelp(c *cli.Context) error {
	path := c.Args().Slice()
	cmds := c.App.Commands
	var cmd *cli.Command // nil: the app's own help
	for i, name := range path {
		var found *cli.Command
		for _, cmd := range cmds {
			if cmd.HasName(name) && !cmd.Hidden {
				found = cmd
			}
		}
		if found == nil {
			return unknownCommand(name, strings.Join(path[:i], " "), cmds)
		}
		cmd, cmds = found, found.Subcommands
		if len(cmds) == 0 && i < len(path)-1 {
			return usageErr("%s has no subcommands", found.Name)
		}
	}
	if c.Bool("json") {
		return printJSON(c, helpJSON(c.App, path, cmd))
	}
	if cmd != nil && cmd.Name == "help" {
		// `help --help` is urfave/cli's app help: help's own is asked for.
		return cli.ShowCommandHelp(c.Lineage()[1], "help")
	}
	// The help of a command is what --help prints: run the command line
	// that asks for it, in a fresh app writing where this one writes.
	app := newApp(c.App.Reader, c.App.Writer, c.App.ErrWriter)
	args := append([]string{c.App.Name}, path...)
	return app.RunContext(c.Context, append(args, "--help"))
}

// helpJSON is the help of cmd (nil: the app) as one object, for agents:
// the same name, usage, description, flags and subcommands --help prints.
func helpJSON(app *cli.App, path []string, cmd *cli.Command) map[string]any {
	name, usage, desc, flags, sub := app.Name, app.Usage, app.Description, app.VisibleFlags(), app.VisibleCommands()
	if cmd != nil {
		name = strings.Join(append([]string{app.Name}, path...), " ")
		usage, desc, flags, sub = cmd.Usage, cmd.Description, cmd.VisibleFlags(), cmd.VisibleCommands()
	}
	fl := []map[string]any{}
	for _, f := range flags {
		names := f.Names()
		if names[0] == "help" && cmd != nil {
			continue // urfave/cli's, added to a command once it runs: help lists it or not by chance
		}
		o := map[string]any{"name": names[0], "aliases": append([]string{}, names[1:]...), "usage": "", "default": nil}
		if df, ok := f.(cli.DocGenerationFlag); ok {
			_, o["usage"] = unquoteUsage(df.GetUsage())
			if df.TakesValue() {
				def := df.GetDefaultText()
				if def == "" {
					def = df.GetValue()
				}
				if u, err := strconv.Unquote(def); err == nil {
					def = u // a string flag's value comes quoted
				}
				if def != "" && def != "[]" {
					o["default"] = def
				}
			}
		}
		fl = append(fl, o)
	}
	cs := []map[string]any{}
	for _, sc := range sub {
		if sc.Name == "help" && cmd != nil {
			continue // urfave's own per-command help, not one of ours
		}
		cs = append(cs, map[string]any{"name": sc.Name, "usage": sc.Usage})
	}
	return map[string]any{"name": name, "usage": usage, "description": desc, "flags": fl, "commands": cs}
}

// unquoteUsage is urfave/cli's: the `WORD` in a usage is the placeholder.
func unquoteUsage(usage string) (string, string) {
	if i := strings.Index(usage, "`"); i >= 0 {
		if j := strings.Index(usage[i+1:], "`"); j >= 0 {
			name := usage[i+1 : i+1+j]
			return name, usage[:i] + name + usage[i+1+j+1:]
		}
	}
	return "", usage
}
