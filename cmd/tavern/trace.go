package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/trace"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newTraceCommand() *cli.Command {
	return &cli.Command{
		Name:      "trace",
		Usage:     "an item's whole history as one timeline, or a document at a past time",
		ArgsUsage: "ITEM | --at TIME KIND/NAME",
		Description: `tavern trace ITEM prints what happened to an item, from the journal and the
documents: who added it, every claim with its holder, attempt and liveness,
failures and reaps with their reasons, what the holder sent and committed
while it held the item, gates and who decided them from which process, the
merge, the usage. ITEM is an item's id, a unique prefix of it or its file's path,
or a gate's id (or prefix), for the gate's item.

tavern trace --at TIME KIND/NAME shows a document as it was at TIME (RFC 3339,
a date, or a duration ago): where it was, its revision and the events before
and after, and its content when a copy of that revision survives (the current
file, a .trash/ copy, or git history when .tavern/ is committed); items show
their state then, replayed from their events.

Examples:
   tavern trace p00-0193...
   tavern trace p00-0193... --json
   tavern trace --at 2h agents/alice
   tavern trace --at 2026-01-20T10:00:00Z items/p00-0193...`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "at", Usage: "show the document as of `TIME` (RFC 3339, date, duration ago, or now)"},
			jsonFlag(),
		},
		Action: runTrace,
	}
}

func runTrace(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("trace takes one ITEM (or --at TIME KIND/NAME)")
	}
	// An empty --at (an unset "$WHEN") is not "no --at": its KIND/NAME
	// would be read as an ITEM and refused for what it is not.
	if c.IsSet("at") && strings.TrimSpace(c.String("at")) == "" {
		return usageErr("--at %q: empty; give a time (RFC 3339, a date, or a duration ago like 2h)", c.String("at"))
	}
	_, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	if at := c.String("at"); at != "" {
		when, err := parseWhen(at, true)
		if err != nil {
			return err
		}
		snap, err := trace.At(b, c.Args().First(), when)
		if err != nil {
			return err
		}
		if err := messages.CheckRead(b.Store(), "trace", envAgent(), snap.Path); err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(c, snap)
		}
		printSnapshot(c, snap)
		return nil
	}
	ref := c.Args().First()
	if rel, err := resolveRef(b.Store(), ref); err == nil {
		// Another kind's document (agents/alice): trace ITEM would call
		// it an invalid item name; --at is what shows it.
		if k, _, err := schema.KindOfPath(rel); err == nil && k.Name != "item" {
			return usageErr("%s is no item; a document at a past time: tavern trace --at TIME %s", ref, ref)
		}
	}
	id, err := itemRef(b, ref)
	if err != nil {
		return err
	}
	if _, rerr := b.ResolveID(ref); rerr != nil {
		// No item has it: a gate's id (gate ls lists it first) traces
		// the gate's item.
		switch item, gerr := b.GateItem(ref); {
		case gerr == nil:
			id = item
		case errors.Is(gerr, docstore.ErrAmbiguous):
			return gerr
		}
	}
	t, err := trace.Item(b, id)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, t)
	}
	printTrace(c, t)
	return nil
}

func printTrace(c *cli.Context, t *trace.Trace) {
	outf(c, "item %s %q (queue %s): %s\n", t.Item, t.Title, t.Queue, t.State)
	if t.CreatedBy != "" {
		outf(c, "created by %s", t.CreatedBy)
		if t.Plan != "" {
			outf(c, " from plan %s", t.Plan)
		}
		outf(c, "\n")
	}
	for _, a := range t.Attempts {
		end := "…"
		if !a.Ended.IsZero() {
			end = schema.FormatTime(a.Ended.Time)
		}
		outf(c, "attempt %d: %s (%s claim) %s → %s %s", a.N, a.Holder, a.Liveness, schema.FormatTime(a.Claimed.Time), end, a.Outcome)
		if a.Reason != "" {
			outf(c, ": %s", view.Visible(a.Reason))
		}
		outf(c, "\n")
	}
	for _, g := range t.Gates {
		outf(c, "gate %s (%s, before %s): %s", g.ID, g.Type, g.Stage, g.State)
		if g.DecidedBy != "" {
			outf(c, " by %s", g.DecidedBy)
		}
		outf(c, "\n")
	}
	u := t.Usage
	cost := ""
	if u.Cost != nil {
		cost = fmt.Sprintf(", $%.4f", *u.Cost)
	}
	outf(c, "usage: %s, %s wall, %s CPU, %s in, %d out%s\n\n", counted(u.Runs, "run"), secs(u.Wall), secs(u.CPU), counted(int(u.TokensIn), "token"), u.TokensOut, cost)
	w := newTable(c.App.Writer, 0, 2, 2, ' ', 0)
	for _, e := range t.Timeline {
		who := e.Actor
		if who == "" {
			who = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Time.UTC().Format("15:04:05.000"), e.Type, who, strings.ReplaceAll(e.Summary, "\t", " "))
	}
	w.Flush()
	for _, p := range t.Problems {
		errf(c, "tavern: %s\n", p)
	}
}

func printSnapshot(c *cli.Context, s *trace.Snapshot) {
	if !s.Exists {
		outf(c, "%s did not exist at %s\n", s.Ref, schema.FormatTime(s.At.Time))
	} else {
		outf(c, "%s at %s: %s", s.Ref, schema.FormatTime(s.At.Time), s.Path)
		if s.Rev != "" {
			outf(c, " rev %s (since %s)", s.Rev, schema.FormatTime(s.Since.Time))
		}
		outf(c, "\n")
	}
	if s.Item != nil {
		outf(c, "item state: %s", s.Item.State)
		if s.Item.Holder != "" {
			outf(c, " by %s (attempt %d)", s.Item.Holder, s.Item.Attempt)
		}
		if s.Item.Error != "" {
			outf(c, ", last error: %s", s.Item.Error)
		}
		outf(c, "\n")
	}
	if s.Source != "" {
		outf(c, "content (from %s):\n%s", s.Source, s.Content)
		if !strings.HasSuffix(s.Content, "\n") {
			outf(c, "\n")
		}
	}
	if s.Note != "" {
		outf(c, "note: %s\n", s.Note)
	}
	if len(s.After) > 0 {
		outf(c, "changed since:\n")
		for _, e := range s.After {
			outf(c, "  %s %s %s\n", schema.FormatTime(e.Time.Time), e.Type, e.Summary)
		}
	}
}
