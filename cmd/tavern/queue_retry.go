package main

import (
	"github.com/urfave/cli/v2"
)

func init() {
	addQueueCmd(&cli.Command{
		Name:      "retry",
		Usage:     "move dead items back to pending",
		ArgsUsage: "Q [ID...]",
		Description: `Moves the given dead items (all of Q's dead items if none are given) back to
pending/ with attempts reset to 0; last_error is kept. An item that is not
in dead/ exits 4.

Examples:
   tavern queue retry build
   tavern queue retry build p01-0193...`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usageErr("queue retry takes Q [ID...]")
			}
			s, b, err := openBroker(c)
			if err != nil {
				return err
			}
			defer b.Close()
			items, err := b.Retry(c.Args().First(), c.Args().Slice()[1:]...)
			if c.Bool("json") {
				out := []*itemJSON{}
				for _, it := range items {
					out = append(out, itemObject(s, it))
				}
				if perr := printJSON(c, out); err == nil {
					err = perr
				}
				return err
			}
			for _, it := range items {
				outf(c, "%s pending\n", it.ID)
			}
			return err
		},
	})
}
