package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/schema"
)

func newUsageCommand() *cli.Command {
	return &cli.Command{
		Name:  "usage",
		Usage: "the usage ledger: wall time, CPU, tokens and cost per agent, item, pool or day",
		Description: `Every spawn appends a record to .tavern/usage/<agent>/<id>.md: wall time, CPU
time, exit status and, when the agent's output reports them (Claude Code
--output-format json or stream-json, Codex exec --json, Gemini CLI
--output-format json or stream-json), tokens in and out and cost. This
command totals them. Cost sums only the runs that reported one (the COST
column says how many: "0.42 (3/5)"). A --agent, --pool or --item that names
nothing (no such document, and no run of the ledger has it) counts nothing:
usage says so on stderr, with the names near it ("did you mean"). --item
takes an item's id or a unique prefix of it, as item show does (of the
store's items and of the ledger's runs); a prefix of several exits 2 and
lists them.

Examples:
   tavern usage
   tavern usage --by item --since 24h
   tavern usage --by day --pool drones --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "by", Value: "agent", Usage: "group by agent | item | pool | queue | model | day"},
			&cli.StringFlag{Name: "since", Usage: "from `DUR` ago or from TIME"},
			&cli.StringFlag{Name: "until", Usage: "up to `TIME` (or DUR ago)"},
			&cli.StringFlag{Name: "pool", Usage: "only pool `P`"},
			&cli.StringFlag{Name: "agent", Usage: "only agent `A`"},
			&cli.StringFlag{Name: "item", Usage: "only item `ID` (or a unique prefix of it)"},
			jsonFlag(),
		},
		Action: runUsage,
	}
}

func runUsage(c *cli.Context) error {
	f := usage.Filter{Pool: c.String("pool"), Agent: c.String("agent"), Item: c.String("item")}
	var err error
	if s := c.String("since"); s != "" {
		if f.Since, err = parseSince(s, false); err != nil {
			return err
		}
	}
	if s := c.String("until"); s != "" {
		if f.Until, err = parseWhen(s, true); err != nil {
			return err
		}
	}
	// Swapped bounds count nothing: say so rather than print an empty
	// ledger that reads as no runs (as --since 0 is refused).
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return usageErr("--until %s is not after --since %s: nothing is in between (swapped?)", schema.FormatTime(f.Until), schema.FormatTime(f.Since))
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	if f.Item, err = usage.ResolveItem(b, f.Item); err != nil {
		return err
	}
	recs, errs := usage.Load(s, f)
	for _, e := range errs {
		warn(c, e)
	}
	if len(recs) == 0 { // a record matched names every filter's value
		for _, e := range usage.Unknown(s, f) {
			var ue *schema.UnknownError
			if errors.As(e, &ue) {
				warnf(c, ue, "--%s %s: no such %s, and no run of the ledger has it%s; it counts nothing", ue.What, ue.Name, ue.What, nearHint(ue.Near))
			}
		}
	}
	rows, total, err := usage.Summarize(recs, c.String("by"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if rows == nil {
			rows = []usage.Row{}
		}
		return printJSON(c, map[string]any{"by": c.String("by"), "rows": rows, "total": total})
	}
	w := newTable(c.App.Writer, 0, 2, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s\tRUNS\tFAILED\tWALL\tCPU\tTOKENS IN\tTOKENS OUT\tCOST USD\t\n", strings.ToUpper(c.String("by")))
	line := func(r usage.Row) {
		cost := "-"
		if r.CostRuns > 0 {
			cost = fmt.Sprintf("%.4f", r.Cost)
			if r.CostRuns < r.Runs {
				cost += fmt.Sprintf(" (%d/%d)", r.CostRuns, r.Runs)
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%d\t%d\t%s\t\n", r.Key, r.Runs, r.Failed, secs(r.Wall), secs(r.CPU), r.TokensIn, r.TokensOut, cost)
	}
	for _, r := range rows {
		line(r)
	}
	line(total)
	return w.Flush()
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(10 * time.Millisecond).String()
}

// nearHint is the " (did you mean ...?)" of near names, or "".
func nearHint(near []string) string {
	if len(near) == 0 {
		return ""
	}
	return " (did you mean " + schema.NearList(near) + "?)"
}
