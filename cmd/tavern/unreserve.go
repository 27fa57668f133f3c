package main

import (
	"strings"

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
	if n == 0 && c.NArg() > 0 {
		// A glob that matches none of the agent's (a typo: srcc/**)
		// released nothing; say what it does hold.
		var held []string
		rs, errs := sp.AgentReservations(as.Name)
		for _, r := range rs {
			held = append(held, r.Glob)
		}
		// Its files that cannot be used (a glob broken by hand): that
		// may be the reservation meant; unreserve --id drops it.
		for _, err := range errs {
			warnf(c, nil, "%w (unreserve --id drops it)", err)
		}
		switch {
		case len(held) == 0 && len(errs) > 0:
		case len(held) == 0:
			warnf(c, tuples.ErrNotReserved, "%s holds no reservation", as.Name)
		default:
			warnf(c, tuples.ErrNotReserved, "%s holds no reservation of %s (it holds %s)", as.Name, strings.Join(c.Args().Slice(), " "), strings.Join(held, " "))
		}
	}
	if c.Bool("json") {
		return printJSON(c, map[string]int{"released": n})
	}
	outf(c, "released %d\n", n)
	return nil
}
