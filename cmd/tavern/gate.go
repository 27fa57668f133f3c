package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func newGateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "decisions only a person can make: add and list gates",
		Description: `A gate (.tavern/gates/ID.md) holds an item until a person decides:
--before complete (the default) lets the work run but keeps the item from being
done (its drone waits, agent state "waiting"); --before claim keeps it from
being claimed. --until TIME makes a timer gate: not before that time.
"gate: human" in an item (or "(gate: human)" on a plan line) is a gate too.

Decide with ` + "`tavern approve ID`" + ` or ` + "`tavern reject ID --reason TEXT`" + ` (ID: the gate's, or
the item's when it has one pending gate). Agents cannot decide: a process
with TAVERN_AGENT or TAVERN_INSTANCE set, or started by a spawn wrapper, is
refused. A gate edited by hand to approved, without the approval record
(.tavern/approvals/ID.md) that tavern approve writes, is ignored by the
engine and reported by ` + "`tavern check`" + `.

Examples:
   tavern gate add p00-0193... --reason "review the migration before it runs" --before claim
   tavern gate ls
   tavern approve p00-0193...`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a gate to an item",
				ArgsUsage: "ITEM",
				Description: `Prints the new gate's id. ITEM is an item's id or a unique prefix of it.

Adding a gate the item already has (same type and stage, same --reason and
--until, not decided yet) adds nothing: it prints that gate's id, says so on
stderr ("existing": true under --json) and exits 0, so a script may run it
again. A duration --until is from now, so it names a new time each run.

Examples:
   tavern gate add p00-0193... --reason "a person reads the diff first"
   tavern gate add p00-0193... --reason "check the plan" --before claim
   tavern gate add p00-0193... --until 2026-02-01T09:00:00Z`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "reason", Usage: "what the person decides (shown in the needs-you list)"},
					&cli.StringFlag{Name: "before", Usage: "claim | complete (default complete; claim for --until)", Action: choiceGiven("before", "claim or complete")},
					&cli.StringFlag{Name: "until", Usage: "a timer gate: not before `TIME` (RFC 3339, or a duration from now)"},
					jsonFlag(),
				},
				Action: runGateAdd,
			},
			{
				Name:  "ls",
				Usage: "list the gates waiting for a person (every gate with --all)",
				Description: `Examples:
   tavern gate ls
   tavern gate ls --all --json`,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every gate, decided or not"}, jsonFlag()},
				Action: runGateLs,
			},
		},
	}
}

func runGateAdd(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("gate add takes one ITEM")
	}
	opt := queues.GateOptions{Reason: c.String("reason"), Stage: c.String("before")}
	// An unset variable (--until "$T") must not turn a timer gate into a
	// person's.
	if c.IsSet("until") && strings.TrimSpace(c.String("until")) == "" {
		return usageErr("--until %q: empty; give a time (RFC 3339) or a duration from now", c.String("until"))
	}
	if u := c.String("until"); u != "" {
		if d, err := time.ParseDuration(u); err == nil {
			opt.Until = time.Now().Add(d)
		} else if t, err := schema.ParseTime(u); err == nil {
			opt.Until = t
		} else {
			return usageErr("--until %q: want an RFC 3339 time or a duration", u)
		}
	}
	if opt.Until.IsZero() && strings.TrimSpace(opt.Reason) == "" {
		return usageErr("gate add needs --reason (what the person decides) or --until")
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	if opt.By, err = actorOrUser(c, s); err != nil {
		return err
	}
	id, err := itemRef(b, c.Args().First())
	if err != nil {
		return err
	}
	g, err := b.AddGate(id, opt)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, g)
	}
	if g.Existing {
		errf(c, "item %s already has this gate (%s); nothing added\n", g.Item, g.Path)
	}
	outf(c, "%s\n", g.ID)
	return nil
}

func runGateLs(c *cli.Context) error {
	_, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	gates, errs := b.Gates(!c.Bool("all"))
	for _, e := range errs {
		warn(c, e)
	}
	if c.Bool("json") {
		if gates == nil {
			gates = []*queues.Gate{}
		}
		return printJSON(c, gates)
	}
	if len(gates) == 0 {
		if !c.Bool("all") {
			outf(c, "no gate is waiting for a person\n")
		}
		return nil
	}
	w := newTable(c.App.Writer, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "GATE\tITEM\tSTAGE\tSTATE\tWHAT")
	for _, g := range gates {
		what := g.Reason
		if g.Title != "" && what != "" {
			what = fmt.Sprintf("%s: %s", g.Title, what)
		} else if g.Title != "" {
			what = g.Title // a timer gate needs no reason
		}
		state := g.State
		if g.Type == queues.GateTimer {
			state += " (until " + schema.FormatTime(g.Until.Time) + ")"
		}
		switch {
		case g.Unlisted:
			state += " (gates nothing: its item does not list it)"
		case g.Problem != "":
			state += " (!)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", g.ID, g.Item, g.Stage, state, what)
	}
	return w.Flush()
}
