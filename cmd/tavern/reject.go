package main

import "github.com/urfave/cli/v2"

func newRejectCommand() *cli.Command {
	return &cli.Command{
		Name:      "reject",
		Usage:     "reject at a gate (people only); the item goes to dead/",
		ArgsUsage: "ID",
		Description: `ID is a gate, or an item with one pending gate (either by a unique prefix of its
id, as item show takes one). Writes the decision record,
marks the gate rejected and moves the item to dead/ with the reason (a drone
waiting at the gate stops, its run failed). ` + "`tavern queue retry`" + ` brings the
item back and re-opens the gate. Rejecting a rejected gate is a no-op (exit 0,
"already rejected"; already_decided in --json); rejecting an approved one exits
4. Refused (exit 4) for agents, as approve.

Example:
   tavern reject p00-0193... --reason "wrong approach: use the existing parser"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why (required)"},
			&cli.StringFlag{Name: "by", Usage: "who decides (default: $TAVERN_USER, else the login name)"},
			jsonFlag(),
		},
		Before: requireFlags("reason"),
		Action: runReject,
	}
}

func runReject(c *cli.Context) error { return decide(c, "reject") }
