package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
)

func init() {
	addQueueCmd(&cli.Command{
		Name:      "take",
		Usage:     "claim the next item",
		ArgsUsage: "Q[,Q2...]",
		Description: `Claims the first claimable item (not_before passed, all depends_on done) of
the first queue, in queue priority order, that has one; with --steal, when
those are empty, from other queues that allow stealing (weighted by their
priority, so none starves). Claims whose owner died are reaped on the way.

Output: the first line is "ID ATTEMPT" (for scripts: read id attempt), then
the item file as on disk. Pass ATTEMPT to item done/fail/renew/release
--attempt. With --json: the show --json object plus id, queue, attempt.
Invalid item files and items blocked by a dead dependency are reported on
stderr (path:line:col) and skipped. Exit 3 if nothing is claimable (after --wait).

The claim is lease-only (this process exits at once): renew it with
` + "`tavern item renew`" + ` or it returns to pending when the lease runs out. With
--as AGENT while AGENT's liveness lock (.locks/agents/AGENT.lock, held by its
spawn wrapper) is held, the claim is a liveness claim tied to that lock:
when the wrapper dies the item returns to pending at the next take or reap,
without waiting for the lease.

Examples:
   read id attempt < <(tavern queue take build | head -1)
   tavern queue take build,docs --steal --wait 30s --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Usage: "claim as `AGENT` (recorded as claimed_by)"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to `DUR` for an item (event-driven)"},
			&cli.BoolFlag{Name: "steal", Usage: "take from other stealable queues when these are empty"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("queue take takes Q[,Q2...]")
			}
			var names []string
			for _, n := range strings.Split(c.Args().First(), ",") {
				if n = strings.TrimSpace(n); n != "" {
					names = append(names, n)
				}
			}
			s, b, err := openBroker(c)
			if err != nil {
				return err
			}
			defer b.Close()
			opt := queues.TakeOptions{Queues: names, Steal: c.Bool("steal"), Wait: c.Duration("wait"), As: c.String("as")}
			if c.IsSet("as") {
				opt.Liveness = queues.AgentLock // the library checks the name
			} else {
				opt.As = cliHolder()
			}
			cl, err := b.Take(c.Context, opt)
			if err != nil {
				if ee, ok := err.(*queues.EmptyError); ok && ee.Diag != nil {
					warnDiag(c, ee.Diag.Invalid, ee.Diag.Blocked)
				}
				return err
			}
			if cl.Notes != nil {
				warnDiag(c, cl.Notes.Invalid, cl.Notes.Blocked)
			}
			if c.Bool("json") {
				return printJSON(c, itemObject(s, cl.Item))
			}
			outf(c, "%s %d\n", cl.ID, cl.Attempt)
			_, err = c.App.Writer.Write(cl.Doc.Bytes())
			return err
		},
	})
}
