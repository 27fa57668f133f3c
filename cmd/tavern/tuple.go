package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newTupleCommand() *cli.Command {
	waitFlag := func() cli.Flag {
		return waitFlag("block up to `DUR` for a match (like rdp/inp without it)")
	}
	readCmd := func(name, alias, usage, examples string, take bool) *cli.Command {
		return &cli.Command{
			Name:        name,
			Aliases:     []string{alias},
			Usage:       usage,
			ArgsUsage:   "TYPE [PATTERN...]",
			Description: examples,
			Flags:       []cli.Flag{waitFlag(), jsonFlag()},
			Action:      func(c *cli.Context) error { return runTupleRead(c, take) },
		}
	}
	return &cli.Command{
		Name:  "tuple",
		Usage: "the Linda tuple space: out, rd, in, ls, gc",
		Description: `Tuples are documents under .tavern/tuples/<TYPE>/<ID>.md; their frontmatter
fields are the tuple's values. IDs are time-ordered, so rd and in take the
oldest match.

PATTERN terms (all must match):
   field=value    actual value          field=?     formal: any value, captured
   field!=value   field<N  field<=N     field>N  field>=N
   field~text     substring (case-insensitive)
   field?         field exists          field=\?    the literal value "?"
created, updated and expires are times: ordered by a bound that is no
time (RFC 3339, a date 2026-11-26, a month 2026-11 or a year 2026),
a pattern exits 2.

rd returns a copy; in takes the tuple (exactly one caller gets it) and
archives it to .tavern/.trash/. Without --wait they answer at once (rdp,
inp: these names refuse --wait, exit 2); with --wait they block until a
match is written or DUR passes, woken by filesystem events. Exit 3: nothing matched / timed out. Tuples past
their --ttl are invisible and collected by gc (and lazily).
The types token and reservation are written and taken by their own
commands only (tavern token, tavern reserve/unreserve), which keep their
rules: out and in refuse them (exit 2); rd and ls read them.

Examples:
   tavern tuple out job status=pending n=3 --ttl 1h
   tavern tuple in job status=pending n=? --wait 30s --json
   tavern tuple rd result task=42 --wait 5m
   tavern tuple ls job 'n>2'`,
		Subcommands: []*cli.Command{
			{
				Name:      "out",
				Usage:     "write a tuple; prints its id",
				ArgsUsage: "TYPE field=value...",
				Description: `Write a tuple; prints its id. A new TYPE is named like an agent (lower-case
letters, digits, '-', '_' and '.'; exit 2 otherwise); types that exist are
written to as they are. token and reservation are refused (exit 2): use
tavern token init and tavern reserve, which keep their rules.

Examples:
   tavern tuple out job status=pending n=3 --ttl 1h
   echo "details" | tavern tuple out job status=pending --body -`,
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "ttl", Usage: "the tuple expires after `DUR` (0: never)", Action: notNegative("ttl")},
					bodyFlag(), jsonFlag(),
				},
				Action: runTupleOut,
			},
			readCmd("rd", "rdp", "read a copy of the oldest matching tuple", `Read a copy of the oldest matching tuple.

Examples:
   tavern tuple rd job status=pending       # rdp: answer at once
   tavern tuple rd result task=42 --wait 5m --json`, false),
			readCmd("in", "inp", "take the oldest matching tuple", `Take the oldest matching tuple.

Examples:
   tavern tuple in job status=pending n=?  # inp: answer at once
   tavern tuple in job status=pending --wait 30s --json`, true),
			{
				Name:      "ls",
				Usage:     "list live tuples of a type (or the types)",
				ArgsUsage: "[TYPE [PATTERN...]]",
				Description: `List live tuples of a type (or the types).

With TYPE, --json prints an array of tuples (those matching the PATTERNs).
Without, it lists the types and how many live tuples each has: a table
(TYPE, LIVE), or with --json an array of {"type", "count"} objects ([]
when there are none).

Examples:
   tavern tuple ls
   tavern tuple ls job 'n>2' --json`,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "body", Usage: "include bodies in --json output"}, jsonFlag()},
				Action: runTupleLs,
			},
			{
				Name:      "gc",
				Usage:     "archive expired tuples, return tuples of dead claimers, drop stale lock files",
				ArgsUsage: "[TYPE...]",
				Description: `Archive expired tuples, return tuples of dead claimers, drop stale lock files.

Examples:
   tavern tuple gc
   tavern tuple gc job --json`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runTupleGC,
			},
		},
	}
}

// tupleObject is the JSON shape of a tuple: the show --json object plus
// the tuple's id, type, own values and captured formals.
type tupleObject struct {
	*docObject
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Values   map[string]any `json:"values"`
	Expires  string         `json:"expires,omitempty"`
	Captures map[string]any `json:"captures,omitempty"`
}

func tupleJSON(s *docstore.Store, t *tuples.Tuple, withBody bool) *tupleObject {
	o := &tupleObject{docObject: docJSON(s, t.Doc, withBody), ID: t.ID, Type: t.Type, Values: t.Values(), Captures: t.Captures}
	if !t.Expires.IsZero() {
		o.Expires = schema.FormatTime(t.Expires)
	}
	return o
}

func runTupleOut(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("tuple out takes TYPE field=value...")
	}
	assigns, err := parseAssignments(c.Args().Slice()[1:])
	if err != nil {
		return err
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	t, err := sp.Out(c.Args().First(), nil, tuples.OutOptions{
		TTL:  c.Duration("ttl"),
		Body: body,
		Edit: func(d *docstore.Doc) error {
			for _, a := range assigns {
				switch a[0] {
				case schema.VersionField, "id", "created", "updated":
					return fmt.Errorf("%w: %q is set by the engine", tuples.ErrBadTuple, a[0])
				}
				if err := d.SetYAML(a[0], a[1]); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, tupleJSON(sp.Store(), t, true))
	}
	outf(c, "%s\n", t.ID)
	return nil
}

func runTupleRead(c *cli.Context, take bool) error {
	if c.NArg() < 1 {
		return usageErr("%s takes TYPE [PATTERN...]", c.Command.Name)
	}
	// rdp and inp are the names that answer at once: a --wait given to
	// them contradicts the name (the parent's first argument is the name
	// the command was called by).
	if l := c.Lineage(); len(l) > 1 && c.IsSet("wait") {
		if name := l[1].Args().First(); name == "rdp" || name == "inp" {
			return usageErr("%s answers at once: use `tavern tuple %s` to wait", name, c.Command.Name)
		}
	}
	typ := c.Args().First()
	p, err := tuples.ParsePattern(c.Args().Slice()[1:])
	if err != nil {
		return err
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	warnNearType(c, sp, typ)
	var t *tuples.Tuple
	switch wait := c.Duration("wait"); {
	case wait > 0:
		ctx, cancel := context.WithTimeout(c.Context, wait)
		defer cancel()
		if take {
			t, err = sp.In(ctx, typ, p)
		} else {
			t, err = sp.Rd(ctx, typ, p)
		}
		err = timedOut(err, wait, "no %s tuple matched", typ)
	case take:
		t, err = sp.Inp(typ, p)
	default:
		t, err = sp.Rdp(typ, p)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, tupleJSON(sp.Store(), t, true))
	}
	_, err = c.App.Writer.Write(t.Doc.Bytes())
	return err
}

// warnNearType says when typ has no tuples at all but is near a type that
// has: rd/in would find nothing, or wait for a tuple nobody writes. A
// reader may come before its writer, so it is a warning.
func warnNearType(c *cli.Context, sp *tuples.Space, typ string) {
	if exists, near, err := sp.KnownType(typ); err == nil && !exists && len(near) > 0 {
		warnf(c, schema.ErrLikelyTypo, "no tuple type %q yet; did you mean %s?", typ, schema.NearList(near))
	}
}

// tupleTypeCount is one line of tuple ls without a TYPE: a type and how
// many live tuples it has.
type tupleTypeCount struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

func runTupleLs(c *cli.Context) error {
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	if c.NArg() == 0 {
		types, err := sp.Types()
		if err != nil {
			return err
		}
		// A list, like every other listing's JSON (an array, [] when
		// empty), in the order of the human table.
		counts := make([]tupleTypeCount, 0, len(types))
		for _, typ := range types {
			ts, _ := sp.List(typ, nil)
			counts = append(counts, tupleTypeCount{Type: typ, Count: len(ts)})
		}
		if c.Bool("json") {
			return printJSON(c, counts)
		}
		tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TYPE\tLIVE")
		for _, tc := range counts {
			fmt.Fprintf(tw, "%s\t%d\n", tc.Type, tc.Count)
		}
		return tw.Flush()
	}
	if err := schema.ValidName(c.Args().First()); err != nil {
		return fmt.Errorf("tuple type: %w", err) // a bad name, not a list with a warning
	}
	p, err := tuples.ParsePattern(c.Args().Slice()[1:])
	if err != nil {
		return err
	}
	warnNearType(c, sp, c.Args().First())
	ts, errs := sp.List(c.Args().First(), p)
	for _, e := range errs {
		warn(c, e) // a JSON object under --json
	}
	if c.Bool("json") {
		out := make([]*tupleObject, 0, len(ts))
		for _, t := range ts {
			out = append(out, tupleJSON(sp.Store(), t, c.Bool("body")))
		}
		return printJSON(c, out)
	}
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tEXPIRES\tVALUES")
	now := time.Now()
	for _, t := range ts {
		exp := "-"
		if !t.Expires.IsZero() {
			exp = "in " + t.Expires.Sub(now).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, now.Sub(t.Created).Round(time.Second), exp, valuesText(t.Values(), 60))
	}
	return tw.Flush()
}

// valuesText renders values as sorted k=v pairs, cut at max bytes.
func valuesText(v map[string]any, max int) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, v[k])
	}
	s := strings.Join(parts, " ")
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

func runTupleGC(c *cli.Context) error {
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	for _, typ := range c.Args().Slice() {
		warnNearType(c, sp, typ) // a typo collects nothing: say so
	}
	st, err := sp.GC(c.Args().Slice()...)
	if c.Bool("json") {
		if perr := printJSON(c, map[string]int{"expired": st.Expired, "returned": st.Returned, "locks": st.Locks}); perr != nil {
			return perr
		}
	} else {
		outf(c, "expired %d, returned %d, lock files removed %d\n", st.Expired, st.Returned, st.Locks)
	}
	return err
}
