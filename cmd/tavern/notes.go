package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/schema"
)

func newNotesCommand() *cli.Command {
	return &cli.Command{
		Name:      "notes",
		Usage:     "list the notes of a channel",
		ArgsUsage: "CHANNEL",
		Description: `List the notes of a channel.

Examples:
   tavern note general "this channel is noisy" --as alice
   tavern notes general --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runNotes,
	}
}

func runNotes(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("notes takes CHANNEL")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	notes, err := messages.ListNotes(s, c.Args().First())
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(notes))
	}
	for _, n := range notes {
		outf(c, "%s %s: %s\n", schema.FormatTime(n.Created.Time), n.Agent, view.Visible(n.Text))
	}
	return nil
}
