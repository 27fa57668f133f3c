package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
)

func init() {
	addQueueCmd(&cli.Command{
		Name:      "add",
		Usage:     "enqueue an item; prints its id",
		ArgsUsage: "Q",
		Description: `Creates queues/Q/pending/<id>.md; the body (--body FILE, or - for stdin) is
the assignment. The id is p<priority>-<uuidv7>, so pending/ lists in take order.
Priority: 0 (highest) .. 99; anything else is rejected (exit 2). Every
--depends-on must name an existing item; the item is claimable once all of
them are in done/. A dependency graph with a cycle is rejected (exit 2).

Examples:
   id=$(tavern queue add build --title "compile parser" --priority 1)
   tavern queue add build --title "link" --depends-on "$id" --body task.md
   tavern queue add deploy --title "ship 2.0" --gate human`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "title", Usage: "one-line title"},
			&cli.IntFlag{Name: "priority", Usage: "0 (highest) .. 99"},
			&cli.StringSliceFlag{Name: "depends-on", Usage: "item `ID` that must be done first (repeatable)"},
			&cli.IntFlag{Name: "max-attempts", Usage: "override the queue's max attempts"},
			&cli.StringFlag{Name: "gate", Usage: "human: a person approves (tavern approve) before the item is done"},
			bodyFlag,
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("queue add takes one queue name")
			}
			body, err := readBody(c)
			if err != nil {
				return err
			}
			s, b, err := openBroker(c)
			if err != nil {
				return err
			}
			defer b.Close()
			it, err := b.Add(c.Args().First(), queues.AddOptions{
				Title: c.String("title"), Priority: c.Int("priority"), DependsOn: c.StringSlice("depends-on"),
				MaxAttempts: c.Int("max-attempts"), Body: body, Gate: c.String("gate"), By: actorOrUser(c),
			})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, itemObject(s, it))
			}
			outf(c, "%s\n", it.ID)
			return nil
		},
	})
}
