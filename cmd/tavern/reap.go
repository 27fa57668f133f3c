package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
)

func newReapCommand() *cli.Command {
	return &cli.Command{
		Name:      "reap",
		Usage:     "return claimed items whose owner died or whose lease ran out",
		ArgsUsage: "[Q...]",
		Description: `For every claimed item (of the given queues, or all): a liveness claim whose
lock can be taken has a dead owner and goes back to pending/ at once; a
lease-only claim goes back when its lease has run out; a live holder past its
lease is reported as hung (item.lease_expired) and reaped after the queue's
lease_grace. An item reaped on its last attempt goes to dead/. First, agents
whose spawn wrapper died are marked failed and what is left of their child's
process tree is killed (it holds its item's claim while it lives). take reaps
too; pools, the verifier and watch reap every second; this command is for
cron jobs and supervisors.

Output: one line per item: "returned ID", "dead ID" or "hung ID". Agent and
item files that do not parse or validate are skipped and reported on stderr
as warnings with their path:line:col ("invalid" with --json); they never
stop the reaping of the rest, and do not change the exit code (0): they are
` + "`tavern check`" + `'s to fail (exit 5).

Examples:
   tavern reap
   tavern reap build --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runReap,
	}
}

func runReap(c *cli.Context) error {
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	// Agents first: a dead wrapper's orphaned tree holds its item's claim
	// until it is killed.
	m, err := agents.NewManager(s)
	if err != nil {
		return err
	}
	defer m.Close()
	rep, err := m.Reap(b, c.Args().Slice()...)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		list := func(items []*queues.Item) []*itemJSON {
			out := []*itemJSON{}
			for _, it := range items {
				out = append(out, itemObject(s, it))
			}
			return out
		}
		return printJSON(c, map[string]any{"returned": list(rep.Returned), "dead": list(rep.Dead),
			"hung": list(rep.Hung), "invalid": errorsJSON(rep.Invalid)})
	}
	for _, it := range rep.Returned {
		outf(c, "returned %s\n", it.ID)
	}
	for _, it := range rep.Dead {
		outf(c, "dead %s\n", it.ID)
	}
	for _, it := range rep.Hung {
		outf(c, "hung %s\n", it.ID)
	}
	if len(rep.Returned)+len(rep.Dead)+len(rep.Hung) == 0 {
		// On stderr: a script reading stdout still sees nothing.
		errf(c, "tavern: nothing to reap (no claim expired or lost its holder)\n")
	}
	warnDiag(c, rep.Invalid, nil)
	return nil
}
