package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues/tuples"
)

func newUnreserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "unreserve",
		Usage:     "drop an agent's reservations (of GLOBs, or all), or one by --id",
		ArgsUsage: "[GLOB...]",
		Description: `Drop an agent's reservations (of GLOBs, or all).

Examples:
   tavern unreserve --id 01a2f0c4-...
   tavern unreserve 'src/parser/**' --as alice
   tavern unreserve --as alice   # all of alice's`,
		Flags: []cli.Flag{asFlag(), instanceFlag(),
			&cli.StringFlag{Name: "id", Usage: "drop the reservation `ID` (any instance)"},
			jsonFlag()},
		Action: runUnreserve,
	}
}

func runUnreserve(c *cli.Context) error {
	id := c.String("id")
	if id != "" && c.NArg() > 0 {
		return usageErr("unreserve takes [GLOB...] [--as AGENT], or --id ID")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, sp.Store())
	if err != nil {
		return err
	}
	n := 1
	if id != "" {
		err = sp.UnreserveID(id, as.AgentName())
	} else {
		n, err = sp.Unreserve(as.Name, c.Args().Slice(), tuples.UnreserveOptions{Instance: c.String("instance")})
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]int{"released": n})
	}
	outf(c, "released %d\n", n)
	return nil
}
