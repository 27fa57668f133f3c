package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/schema"
)

func newBudgetCommand() *cli.Command {
	return &cli.Command{
		Name:  "budget",
		Usage: "daily spending limits for pools (tokens, cost, drone time)",
		Description: `A budget (.tavern/budgets/NAME.md) bounds what one pool (--pool) or every pool
may spend per UTC day, from the usage ledger: --tokens (in + out), --cost (USD,
as reported by the agents), --time (drone wall time). A pool whose budget is
spent takes no new items — running drones finish — writes why in its document
(paused:) and resumes the next day or when the budget is raised.

Examples:
   tavern budget set drones-daily --pool drones --cost 5 --time 2h
   tavern budget ls`,
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "create or change a budget",
				ArgsUsage: "NAME",
				Description: `Creates budget NAME with the limits given (at least one), or changes what is
given of an existing one: the other limits and its pool stay as they are.
--pool '' makes a budget cover every pool. A limit is removed by editing the
document (tavern edit budgets/NAME). A new NAME near an existing budget's
(dialy next to daily) is refused as a likely typo (exit 2, "did you mean";
nothing written), unless --new. A --pool that has not run yet is
accepted with a warning, but one whose name is near an existing pool's is
refused as a likely typo (exit 2, "did you mean"), unless --new-pool.

Examples:
   tavern budget set drones-daily --pool drones --cost 5 --time 2h
   tavern budget set drones-daily --cost 8
   tavern budget set everyone --tokens 2000000`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "pool", Usage: "the pool `P` it limits (a new budget: default every pool; '' for every pool)"},
					&cli.BoolFlag{Name: "new-pool", Usage: "the pool is new on purpose: its name is not refused as a typo of an existing pool"},
					&cli.BoolFlag{Name: "new", Usage: "NAME is a new budget, though its name is near an existing one"},
					&cli.Int64Flag{Name: "tokens", Usage: "most tokens (in + out) per day", Action: func(_ *cli.Context, v int64) error { return zeroBudget("tokens", v <= 0) }},
					&cli.Float64Flag{Name: "cost", Usage: "most cost in USD per day", Action: func(_ *cli.Context, v float64) error { return costBudget(v) }},
					&cli.DurationFlag{Name: "time", Usage: "most drone wall time per day", Action: func(_ *cli.Context, v time.Duration) error { return zeroBudget("time", v <= 0) }},
					jsonFlag(),
				},
				Action: runBudgetSet,
			},
			{
				Name:  "ls",
				Usage: "list budgets and today's spending against them",
				Description: `Examples:
   tavern budget ls
   tavern budget ls --json`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runBudgetLs,
			},
		},
	}
}

func runBudgetSet(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("budget set takes one NAME")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	b, err := usage.SetBudget(s, usage.BudgetChange{Name: c.Args().First(), Pool: c.String("pool"), SetPool: c.IsSet("pool"), NewPool: c.Bool("new-pool"), NewBudget: c.Bool("new"),
		MaxTokens: c.Int64("tokens"), MaxCost: c.Float64("cost"), MaxTime: c.Duration("time")})
	if err != nil {
		return err
	}
	if p := c.String("pool"); p != "" {
		if exists, _ := usage.PoolKnown(s, p); !exists {
			warnf(c, schema.ErrUnknownName, "--pool %s: no such pool yet; the budget limits it once it runs", p)
		}
	}
	if c.Bool("json") {
		return printJSON(c, b)
	}
	outf(c, "%s\n", b.Path)
	return nil
}

func runBudgetLs(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	states, err := usage.Check(s, "", time.Now())
	if err != nil {
		warn(c, err)
	}
	if c.Bool("json") {
		if states == nil {
			states = []usage.State{}
		}
		return printJSON(c, states)
	}
	w := newTable(c.App.Writer, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "BUDGET\tPOOL\tTOKENS\tCOST USD\tTIME\tSTATE")
	for _, st := range states {
		pool := st.Pool
		if pool == "" {
			pool = "(all)"
		}
		tok, cost, tm := "-", "-", "-"
		if st.MaxTokens > 0 {
			tok = fmt.Sprintf("%d/%d", st.Spent.Tokens(), st.MaxTokens)
		}
		if st.MaxCost > 0 {
			cost = fmt.Sprintf("%.2f/%.2f", st.Spent.Cost, st.MaxCost)
		}
		if st.MaxTime > 0 {
			tm = secs(st.Spent.Wall) + "/" + st.MaxTime.String()
		}
		state := "ok"
		if st.Exhausted() {
			state = "spent: " + strings.Join(st.Over, ", ")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, pool, tok, cost, tm, state)
	}
	return w.Flush()
}

// zeroBudget refuses a limit of zero or less: a day's budget of nothing
// would pause every pool it covers at once, which is stopping them, not
// budgeting; a limit left out is no limit of that kind.
func zeroBudget(name string, bad bool) error {
	if bad {
		return usageErr("--%s: a budget must be above 0 (a limit of nothing pauses every pool it covers; stop the pool instead, or leave --%s out for no %s limit)", name, name, name)
	}
	return nil
}

// costBudget refuses a cost limit that is not a positive, finite number:
// NaN would be no limit at all, Inf one that is never reached.
func costBudget(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return usageErr("--cost %v: a budget is a finite amount in USD, like 5 or 2.50", v)
	}
	return zeroBudget("cost", v <= 0)
}
