package main

import (
	"github.com/urfave/cli/v2"
)

func newHelpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of a command",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Description: `Prints what ` + "`tavern COMMAND --help`" + ` prints: usage, description, examples and
flags. Without COMMAND, the list of commands.

Examples:
   tavern help queue
   tavern help queue take`,
		Action: runHelp,
	}
}

func runHelp(c *cli.Context) error {
	path := c.Args().Slice()
	cmds := c.App.Commands
	for i, name := range path {
		var found *cli.Command
		for _, cmd := range cmds {
			if cmd.HasName(name) && !cmd.Hidden {
				found = cmd
			}
		}
		if found == nil {
			return unknownCommand(name, cmds)
		}
		cmds = found.Subcommands
		if len(cmds) == 0 && i < len(path)-1 {
			return usageErr("%s has no subcommands", found.Name)
		}
	}
	// The help of a command is what --help prints: run the command line
	// that asks for it, in a fresh app writing where this one writes.
	app := newApp(c.App.Reader, c.App.Writer, c.App.ErrWriter)
	args := append([]string{c.App.Name}, path...)
	return app.RunContext(c.Context, append(args, "--help"))
}
