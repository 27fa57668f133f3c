package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/schema"
)

func newRecvCommand() *cli.Command {
	return &cli.Command{
		Name:      "recv",
		Usage:     "read unread messages of a channel and advance the bookmark",
		ArgsUsage: "CHANNEL",
		Description: `Prints the messages of CHANNEL the agent has not read and moves its bookmark
(bookmarks/AGENT.md) past them. --all prints every message. --wait DUR blocks
until a message arrives (woken by the write itself, not by polling); exit 3
if none came in time. Without --wait, nothing unread prints nothing ([]
with --json) and exits 0, as every listing does. An unknown channel exits 3.
The agent's own messages are not unread: recv passes over them (--all
prints them). Another agent's @direct channel is refused (exit 4); the
person (no --as, no $TAVERN_AGENT) reads any.

Examples:
   tavern recv research --as harbinger-1
   tavern recv @zealot --as zealot --wait 10m --json`,
		Flags: []cli.Flag{asFlag(), jsonFlag(),
			waitFlag("block up to `DUR` for a new message"),
			&cli.BoolFlag{Name: "all", Usage: "print every message, read or not"},
			limitFlag("print at most `N` messages (the rest stay unread; default: all)", 0),
		},
		Action: runRecv,
	}
}

func runRecv(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("recv takes CHANNEL")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	actor, err := actorOf(c, s)
	if err != nil {
		return err
	}
	as := actor.Name
	opt := messages.RecvOptions{All: c.Bool("all"), Limit: c.Int("limit")}
	var msgs []messages.Message
	if d := c.Duration("wait"); d > 0 {
		ctx, cancel := context.WithTimeout(c.Context, d)
		defer cancel()
		msgs, err = messages.RecvWait(ctx, s, as, c.Args().First(), opt)
		err = timedOut(err, d, "no new message on %s", c.Args().First())
	} else {
		msgs, err = messages.Recv(s, as, c.Args().First(), opt)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if msgs == nil {
			msgs = []messages.Message{}
		}
		if err := printJSON(c, msgs); err != nil {
			return err
		}
	} else {
		for _, m := range msgs {
			outf(c, "%s\n", formatMessage(m))
		}
	}
	return nil
}

func formatMessage(m messages.Message) string {
	text := strings.ReplaceAll(view.Visible(m.Text), "\n", "\n  ")
	return fmt.Sprintf("%s %s: %s", schema.FormatTime(m.Time.Time), m.Sender, text)
}
