package main

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func newQueueCommand() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "work queues: create, add, take, ls, retry",
		Description: `A queue is .tavern/queues/<Q>/queue.md plus one file per item in pending/,
claimed/, done/ and dead/. Item ids are p<priority>-<uuidv7> (priority 0 is
the highest, 99 the lowest), so ` + "`ls pending/`" + ` is the take order.

Examples:
   tavern queue create build --max-attempts 3 --lease 5m
   id=$(tavern queue add build --title "compile parser")
   tavern queue take build --json
   tavern queue ls`,
		Subcommands: []*cli.Command{
			newQueueAddCommand(),
			newQueueCreateCommand(),
			newQueueLsCommand(),
			newQueueRetryCommand(),
			newQueueTakeCommand(),
		},
	}
}

func newQueueCreateCommand() *cli.Command {
	return &cli.Command{
		Name:      "create",
		Usage:     "create a queue",
		ArgsUsage: "Q",
		Description: `Writes .tavern/queues/Q/queue.md and the pending/ claimed/ done/ dead/
directories. Priority 0 is the highest (0..99): it orders multi-queue take and
weights stealing. Durations are Go durations (90s, 5m, 1h). --on-dead
"notify CHANNEL" needs an existing channel (an unknown one exits 3 and
creates nothing).

Examples:
   tavern queue create build
   tavern queue create review --priority 2 --max-attempts 5 --lease 10m --backoff 30s --no-steal
   tavern queue create code --on-dead "ask parent"`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "priority", Usage: "queue priority, 0 (highest) .. 99"},
			&cli.IntFlag{Name: "max-attempts", Usage: "claims before an item goes to dead/", DefaultText: "tavern.md default_max_attempts"},
			&cli.DurationFlag{Name: "lease", Usage: "claim lease", DefaultText: "tavern.md default_lease"},
			&cli.DurationFlag{Name: "backoff", Usage: "delay after the first failure, doubled per attempt (0: retry at once)", DefaultText: "10s"},
			&cli.DurationFlag{Name: "backoff-max", Usage: "backoff cap (0: retry at once)", DefaultText: "10m"},
			&cli.DurationFlag{Name: "lease-grace", Usage: "how long a hung holder keeps an expired claim (0: reclaimed as its lease ends); a hung spawn instance's processes are then killed before the item goes back", DefaultText: "30s"},
			&cli.StringFlag{Name: "on-empty", Usage: "what pools do when it is empty: idle | hibernate | terminate | steal", Action: choiceGiven("on-empty", "idle, hibernate, terminate or steal")},
			&cli.BoolFlag{Name: "no-steal", Usage: "other queues' workers may not steal from this one"},
			&cli.StringFlag{Name: "on-dead", Usage: "where dead items are escalated: 'ask parent' | 'ask user' | 'notify CHANNEL'"},
			jsonFlag(),
		},
		Action: runQueueCreate,
	}
}

func runQueueCreate(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("queue create takes one queue name")
	}
	if _, err := queues.ParseOnDead(c.String("on-dead")); err != nil {
		return err
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	q, err := b.CreateQueue(c.Args().First(), queues.QueueOptions{
		Priority: c.Int("priority"), MaxAttempts: c.Int("max-attempts"), Lease: c.Duration("lease"),
		Backoff: c.Duration("backoff"), BackoffMax: c.Duration("backoff-max"), LeaseGrace: c.Duration("lease-grace"),
		OnEmpty: c.String("on-empty"), NoSteal: c.Bool("no-steal"), OnDead: c.String("on-dead"),
		Explicit: explicit(c, "max-attempts", "lease", "backoff", "backoff-max", "lease-grace"),
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, docJSON(s, q.Doc, true))
	}
	outf(c, "%s\n", q.Path)
	return nil
}

func newQueueAddCommand() *cli.Command {
	return &cli.Command{
		Name:      "add",
		Usage:     "enqueue an item; prints its id",
		ArgsUsage: "Q",
		Description: `Creates queues/Q/pending/<id>.md; the body (--body FILE, or - for stdin) is
the assignment. The id is p<priority>-<uuidv7>, so pending/ lists in take order.
Priority: 0 (highest) .. 99; anything else is rejected (exit 2). Every
--depends-on must name an existing item (its id, a unique prefix of it,
QUEUE/ID as ls prints it, or its file's path; the id is recorded); the item
is claimable once all of them are in done/. A dependency graph with a cycle is rejected (exit 2).

Examples:
   id=$(tavern queue add build --title "compile parser" --priority 1)
   tavern queue add build --title "link" --depends-on "$id" --body task.md
   tavern queue add deploy --title "ship 2.0" --gate human`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "title", Usage: "one-line title"},
			&cli.IntFlag{Name: "priority", Usage: "0 (highest) .. 99"},
			&cli.StringSliceFlag{Name: "depends-on", Usage: "item `ID` that must be done first (repeatable)"},
			&cli.IntFlag{Name: "max-attempts", Usage: "claims before the item goes to dead/", DefaultText: "the queue's max_attempts"},
			&cli.StringFlag{Name: "gate", Usage: "human: a person approves (tavern approve) before the item is done"},
			bodyFlag(),
			jsonFlag(),
		},
		Action: runQueueAdd,
	}
}

func runQueueAdd(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("queue add takes one queue name")
	}
	body, err := readBody(c)
	if err != nil {
		return err
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	by, err := actorOrUser(c, s)
	if err != nil {
		return err
	}
	// Each --depends-on names an item as every ITEM argument does (its
	// id, a unique prefix, QUEUE/ID as ls prints it, its file's path);
	// the item records the id.
	var deps []string
	for _, ref := range c.StringSlice("depends-on") {
		id, err := itemRef(b, ref)
		if err != nil {
			return err
		}
		deps = append(deps, id)
	}
	it, err := b.Add(c.Args().First(), queues.AddOptions{
		Title: c.String("title"), Priority: c.Int("priority"), DependsOn: deps,
		MaxAttempts: c.Int("max-attempts"), Body: body, Gate: c.String("gate"), By: by,
		Explicit: explicit(c, "max-attempts"),
	})
	if err != nil {
		return err
	}
	// Made, as the contract says (`queue add Q` prints the id), but a
	// worker is handed nothing: most likely the title was forgotten.
	if strings.TrimSpace(c.String("title")) == "" && len(bytes.TrimSpace(body)) == 0 {
		warnf(c, errUsage, "item %s has no title and no body: give one with --title TEXT or --body FILE", it.ID)
	}
	if c.Bool("json") {
		return printJSON(c, itemObject(s, it))
	}
	outf(c, "%s\n", it.ID)
	return nil
}

func newQueueTakeCommand() *cli.Command {
	return &cli.Command{
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
stderr (path:line:col) and skipped; with --json they are in the answer's
invalid and blocked instead (in the error object when nothing is claimable).
Exit 3 if nothing is claimable (after --wait).

An item whose work is done (work_done: a spawn ran its command to success,
waited at a human gate and was interrupted there) is claimed like any other,
but its work is not to be done again: stderr says so, names the gates it
waits at and the next step (tavern approve or reject the gate, then tavern
item done); with --json: work_done: true, waits_at, next_step.

The claim is lease-only (this process exits at once): renew it with
` + "`tavern item renew`" + ` or it returns to pending when the lease runs out. With
--as AGENT while AGENT's liveness lock (.locks/agents/AGENT.lock, held by its
spawn wrapper) is held, the claim is a liveness claim tied to that lock:
when the wrapper dies the item returns to pending at the next take or reap,
without waiting for the lease. An agent that is down takes nothing (exit 4):
one in state failed (on every machine: its document says so), or whose spawn
wrapper died on this machine (working in its document, not reaped yet; another
machine's wrapper is that machine's to reap); revive it first (tavern agent
state AGENT idle, or a spawn).

Examples:
   read id attempt < <(tavern queue take build | head -1)
   tavern queue take build,docs --steal --wait 30s --json`,
		Flags: []cli.Flag{
			asFlag(),
			waitFlag("wait up to `DUR` for an item (event-driven)"),
			&cli.BoolFlag{Name: "steal", Usage: "take from other stealable queues when these are empty"},
			jsonFlag(),
		},
		Action: runQueueTake,
	}
}

func runQueueTake(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("queue take takes Q[,Q2...]")
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	opt := queues.TakeOptions{Queues: splitList([]string{c.Args().First()}), Steal: c.Bool("steal"), Wait: c.Duration("wait"), As: as.Name}
	if as.Agent {
		opt.Liveness = queues.AgentLock
		agents.GuardTake(s, &opt) // a failed or dead agent claims nothing (exit 4)
	}
	cl, err := b.Take(c.Context, opt)
	if err != nil {
		warnEmpty(c, err)
		return err
	}
	return printClaim(c, s, b, cl)
}

// printClaim prints what take and next --take claimed: "ID ATTEMPT" and
// the file, after the warnings of what it saw besides; with --json the
// item object with them in invalid and blocked. An item whose work is
// done (queues.DoneWork) is said to be so, with the gates it waits at
// and what to do next, so that nobody redoes the work.
func printClaim(c *cli.Context, s *docstore.Store, b *queues.Broker, cl *queues.Claim) error {
	diag := cl.Notes
	if diag == nil {
		diag = &queues.Diagnostics{}
	}
	done := b.DoneWork(cl.Item)
	if c.Bool("json") {
		out := &claimJSON{itemJSON: itemObject(s, cl.Item),
			Invalid: errorsJSON(diag.Invalid), Blocked: blockedJSON(diag.Blocked)}
		if done != nil {
			out.WorkDone, out.WaitsAt, out.NextStep = true, done.GateIDs(), done.Next()
		}
		return printJSON(c, out)
	}
	warnDiag(c, diag.Invalid, diag.Blocked)
	if done != nil {
		// On stderr: stdout's "ID ATTEMPT" and file are what scripts read.
		errf(c, "tavern: %s: its work is done already (work_done %s, by an earlier claim)%s; %s\n",
			cl.ID, done.At.UTC().Format(time.RFC3339), waitsAt(done), done.Next())
	}
	outf(c, "%s %d\n", cl.ID, cl.Attempt)
	_, err := c.App.Writer.Write(cl.Doc.Bytes())
	return err
}

// warnEmpty prints, as text, what a take that found nothing to claim saw
// besides (invalid files, blocked items). With --json they are in the
// error object instead (jsonError), which reportError prints.
func warnEmpty(c *cli.Context, err error) {
	var ee *queues.EmptyError
	if !c.Bool("json") && errors.As(err, &ee) && ee.Diag != nil {
		warnDiag(c, ee.Diag.Invalid, ee.Diag.Blocked)
	}
}

func newQueueLsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "queue depths per state, oldest pending age, claim owners",
		ArgsUsage: "[Q]",
		Description: `One line per queue (or just Q): items per state; of the pending ones how many
are ready, in backoff, waiting for dependencies; the age of the oldest pending
item; who holds the claims (a holder that died and was not reaped yet is shown
as dead: NAME(N, D dead)). With coordination etcd or git, an item another
machine holds, whose copy here stays pending until the next sync, is counted
as claimed by its holder (JSON: claimed_elsewhere, per machine), and an item
another machine finished as done or dead (JSON: done_elsewhere,
dead_elsewhere, per machine); with the engine out of reach, a warning says
such items may be counted ready (a JSON error object on stderr under --json). Items blocked by a dead dependency and invalid
item files are reported on stderr (path:line:col); with --json they are in
each queue's blocked and invalid, and a queue file that does not parse is a
JSON error object on stderr. With coordination git each listing fetches the
remote's claim refs; --max-age DUR lists from the refs an earlier command
fetched from the same remote less than DUR ago instead, and a warning says
how old that view is (a JSON error object on stderr under --json): for a
script or status line that polls.

Examples:
   tavern queue ls
   tavern queue ls build --json
   tavern queue ls --max-age 10s`,
		Flags: []cli.Flag{jsonFlag(), &cli.DurationFlag{Name: "max-age", Action: notNegative("max-age"),
			Usage: "with coordination git, count other machines' claims from a fetch of the claim refs up to `DUR` old (0: fetch now)"}},
		Action: runQueueLs,
	}
}

func runQueueLs(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("queue ls takes at most one queue name")
	}
	_, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	var names []string
	if c.NArg() == 1 {
		names = []string{c.Args().First()}
	} else {
		qs, errs := b.Queues()
		if c.Bool("json") {
			// A queue whose file does not parse has no element of the
			// array to carry it: an error object each, as ls's.
			for _, e := range errs {
				warn(c, e)
			}
		} else {
			warnDiag(c, errs, nil)
		}
		for _, q := range qs {
			names = append(names, q.Name)
		}
	}
	stats, view, err := b.StatsWithEngineWithin(names, c.Duration("max-age"))
	if view != nil {
		warn(c, view) // a JSON object under --json
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, queueStatsJSON(stats, time.Now()))
	}
	printQueueStats(c, stats, time.Now())
	for _, st := range stats {
		warnDiag(c, st.Invalid, st.Blocked)
	}
	return nil
}

func queueStatsJSON(stats []*queues.Stats, now time.Time) []map[string]any {
	out := []map[string]any{}
	for _, st := range stats {
		m := map[string]any{
			"queue": st.Queue, "priority": st.Priority, "steal": st.Steal, "on_empty": st.OnEmpty,
			"pending": st.Pending, "claimed": st.Claimed, "done": st.Done, "dead": st.Dead,
			"ready": st.Ready, "backoff": st.Backoff, "waiting": st.Waiting, "hung": st.Hung,
			"blocked": blockedJSON(st.Blocked), "invalid": errorsJSON(st.Invalid), "owners": st.Owners, "dead_owners": st.DeadOwners,
			"claimed_elsewhere": st.Elsewhere, "done_elsewhere": st.DoneElsewhere, "dead_elsewhere": st.DeadElsewhere,
		}
		if !st.OldestPending.IsZero() {
			m["oldest_pending"] = schema.FormatTime(st.OldestPending)
			m["oldest_pending_age_seconds"] = now.Sub(st.OldestPending).Seconds()
		}
		out = append(out, m)
	}
	return out
}

func printQueueStats(c *cli.Context, stats []*queues.Stats, now time.Time) {
	tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPRI\tPENDING\tREADY\tBACKOFF\tWAITING\tBLOCKED\tCLAIMED\tDONE\tDEAD\tOLDEST\tOWNERS")
	for _, st := range stats {
		age := "-"
		if !st.OldestPending.IsZero() {
			age = now.Sub(st.OldestPending).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", st.Queue, st.Priority, st.Pending, st.Ready,
			st.Backoff, st.Waiting, len(st.Blocked), st.Claimed, st.Done, st.Dead, age, owners(st.Owners, st.DeadOwners))
	}
	tw.Flush()
}

// owners renders claim holders as NAME(N), or NAME(N, D dead) when D of
// the claims have a dead holder that no reaper has seen yet.
func owners(m, dead map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for k, n := range m {
		if d := dead[k]; d > 0 {
			out = append(out, fmt.Sprintf("%s(%d, %d dead)", k, n, d))
			continue
		}
		out = append(out, fmt.Sprintf("%s(%d)", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func newQueueRetryCommand() *cli.Command {
	return &cli.Command{
		Name:      "retry",
		Usage:     "move dead items back to pending",
		ArgsUsage: "Q [ID...]",
		Description: `Moves the given dead items (all of Q's dead items if none are given) back to
pending/ with attempts reset to 0; last_error is kept. An ID may be a unique
prefix, QUEUE/ID (as ls prints it) or the item's file. Every ID is checked before any item moves: one that names no item
exits 3, an item that is not in dead/ exits 4, and nothing is retried.

Examples:
   tavern queue retry build
   tavern queue retry build p01-0193...`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runQueueRetry,
	}
}

func runQueueRetry(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("queue retry takes Q [ID...]")
	}
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	items, err := b.Retry(c.Args().First(), c.Args().Slice()[1:]...)
	if c.Bool("json") {
		out := []*itemJSON{}
		for _, it := range items {
			out = append(out, itemObject(s, it))
		}
		if perr := printJSON(c, out); err == nil {
			err = perr
		}
		return err
	}
	for _, it := range items {
		outf(c, "%s pending\n", it.ID)
	}
	if err == nil && len(items) == 0 {
		// Nothing printed and exit 0 read as "done"; say there was
		// nothing to do (stderr: stdout stays the list of ids).
		errf(c, "tavern: queue %s has no dead items to retry\n", view.Visible(c.Args().First()))
	}
	return err
}

// warnDiag prints what take/ls saw besides claimable items: invalid
// files with path:line:col and items blocked by dead dependencies. Text
// only: with --json they belong in the answer (errorsJSON, blockedJSON).
func warnDiag(c *cli.Context, invalid []error, blocked []queues.Blocked) {
	for _, e := range invalid {
		errf(c, "tavern: warning: %s\n", view.Visible(e.Error()))
	}
	for _, bl := range blocked {
		errf(c, "tavern: warning: %s\n", view.Visible(bl.String()))
	}
}

// claimJSON is the JSON of a claim (take, next --take): the item and
// what the take saw besides, as queue ls --json shows them.
type claimJSON struct {
	*itemJSON
	Invalid []map[string]any    `json:"invalid"`
	Blocked []map[string]string `json:"blocked"`
	// An item whose work is done (queues.DoneWork): the gates it waits
	// at and what to do next instead of the work.
	WorkDone bool     `json:"work_done,omitempty"`
	WaitsAt  []string `json:"waits_at,omitempty"`
	NextStep string   `json:"next_step,omitempty"`
}

// waitsAt names the gates that hold an item whose work is done.
func waitsAt(w *queues.DoneWork) string {
	if len(w.Gates) == 0 {
		return ""
	}
	return " and waits at gate " + strings.Join(w.GateIDs(), ", ")
}

// itemJSON is the JSON of an item: the `show --json` object plus id,
// queue, state and attempt.
type itemJSON struct {
	*docObject
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	State   string `json:"state"`
	Attempt int    `json:"attempt"`
}

func itemObject(s *docstore.Store, it *queues.Item) *itemJSON {
	return &itemJSON{docObject: docJSON(s, it.Doc, true), ID: it.ID, Queue: it.Queue, State: it.State, Attempt: it.ClaimAttempt}
}

func blockedJSON(bl []queues.Blocked) []map[string]string {
	out := []map[string]string{}
	for _, b := range bl {
		out = append(out, map[string]string{"id": b.ID, "queue": b.Queue, "path": b.Path, "dep": b.Dep, "dep_state": b.DepState})
	}
	return out
}

func errorsJSON(errs []error) []map[string]any {
	out := []map[string]any{}
	for _, e := range errs {
		path, line, col := docstore.Position(e)
		out = append(out, map[string]any{"error": e.Error(), "path": path, "line": line, "col": col})
	}
	return out
}
