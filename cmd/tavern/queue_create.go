package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
)

func init() {
	addQueueCmd(&cli.Command{
		Name:      "create",
		Usage:     "create a queue",
		ArgsUsage: "Q",
		Description: `Writes .tavern/queues/Q/queue.md and the pending/ claimed/ done/ dead/
directories. Priority 0 is the highest (0..99): it orders multi-queue take and
weights stealing. Durations are Go durations (90s, 5m, 1h).

Examples:
   tavern queue create build
   tavern queue create review --priority 2 --max-attempts 5 --lease 10m --backoff 30s --no-steal
   tavern queue create code --on-dead "ask parent"`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "priority", Usage: "queue priority, 0 (highest) .. 99"},
			&cli.IntFlag{Name: "max-attempts", Usage: "claims before an item goes to dead/ (default: tavern.md default_max_attempts)"},
			&cli.DurationFlag{Name: "lease", Usage: "claim lease (default: tavern.md default_lease)"},
			&cli.DurationFlag{Name: "backoff", Usage: "delay after the first failure, doubled per attempt (default 10s)"},
			&cli.DurationFlag{Name: "backoff-max", Usage: "backoff cap (default 10m)"},
			&cli.DurationFlag{Name: "lease-grace", Usage: "how long a hung holder keeps an expired claim (default 30s)"},
			&cli.StringFlag{Name: "on-empty", Usage: "what pools do when it is empty: idle | hibernate | terminate | steal"},
			&cli.BoolFlag{Name: "no-steal", Usage: "other queues' workers may not steal from this one"},
			&cli.StringFlag{Name: "on-dead", Usage: "where dead items are escalated: 'ask parent' | 'ask user' | 'notify CHANNEL'"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("queue create takes one queue name")
			}
			if _, err := queues.ParseOnDead(c.String("on-dead")); err != nil {
				return err
			}
			s, b, err := openBroker(c)
			if err != nil {
				return err
			}
			defer b.Close()
			q, err := b.CreateQueue(c.Args().First(), queues.QueueOptions{
				Priority: c.Int("priority"), MaxAttempts: c.Int("max-attempts"), Lease: c.Duration("lease"),
				Backoff: c.Duration("backoff"), BackoffMax: c.Duration("backoff-max"), LeaseGrace: c.Duration("lease-grace"),
				OnEmpty: c.String("on-empty"), NoSteal: c.Bool("no-steal"),
			})
			if err != nil {
				return err
			}
			if od := c.String("on-dead"); od != "" {
				if q, err = b.SetOnDead(q.Name, od); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				return printJSON(c, docJSON(s, q.Doc, true))
			}
			outf(c, "%s\n", q.Path)
			return nil
		},
	})
}
