package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/queues"
)

func newNextCommand() *cli.Command {
	return &cli.Command{
		Name:  "next",
		Usage: "what should I do next: the first items nobody holds (--take claims one)",
		Description: `Lists the next claimable items of the agent's queues (its queues: field, else
every queue by priority), in the order take would claim them: pending, not
held by anyone, not_before passed, dependencies done. It never offers an item
someone holds (with coordination etcd or git it asks the engine, as queue ls
does: an item another machine holds or finished, pending here until the
sync, is not offered). Items the agent already holds come first, marked "held".
An item whose work is done (work_done: an earlier claim ran its command to
success, then gave it back at a gate) is marked "work done, waits at gate G"
(with --json: work_done: true, waits_at, next_step), as queue take says it.

--take claims the next item for the agent, like 'tavern queue take' (a
liveness claim while the agent's session or spawn wrapper runs, else a lease):
the first line is "ID ATTEMPT", then the item file; with --json the object
queue take --json prints (invalid item files and blocked items in it, not
as warnings on stderr). Exit 3 if nothing is claimable (after --wait).

Without --take next is a listing: with nothing to do it prints nothing ("[]"
with --json) and exits 0. Item files it passed over that do not parse, and
items blocked by a dead or missing dependency, are warnings on stderr
(path:line:col; JSON error objects with --json). With coordination etcd or
git and the engine out of reach (no sync remote), a warning says an item
listed may be held or finished on another machine, as queue ls's does (a
JSON error object on stderr under --json); the listing is this machine's.
With coordination git every listing fetches the claim refs; --max-age DUR
(for a script or status line that polls) lists from the refs an earlier
command fetched from the same remote less than DUR ago, without a fetch, and
warns how old that view is: an item taken elsewhere since may be offered
until DUR has passed. --take never uses it: a claim always asks the remote.
The agent is --as, else $TAVERN_AGENT, else the
person (who holds nothing listed here); one that names no agent exits 3
("unknown agent").

Examples:
   tavern next --as alice
   tavern next --as alice --max-age 10s
   read id attempt < <(tavern next --take --as alice | head -1)`,
		Flags: []cli.Flag{
			asFlag(),
			&cli.StringSliceFlag{Name: "queue", Usage: "look in `Q` only (repeatable, or Q1,Q2)"},
			limitFlag("offer up to `N` items", 3),
			&cli.BoolFlag{Name: "take", Usage: "claim the next item"},
			waitFlag("with --take: wait up to `DUR` for an item"),
			&cli.DurationFlag{Name: "max-age", Action: notNegative("max-age"),
				Usage: "coordination git: list from other machines' claims fetched up to `DUR` ago (no fetch; not with --take)"},
			jsonFlag(),
		},
		Action: runNext,
	}
}

func runNext(c *cli.Context) error {
	if c.IsSet("wait") && !c.Bool("take") {
		// A listing does not wait: the flag would be ignored silently.
		return usageErr("next --wait needs --take (a listing answers at once)")
	}
	if c.IsSet("max-age") && c.Bool("take") {
		// A claim decided on an older view could be another machine's.
		return usageErr("next --max-age is for the listing: --take always asks the remote")
	}
	var names []string
	for _, q := range c.StringSlice("queue") {
		for _, n := range strings.Split(q, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	// Who: the one identity rule (actorOf). An unknown agent is exit 3,
	// never an empty list that reads as "nothing to do".
	a, err := actorOf(c, s)
	if err != nil {
		return err
	}
	if c.Bool("take") {
		cl, err := kit.Take(c.Context, b, a.Name, names, c.Duration("wait"))
		if err != nil {
			warnEmpty(c, err)
			return err
		}
		return printClaim(c, s, b, cl)
	}
	type row struct {
		kit.NextItem
		Held    bool  `json:"held,omitempty"`
		Attempt int64 `json:"attempt,omitempty"`
	}
	agent := a.AgentName() // the person holds nothing listed here
	rows := []row{}
	if agent != "" {
		held, err := agents.ClaimedItems(s, agent)
		if err != nil {
			return err
		}
		for _, it := range held {
			r := row{NextItem: kit.NextItem{ID: it.ID, Queue: it.Queue, Title: it.Title, Path: it.Path}, Held: true, Attempt: it.Attempt}
			if qi, err := b.Get(it.ID); err == nil {
				kit.MarkDoneWork(b, qi, &r.NextItem)
			}
			rows = append(rows, r)
		}
	}
	var diag queues.Diagnostics
	next, err := kit.Next(b, agent, kit.NextOptions{Queues: names, Limit: c.Int("limit"), Diag: &diag, MaxAge: c.Duration("max-age")})
	if err != nil {
		return err
	}
	// What it passed over that waiting will not fix: warnings (JSON error
	// objects on stderr under --json, as ls's), so that a broken item file
	// is never a silent "nothing to do".
	if diag.View != nil {
		warn(c, diag.View) // a JSON object under --json, as queue ls's
	}
	if c.Bool("json") {
		for _, e := range diag.Invalid {
			warn(c, e)
		}
		for _, bl := range diag.Blocked {
			warn(c, &blockedError{bl})
		}
	} else {
		warnDiag(c, diag.Invalid, diag.Blocked)
	}
	for _, it := range next {
		rows = append(rows, row{NextItem: it})
	}
	if c.Bool("json") {
		if err := printJSON(c, rows); err != nil {
			return err
		}
	} else {
		tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
		for _, r := range rows {
			mark := "next"
			if r.Held {
				mark = fmt.Sprintf("held (attempt %d)", r.Attempt)
			}
			if r.WorkDone {
				// Not work to do: only its gates to see through.
				mark += ", work done"
				if len(r.WaitsAt) > 0 {
					mark += ", waits at gate " + strings.Join(r.WaitsAt, ", ")
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Queue, mark, r.Title)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil // a listing: nothing to do is an empty list, exit 0
}

// blockedError is a blocked item as an error, for warn: its position is
// the item's file, so the JSON error object names it.
type blockedError struct{ b queues.Blocked }

func (e *blockedError) Error() string { return e.b.String() }

func (e *blockedError) Position() (string, int, int) { return e.b.Path, 0, 0 }
