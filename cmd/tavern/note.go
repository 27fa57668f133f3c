package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
)

func newNoteCommand() *cli.Command {
	return &cli.Command{
		Name:      "note",
		Usage:     "attach a reflection to a channel (not a message)",
		ArgsUsage: "CHANNEL [TEXT...]",
		Description: `Writes notes/CHANNEL/ID.md. Notes are not in the channel's timeline and are
never unread. Without TEXT the note is read from stdin. A note on another
agent's @direct channel is written, as a message sent there is; only that
channel's readers (see notes) read it back.

Example:
   tavern note research "the proposal ignores crash recovery" --as zealot-1`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runNote,
	}
}

func runNote(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("note takes CHANNEL [TEXT...]")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	text, err := textArg(c, 1)
	if err != nil {
		return err
	}
	n, err := messages.AddNote(s, c.Args().First(), as.Name, text)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, n)
	}
	outf(c, "%s\n", n.Path)
	return nil
}
