package main

import (
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
)

func newInboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "inbox",
		Usage: "unread message counts per channel, highest first",
		Description: `Lists the agent's unread counts for every active channel (other agents'
@direct channels excluded), highest first. The agent's own messages are
not unread. --unread leaves out the channels with nothing unread (the
rows with 0, listed by default so that a script finds every channel's
count).

Examples:
   tavern inbox --as zealot-1
   tavern inbox --as zealot-1 --unread --json`,
		Flags: []cli.Flag{asFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "unread", Usage: "list only the channels with unread messages"}},
		Action: runInbox,
	}
}

func runInbox(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	u, err := messages.Inbox(s, as.Name)
	if err = warnSkipped(c, err); err != nil { // a broken chunk hides no other count
		return err
	}
	if c.Bool("unread") {
		u = slices.DeleteFunc(u, func(x messages.Unread) bool { return x.Count == 0 })
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(u))
	}
	for _, x := range u {
		outf(c, "%6d  %s\n", x.Count, x.Channel)
	}
	return nil
}
