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
		Description: `List the notes of a channel. Another agent's @direct channel is refused
(exit 4), as recv refuses its messages: its notes are read by its agent, the
agent's parent (and the parent's parent...) and the person (no --as, no
$TAVERN_AGENT).

Examples:
   tavern note general "this channel is noisy" --as alice
   tavern notes general --json`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
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
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	notes, err := messages.ListNotes(s, as.Name, c.Args().First())
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
