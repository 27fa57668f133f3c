package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func newApproveCommand() *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "pass a gate (people only)",
		ArgsUsage: "ID",
		Description: `ID is a gate, or an item with one pending gate (either by a unique prefix of its
id, as item show takes one). Writes the decision record
(.tavern/approvals/<id>.md: who, when, from which process and its parents),
then marks the gate approved. The item can then be claimed or completed; a
drone waiting at the gate goes on. Approving an approved gate is a no-op
(exit 0, "already approved"; already_decided in --json); approving a rejected
one exits 4 (queue retry brings its item back with the gate open).

Refused (exit 4) for agents: TAVERN_AGENT or TAVERN_INSTANCE set, or a parent
process that is an agent or a spawn wrapper.

Example:
   tavern gate ls
   tavern approve p00-0193... --reason "reviewed the diff"`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "a note kept with the decision"},
			&cli.StringFlag{Name: "by", Usage: "who decides (default: $TAVERN_USER, else the login name)"},
			jsonFlag(),
		},
		Action: runApprove,
	}
}

func runApprove(c *cli.Context) error { return decide(c, "approve") }

// decide runs approve or reject for the command's ID.
func decide(c *cli.Context, op string) error {
	if c.NArg() != 1 {
		return usageErr("%s takes one gate or item ID", op)
	}
	if err := emptyPerson(c, "by"); err != nil {
		return err
	}
	_, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	d := queues.Decision{By: decider(c), Reason: c.String("reason")}
	var g *queues.Gate
	if op == "approve" {
		g, err = b.Approve(c.Args().First(), d)
	} else {
		g, err = b.Reject(c.Args().First(), d)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, g)
	}
	if g.AlreadyDecided {
		outf(c, "%s already %s (item %s, by %s at %s)\n", g.ID, g.Status, g.Item, g.DecidedBy, schema.FormatTime(g.DecidedAt.Time))
		return nil
	}
	outf(c, "%s %s (item %s)\n", g.ID, g.Status, g.Item)
	return nil
}
