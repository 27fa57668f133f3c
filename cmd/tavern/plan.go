package main

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/plans"
	"github.com/tavernhq/tavern/schema"
)

func newPlanCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "markdown checklists as queues: import, sync, status",
		Description: `A plan is .tavern/plans/NAME.md: a markdown checklist whose unchecked boxes are
items of a queue. Nested boxes are dependencies of their parent (children are
done first); "(after: Title, Other)" in a box waits for those tasks too;
"(gate: human)" makes its item wait for ` + "`tavern approve`" + ` before it is done. The item's
body is the text under its box.

The plan and its items follow each other: a done item ticks its box (one
line changes); a box ticked by hand completes its item, "[-]" or a
struck-through ticked box cancels it, a new unchecked box becomes an item, a
removed box cancels its item (also when its tasks: entry was removed with it,
or a git checkout restored a plan older than the task). A cancelled task is
"won't do": the plan's items that waited for it (its parent, boxes whose
(after:) names it) stop waiting for it, and wait again if its box is
reopened; an item outside the plan that a person made wait for it is left
alone. Between its own items the plan says who waits for whom: a box moved
out from under its parent (or an (after:) taken out) is no longer waited
for by it, and a box moved under another is waited for by that one. Hand edits that contradict the engine (ticked while claimed, ticked
while a gate waits) are reported, never acted on.

Examples:
   tavern plan import launch.md --queue work
   tavern plan status launch
   tavern plan sync`,
		Subcommands: []*cli.Command{
			{
				Name:      "import",
				Usage:     "make plans/NAME.md and an item per unchecked box",
				ArgsUsage: "FILE.md",
				Description: `Copies FILE.md into .tavern/plans/NAME.md (the body byte for byte) and adds an
item to Q for every unchecked box, children before parents. Prints the plan's
path and the number of items. A plan that exists already exits 4, and so does a
FILE.md imported already under another name (a plan file is imported once:
the error names its plan); the plan records FILE.md as source:, relative to
the project root (the directory holding .tavern/). A plan whose
markers cannot be read (an (after:) naming no task, a cycle) exits 5 with
FILE:LINE and changes nothing. FILE.md that is a directory exits 2.

Examples:
   tavern plan import launch.md --queue work
   tavern plan import docs/todo.md --queue docs --name docs-todo --json`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "queue", Usage: "the queue `Q` the items go to (must exist)"},
					&cli.StringFlag{Name: "name", Usage: "the plan's `NAME`: lower-case letters, digits, '-', '_', '.' (default: the file name without .md)"},
					jsonFlag(),
				},
				Before: requireFlags("queue"),
				Action: runPlanImport,
			},
			{
				Name:      "sync",
				Usage:     "reconcile a plan and its items both ways (every plan without NAME)",
				ArgsUsage: "[NAME]",
				Description: `Ticks the boxes of done items and acts on hand edits of the plan file
(ticked, cancelled, reopened, added and removed boxes: a cancelled box
opened again brings its item back to pending). The plan's items stop
waiting for its cancelled tasks ("N dependencies dropped") and wait again
for reopened ones ("N dependencies added"). Prints a line per plan: what
it did, "N conflicts" when hand edits contradict the engine (a box ticked
or removed while its item is claimed, ticked while a gate waits), or "in
sync". Each conflict goes to stderr, and the command exits 4 while one
remains (with --json, the conflicts are in the report on stdout); the
rest of the sync is done all the same. A plan file that cannot be read
(frontmatter broken by a hand edit, or none: a checklist put in plans/ by hand,
not imported; the error says how to import it) is an error with its path:line:col
(exit 5), also without NAME; the other plans are synced. So is a plan whose
queue: was edited by hand to a name that names no queue (exit 3, the near
names; the rest of its sync is done). A conflict is journaled
(plan.conflict) once, when a sync first finds it, not at every sync,
status or pool tick that sees it again.

Examples:
   tavern plan sync launch
   tavern plan sync --json`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runPlanSync,
			},
			{
				Name:      "status",
				Usage:     "sync, then show a plan's progress box by box",
				ArgsUsage: "NAME",
				Description: `Syncs the plan (as plan sync, unless --no-sync), then lists its boxes
with the state of their items and what a pending one still waits for ("waits
for", or "blocked by" a dead one). The totals count each box by the state
listed for it: a box ticked by hand while its item is claimed is listed and
counted as claimed (a conflict, on stderr), not done. Conflicts do not
change the exit status here: status reports, plan sync exits 4.

Examples:
   tavern plan status launch
   tavern plan status launch --no-sync --json`,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "no-sync", Usage: "show without syncing first"}, jsonFlag()},
				Action: runPlanStatus,
			},
		},
	}
}

func runPlanImport(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("plan import takes one FILE.md")
	}
	file := c.Args().First()
	data, err := readInputFile("plan import", file, "a markdown file (FILE.md)")
	if err != nil {
		return err
	}
	name := c.String("name")
	// An empty --name (an unset "$PLAN") is not "no --name": the file's
	// name in its place would make a plan nobody named.
	if c.IsSet("name") && strings.TrimSpace(name) == "" {
		return usageErr("--name %q: empty; give the plan's name, or leave --name out for the file's name", name)
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := schema.ValidPlainName("plan", name); err != nil {
		if !c.IsSet("name") {
			return usageErr("%v (the name comes from the file name; give one with --name)", err)
		}
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
	// The library records it from the project root: give it the
	// file's whole path (the relative one is from here).
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	rep, err := plans.Import(b, plans.ImportOptions{Name: name, Queue: c.String("queue"), Source: file, File: abs, Data: data, By: by})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, rep)
	}
	outf(c, "%s: %s in queue %s\n", plans.Path(name), counted(len(rep.Added), "item"), c.String("queue"))
	return nil
}

func runPlanSync(c *cli.Context) error {
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	by, err := actorOrUser(c, s)
	if err != nil {
		return err
	}
	var reps []*plans.Report
	if c.NArg() == 0 {
		reps, err = plans.SyncAll(b, "")
	} else {
		for _, n := range c.Args().Slice() {
			r, serr := plans.Sync(b, n, plans.SyncOptions{By: by})
			if serr != nil {
				err = serr
				break
			}
			reps = append(reps, r)
		}
	}
	if c.Bool("json") {
		if err != nil && len(reps) == 0 {
			// Nothing synced (an unknown NAME): the error alone, not an
			// empty report that reads as a sync that found nothing.
			return err
		}
		if reps == nil {
			reps = []*plans.Report{}
		}
		if perr := printJSON(c, reps); perr != nil {
			return perr
		}
	} else {
		for _, r := range reps {
			printSyncReport(c, r)
		}
	}
	if err != nil {
		return err
	}
	// A hand edit the engine will not act on leaves plan and items
	// apart: that is a conflict (exit 4), already reported above.
	for _, r := range reps {
		if len(r.Conflicts) > 0 {
			return withCode(exitConflict, errSilent)
		}
	}
	return nil
}

func printSyncReport(c *cli.Context, r *plans.Report) {
	var parts []string
	for _, kv := range []struct {
		n    int
		what string
	}{{len(r.Ticked), "ticked"}, {len(r.Completed), "completed by hand"}, {len(r.Cancelled), "cancelled"}, {len(r.Reopened), "reopened"}, {len(r.Added), "added"}, {len(r.Adopted), "adopted"}} {
		if kv.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", kv.n, kv.what))
		}
	}
	if n := len(r.DepsDropped); n > 0 {
		parts = append(parts, counted(n, "dependency dropped", "dependencies dropped"))
	}
	if n := len(r.DepsAdded); n > 0 {
		parts = append(parts, counted(n, "dependency added", "dependencies added"))
	}
	if len(r.Conflicts) > 0 {
		parts = append(parts, counted(len(r.Conflicts), "conflict"))
	}
	if len(parts) == 0 {
		parts = append(parts, "in sync")
	}
	outf(c, "%s: %s\n", plans.Path(r.Plan), strings.Join(parts, ", "))
	for _, x := range r.Conflicts {
		errf(c, "%s: conflict: %s\n", plans.Path(r.Plan), x)
	}
	for _, n := range r.Notes {
		errf(c, "%s: %s\n", plans.Path(r.Plan), n)
	}
}

func runPlanStatus(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("plan status takes one NAME")
	}
	_, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	st, err := plans.GetStatus(b, c.Args().First(), !c.Bool("no-sync"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, st)
	}
	outf(c, "%s (queue %s): %d of %d done", st.Path, st.Queue, st.Done, st.Total)
	for _, kv := range []struct {
		n    int
		what string
	}{{st.Claimed, "in progress"}, {st.Pending, "pending"}, {st.Gated, "waiting for approval"}, {st.Dead, "dead"}, {st.Cancelled, "cancelled"}} {
		if kv.n > 0 {
			outf(c, ", %d %s", kv.n, kv.what)
		}
	}
	outf(c, "\n")
	w := newTable(c.App.Writer, 0, 2, 2, ' ', 0)
	// Dependencies are told by their box's title when they have one.
	titles := map[string]string{}
	for _, t := range st.Tasks {
		if t.Item != "" {
			titles[t.Item] = strconv.Quote(t.Title)
		}
	}
	named := func(ids []string) string {
		var out []string
		for _, id := range ids {
			out = append(out, cmp.Or(titles[id], id))
		}
		return strings.Join(out, ", ")
	}
	for _, t := range st.Tasks {
		state := t.State
		if t.Holder != "" {
			state += " by " + t.Holder
		}
		if t.Gate == "pending" && t.State != "done" {
			state += ", gate pending"
		}
		if waiting := slices.DeleteFunc(slices.Clone(t.WaitsFor), func(id string) bool { return slices.Contains(t.Blocked, id) }); len(waiting) > 0 {
			state += ", waits for " + named(waiting)
		}
		if len(t.Blocked) > 0 {
			state += ", blocked by " + named(t.Blocked) // dead or missing: never done
		}
		fmt.Fprintf(w, "%s- [%s] %s\t%s\t%s\n", strings.Repeat("  ", t.Depth), t.Box, t.Title, state, t.Item)
	}
	w.Flush()
	if st.Report != nil {
		for _, x := range st.Report.Conflicts {
			errf(c, "conflict: %s\n", x)
		}
	}
	return nil
}

// actorOrUser names who acts, for the record: the one rule (actorOf:
// --as, else $TAVERN_AGENT, else the person, "user").
func actorOrUser(c *cli.Context, s *docstore.Store) (string, error) {
	a, err := actorOf(c, s)
	return a.Name, err
}
