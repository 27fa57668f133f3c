package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func newBubbleCommand() *cli.Command {
	return &cli.Command{
		Name:  "bubble",
		Usage: "move questions unanswered for longer than bubble_after up to the next parent",
		Description: `Move questions unanswered for longer than bubble_after up to the next parent.

Examples:
   tavern bubble
   tavern bubble --after 10m --json`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "after", Usage: "move questions unanswered for `DUR` (0: every open question)", DefaultText: "tavern.md bubble_after", Action: notNegative("after")},
			jsonFlag(),
		},
		Action: withManager(runBubble),
	}
}

func runBubble(c *cli.Context, m *agents.Manager) error {
	after := m.BubbleAfter()
	if c.IsSet("after") {
		after = c.Duration("after")
	}
	moved, _, err := m.Bubble(after)
	if c.Bool("json") {
		if perr := printJSON(c, orEmpty(moved)); perr != nil {
			return perr
		}
	} else {
		for _, q := range moved {
			outf(c, "%s -> %s\n", q.ID, q.To)
		}
	}
	return err
}
