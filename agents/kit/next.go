package kit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// NextItem is an item offered by Next: claimable now, held by nobody.
type NextItem struct {
	ID       string `json:"id"`
	Queue    string `json:"queue"`
	Title    string `json:"title,omitempty"`
	Priority int    `json:"priority"`
	Attempts int    `json:"attempts,omitempty"`
	Path     string `json:"path"`
	// An item whose work is done (queues.DoneWork: an earlier claim ran
	// its command to success, then gave it back undecided at a gate): the
	// gates it waits at and what whoever takes it does instead of the
	// work, as a take says, so that a listing does not offer it as work.
	WorkDone bool     `json:"work_done,omitempty"`
	WaitsAt  []string `json:"waits_at,omitempty"`
	NextStep string   `json:"next_step,omitempty"`
}

// primeLine is the item as a prime lists it; one whose work is done says
// so, so that nobody takes it to redo the work.
func (n NextItem) primeLine() string {
	line := fmt.Sprintf("- %s/%s %q", n.Queue, n.ID, n.Title)
	if n.WorkDone {
		line += " (work done"
		if len(n.WaitsAt) > 0 {
			line += ", waits at gate " + strings.Join(n.WaitsAt, ", ")
		}
		line += ")"
	}
	return line
}

// MarkDoneWork fills n's work_done, waits_at and next_step from it when
// its work is done (queues.Broker.DoneWork); otherwise n is unchanged.
func MarkDoneWork(b *queues.Broker, it *queues.Item, n *NextItem) {
	if w := b.DoneWork(it); w != nil {
		n.WorkDone, n.WaitsAt, n.NextStep = true, w.GateIDs(), w.Next()
	}
}

// NextOptions tune Next.
type NextOptions struct {
	// Queues to look in, in this order; empty: the agent's own queues
	// (agents/<agent>.md queues:), else every queue by queue priority.
	Queues []string
	Limit  int // items to offer (default 1)
	Now    time.Time
	// Diag, when set, gets what Next passed over that will not become
	// claimable by waiting: item files that do not parse or validate
	// (path:line:col) and items whose dependency is dead or missing, as
	// Take reports them. A listing that only said nothing would read as
	// "no work".
	Diag *queues.Diagnostics
	// Local answers from this machine's state without asking the
	// coordination engine (prime: a session's start must not wait on
	// the network for a hint; take still asks).
	Local bool
	// MaxAge lets the listing use the engine's view of other machines'
	// claims up to this old, as an earlier command fetched it (git:
	// without a fetch of its own); Diag.View then says how old
	// (*queues.EngineViewAgeError). It only suggests: take always asks.
	MaxAge time.Duration
}

// Next answers "what should I do next": the first claimable pending items
// of the agent's queues, in take order (queue priority, then item priority
// and age). It only offers items in pending/ that no one holds: not an
// item with a claimed copy (a crash left both), not one the coordination
// engine says another machine holds or finished, not one whose not_before
// is in the future or whose dependencies are not all done. It does not
// claim; Take does. The items the agent already holds are in Held.
func Next(b *queues.Broker, agent string, opt NextOptions) ([]NextItem, error) {
	if opt.Limit <= 0 {
		opt.Limit = 1
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	names, err := nextQueues(b, agent, opt.Queues)
	if err != nil {
		return nil, err
	}
	// An item another machine holds or finished is pending here until
	// the sync: only the engine knows, and take passes it over. Out of
	// reach, it is said (as queue ls does) and this machine's state shown.
	var elsewhere map[string]queues.ClaimState
	if !opt.Local {
		var view error
		va := &queues.ViewAge{MaxAge: opt.MaxAge}
		elsewhere, view = b.ElsewhereWithin(names, va)
		if view == nil && !va.At.IsZero() {
			path := "queues"
			if len(names) == 1 {
				path += "/" + names[0]
			}
			view = &queues.EngineViewAgeError{Op: "list", Path: path, At: va.At, Now: time.Now(), MaxAge: opt.MaxAge}
		}
		if opt.Diag != nil {
			opt.Diag.View = view
		}
	}
	s := b.Store()
	out := []NextItem{}
	for _, q := range names {
		ids, err := pendingIDs(s, q)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if _, ok := elsewhere[queues.ItemKey(q, id)]; ok {
				continue
			}
			it, ok := claimable(b, q, id, opt.Now, opt.Diag)
			if !ok {
				continue
			}
			out = append(out, it)
			if len(out) >= opt.Limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// nextQueues is the list of queues to look in: given, else the agent's
// own, else all by priority.
//
// Each named queue must exist: a queue given that names nothing, or one
// of the agent's own that was removed since, is a *schema.UnknownError
// (exit 3 with its name), not an empty list that reads as "no work".
func nextQueues(b *queues.Broker, agent string, given []string) ([]string, error) {
	if len(given) > 0 {
		for _, q := range given {
			if err := queues.CheckQueue(b.Store(), q); err != nil {
				return nil, err
			}
		}
		return given, nil
	}
	if agent != "" {
		if d, err := b.Store().Get(agents.AgentPath(agent)); err == nil {
			own := d.Strings("queues")
			if q := d.String("queue"); q != "" && len(own) == 0 {
				own = []string{q}
			}
			for _, q := range own {
				if err := queues.CheckQueue(b.Store(), q); err != nil {
					return nil, fmt.Errorf("agent %s's queues (%s): %w", agent, d.Path, err)
				}
			}
			if len(own) > 0 {
				return own, nil
			}
		}
	}
	qs, _ := b.Queues() // sorted by priority; unreadable queue files are skipped
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names, nil
}

// pendingIDs lists queues/<q>/pending/ in take order (ids sort by
// priority, then age).
func pendingIDs(s *docstore.Store, queue string) ([]string, error) {
	paths, err := s.Docs("queues/" + queue + "/" + queues.Pending)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(paths))
	for i, p := range paths {
		ids[i] = strings.TrimSuffix(path.Base(p), ".md")
	}
	sort.Strings(ids)
	return ids, nil
}

func claimable(b *queues.Broker, queue, id string, now time.Time, diag *queues.Diagnostics) (NextItem, bool) {
	if diag == nil {
		diag = &queues.Diagnostics{}
	}
	s := b.Store()
	rel := queues.ItemPath(queue, queues.Pending, id)
	d, err := s.Get(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return NextItem{}, false // gone meanwhile
	}
	if err != nil {
		diag.Invalid = append(diag.Invalid, err)
		return NextItem{}, false
	}
	if errs := d.Validate(false); len(errs) > 0 {
		diag.Invalid = append(diag.Invalid, &docstore.ValidationError{Path: rel, Errors: errs})
		return NextItem{}, false
	}
	if abs, err := s.Abs(queues.ItemPath(queue, queues.Claimed, id)); err == nil {
		if _, err := os.Lstat(abs); err == nil {
			return NextItem{}, false // a claimed copy: someone holds it
		}
	}
	if t, ok := d.Time("not_before"); ok && t.After(now) {
		return NextItem{}, false
	}
	for _, dep := range d.Strings("depends_on") {
		it, err := b.Get(dep)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			diag.Blocked = append(diag.Blocked, queues.Blocked{ID: id, Queue: queue, Path: rel, Dep: dep, DepState: "missing"})
			return NextItem{}, false
		case err == nil && it.State == queues.Dead:
			diag.Blocked = append(diag.Blocked, queues.Blocked{ID: id, Queue: queue, Path: rel, Dep: dep, DepState: "dead"})
			return NextItem{}, false
		case err != nil || it.State != queues.Done:
			return NextItem{}, false
		}
	}
	if d.Has("gate") || d.Has("gates") {
		// Held back at a claim-stage gate: Take would pass it over.
		if it, err := b.Get(id); err != nil || b.ClaimGated(it) {
			return NextItem{}, false
		}
	}
	p, _ := d.Int("priority")
	if p == 0 {
		if ip, ok := queues.IDPriority(id); ok {
			p = int64(ip)
		}
	}
	n, _ := d.Int("attempts")
	out := NextItem{ID: id, Queue: queue, Title: d.String("title"), Priority: int(p), Attempts: int(n), Path: rel}
	if d.Has("work_done") {
		if it, err := b.Get(id); err == nil {
			MarkDoneWork(b, it, &out)
		}
	}
	return out, true
}

// Take claims the next item for agent, as Next would offer it: a liveness
// claim tied to the agent's lock when a process (a spawn wrapper, a hooked
// session's keeper) holds it, else a lease the agent renews.
func Take(ctx context.Context, b *queues.Broker, agent string, queueNames []string, wait time.Duration) (*queues.Claim, error) {
	if agent == "" {
		return nil, ErrNoAgent
	}
	names, err := nextQueues(b, agent, queueNames)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		// A store with no queue has nothing to claim (exit 3), which is
		// not a usage error of the caller's.
		return nil, ErrNoQueue
	}
	// AgentLock falls back to a lease by itself when nobody holds the
	// agent's lock.
	opt := queues.TakeOptions{Queues: names, As: agent, Wait: wait, Liveness: queues.AgentLock}
	agents.GuardTake(b.Store(), &opt) // a failed or dead agent claims nothing
	return b.Take(ctx, opt)
}

// LeaseNote is what a claim taken as a lease (no session or spawn keeps
// the agent alive, so nothing holds it for the agent's life) must tell
// whoever took it: it lapses, and the item goes back to the queue for
// another agent, unless renewed. "" for a claim tied to the agent's life.
func LeaseNote(c *queues.Claim, agent string) string {
	if c == nil || c.Doc == nil || c.Doc.String("claim_kind") != "lease" {
		return ""
	}
	until, ok := c.Doc.Time("lease_until")
	if !ok {
		return ""
	}
	return fmt.Sprintf("This claim is a lease until %s: renew it while you work (`tavern item renew %s --attempt %d --as %s`) or it goes back to the queue.",
		schema.FormatTime(until), c.ID, c.Attempt, agent)
}
