package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Item is a work item as read from its file. The directory it is in is
// its State.
type Item struct {
	ID           string
	Queue        string
	State        string // pending | claimed | done | dead
	Title        string
	Priority     int
	DependsOn    []string
	Attempts     int // claims so far (a claim counts when it is made)
	MaxAttempts  int // the item's own override; 0 = the queue's
	ClaimedBy    string
	ClaimAttempt int    // fencing token of the current (or last) claim
	ClaimKind    string // lease | liveness
	LivenessLock string // lock key whose holder keeps a liveness claim alive
	Instance     string // the spawn instance holding the claim ("" for none)
	LeaseUntil   time.Time
	NotBefore    time.Time
	Created      time.Time
	Started      time.Time
	Completed    time.Time
	HungSince    time.Time
	Result       string
	LastError    string
	DeadReason   string
	// Workflow fields (plans, gates, workspaces; see gate.go and
	// resolve.go).
	Plan      string   // the plan whose box made the item
	Gate      string   // "human": a person approves before it is done
	Gates     []string // ids of its gates (gates/<id>.md)
	Worktree  string
	Branch    string
	Base      string
	Merged    string
	Cancelled bool
	// WorkDone is when the item's command succeeded in a claim that a
	// complete-stage gate then held (WorkResult its result): the work is
	// done and waits only for a person; a later claim does not redo it
	// (Claim.MarkWorkDone).
	WorkDone   time.Time
	WorkResult string
	Path       string
	Doc        *docstore.Doc
}

// NewItemID returns a new item id: "p" + two-digit priority + "-" +
// UUIDv7, e.g. p05-019a8c8e-5f1c-7b7e-9a43-3f0b2a7c1d10. The id is the
// file's stem in every state directory, so `ls pending/` lists the queue
// in take order (priority, then age) and `tavern show items/ID` finds the
// item wherever it is.
func NewItemID(priority int) string {
	return fmt.Sprintf("p%02d-%s", priority, docstore.NewID())
}

// IDPriority returns the priority encoded in an id made by NewItemID.
func IDPriority(id string) (int, bool) {
	if len(id) < 4 || id[0] != 'p' || id[3] != '-' {
		return 0, false
	}
	n, err := strconv.Atoi(id[1:3])
	return n, err == nil
}

func itemFromDoc(d *docstore.Doc) (*Item, error) {
	var buf [3]string
	caps, ok := schema.Item.Captures(d.Path, buf[:0]) // queue, state, id
	if !ok || len(caps) != 3 {
		return nil, &ItemError{Op: "read", Path: d.Path, Err: errors.New("not an item path (queues/Q/STATE/ID.md)")}
	}
	it := &Item{ID: caps[2], Queue: caps[0], State: caps[1], Path: d.Path, Doc: d}
	it.Title = d.String("title")
	geti := func(k string) int {
		v, _ := d.Int(k)
		return int(v)
	}
	gett := func(k string) time.Time {
		t, _ := d.Time(k)
		return t
	}
	it.Priority = geti("priority")
	it.DependsOn = d.Strings("depends_on")
	it.Attempts = geti("attempts")
	it.MaxAttempts = geti("max_attempts")
	it.ClaimedBy = d.String("claimed_by")
	it.ClaimAttempt = geti("claim_attempt")
	it.ClaimKind = d.String("claim_kind")
	it.LivenessLock = d.String("liveness_lock")
	it.Instance = d.String("instance")
	it.LeaseUntil = gett("lease_until")
	it.NotBefore = gett("not_before")
	it.Created = gett("created")
	it.Started = gett("started")
	it.Completed = gett("completed")
	it.HungSince = gett("hung_since")
	it.Result = d.String("result")
	it.LastError = d.String("last_error")
	it.DeadReason = d.String("dead_reason")
	if d.Has("plan") || d.Has("gate") || d.Has("gates") || d.Has("worktree") || d.Has("cancelled") || d.Has("work_done") {
		it.Plan = d.String("plan")
		it.Gate = d.String("gate")
		it.Gates = d.Strings("gates")
		it.Worktree = d.String("worktree")
		it.Branch = d.String("branch")
		it.Base = d.String("base")
		it.Merged = d.String("merged")
		it.Cancelled = d.Bool("cancelled")
		it.WorkDone = gett("work_done")
		it.WorkResult = d.String("work_result")
	}
	return it, nil
}

// readItem reads and validates an item file. Parse and validation errors
// carry path:line:col.
func (b *Broker) readItem(rel string) (*Item, error) {
	d, err := b.get(rel)
	if err != nil {
		return nil, err
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &docstore.ValidationError{Path: rel, Errors: errs}
	}
	return itemFromDoc(d)
}

// AddOptions describe a new item.
type AddOptions struct {
	Title       string
	Priority    int // MinPriority (0, highest) .. MaxPriority (99)
	DependsOn   []string
	MaxAttempts int // 0: the queue's
	Body        []byte
	// Explicit names the options given on purpose ("max_attempts"): a
	// zero max attempts given explicitly is refused (ErrBadOption), not
	// taken as "the queue's".
	Explicit []string
	// Gate "human" asks for a person's approval before the item is done
	// (the item's gate: field; see gate.go).
	Gate string
	// Plan names the plan (plans/<name>.md) the item comes from.
	Plan string
	// By is who adds it (journaled as the item.added event's agent).
	By string
}

// Add enqueues a new item in pending/ and returns it. The queue must
// exist. Every depends_on id must name an existing item (in any queue),
// and the dependency graph reachable from the new item must be acyclic
// (a cycle could never become claimable).
func (b *Broker) Add(queue string, opt AddOptions) (*Item, error) {
	if _, err := b.Queue(queue); err != nil {
		return nil, err
	}
	if opt.Priority < MinPriority || opt.Priority > MaxPriority {
		return nil, &QueueError{Op: "add to", Queue: queue, Err: fmt.Errorf("%w: %d is not in %d (highest) .. %d (lowest)", ErrPriority, opt.Priority, MinPriority, MaxPriority)}
	}
	if opt.MaxAttempts == 0 && slices.Contains(opt.Explicit, "max_attempts") {
		return nil, &QueueError{Op: "add to", Queue: queue, Err: fmt.Errorf("%w: max attempts 0: an item needs at least one attempt", ErrBadOption)}
	}
	if opt.MaxAttempts < 0 {
		return nil, &QueueError{Op: "add to", Queue: queue, Err: fmt.Errorf("%w: max attempts %d", ErrBadOption, opt.MaxAttempts)}
	}
	if err := b.checkDeps(opt.DependsOn); err != nil {
		return nil, &QueueError{Op: "add to", Queue: queue, Err: err}
	}
	id := NewItemID(opt.Priority)
	now := b.now()
	fields := []docstore.Field{
		{Key: schema.VersionField, Value: schema.Item.Version},
		{Key: "id", Value: id},
		{Key: "queue", Value: queue},
	}
	if opt.Title != "" {
		fields = append(fields, docstore.Field{Key: "title", Value: opt.Title})
	}
	fields = append(fields, docstore.Field{Key: "priority", Value: opt.Priority})
	if len(opt.DependsOn) > 0 {
		fields = append(fields, docstore.Field{Key: "depends_on", Value: opt.DependsOn})
	}
	fields = append(fields, docstore.Field{Key: "attempts", Value: 0})
	if opt.Plan != "" {
		fields = append(fields, docstore.Field{Key: "plan", Value: opt.Plan})
	}
	if opt.Gate != "" {
		if opt.Gate != GateHuman {
			return nil, &QueueError{Op: "add to", Queue: queue, Err: fmt.Errorf("%w: gate %q (want human)%s", ErrBadOption, opt.Gate, schema.ChoiceHint(opt.Gate, []string{GateHuman}))}
		}
		fields = append(fields, docstore.Field{Key: "gate", Value: opt.Gate})
	}
	if opt.MaxAttempts > 0 {
		fields = append(fields, docstore.Field{Key: "max_attempts", Value: opt.MaxAttempts})
	}
	fields = append(fields, docstore.Field{Key: "created", Value: now}, docstore.Field{Key: "updated", Value: now})
	body := opt.Body
	if len(body) > 0 && body[0] != '\n' {
		body = append([]byte("\n"), body...)
	}
	d, err := docstore.New(schema.Item, fields, body)
	if err != nil {
		return nil, err
	}
	rel := ItemPath(queue, Pending, id)
	if err := b.s.Create(rel, d); err != nil {
		return nil, err
	}
	it, err := itemFromDoc(d)
	if err != nil {
		return nil, err
	}
	data := map[string]any{"priority": opt.Priority}
	if opt.Plan != "" {
		data["plan"] = opt.Plan
	}
	_ = b.journal(EventAdded, it, opt.By, data)
	if it.Gate == GateHuman {
		// Its gate's document now, so listings need not read every item to
		// find it (GateDocs). Should this fail the gate still holds: the
		// item's gate: field implies it until its document is written.
		// Under the item's lock, which rm holds: an rm between the
		// gate-item rule's look at the item and the write would leave
		// the gate of an item that is gone (the rule, run under it,
		// refuses the gate of one removed first).
		if l, err := b.s.Lock(ItemLockKey(queue, id)); err == nil {
			_ = b.createImplicit(&Gate{ID: it.ID, Item: it.ID, Queue: queue, Path: GatePath(it.ID)}, l.Key)
			l.Unlock()
		}
	}
	return it, nil
}

// checkDeps verifies that every dependency exists and that no cycle is
// reachable from them.
func (b *Broker) checkDeps(deps []string) error {
	seen := map[string]int{} // 1 = on the DFS path, 2 = finished
	var path []string
	var visit func(id string) error
	visit = func(id string) error {
		switch seen[id] {
		case 1:
			i := 0
			for path[i] != id {
				i++
			}
			return fmt.Errorf("%w: %s -> %s", ErrCycle, strings.Join(path[i:], " -> "), id)
		case 2:
			return nil
		}
		seen[id] = 1
		path = append(path, id)
		loc, err := b.locate(id)
		if err != nil {
			return err
		}
		d, err := b.s.Get(loc.path)
		if err == nil {
			for _, dep := range d.Strings("depends_on") {
				if _, err := b.locate(dep); err != nil {
					continue // a dangling hand-edited dependency: blocks, but is no cycle
				}
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		seen[id] = 2
		return nil
	}
	for _, dep := range deps {
		if err := schema.ValidName(dep); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrBadDependency, dep, err)
		}
		if _, err := b.locate(dep); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %s", ErrBadDependency, dep)
			}
			return err
		}
		if err := visit(dep); err != nil {
			return err
		}
	}
	return nil
}

type location struct {
	queue, state, path string
}

// stateRank orders copies of one item left by a crash between writing
// the new copy and removing the old one: the later state wins.
var stateRank = map[string]int{Pending: 0, Claimed: 1, Dead: 2, Done: 3}

// locate finds an item by id in any queue. If a crash left two copies,
// the later state wins (done > dead > claimed > pending).
func (b *Broker) locate(id string) (location, error) {
	if err := schema.ValidName(id); err != nil {
		return location{}, &ItemError{Op: "find", ID: id, Err: err}
	}
	names, err := b.QueueNames()
	if err != nil {
		return location{}, err
	}
	var best location
	found := false
	for _, q := range names {
		for _, st := range schema.ItemStates {
			rel := ItemPath(q, st, id)
			if b.exists(rel) {
				if !found || stateRank[st] > stateRank[best.state] {
					best = location{queue: q, state: st, path: rel}
					found = true
				}
			}
		}
	}
	if !found {
		return location{}, unknownItem(id)
	}
	return best, nil
}

// Get reads an item by id, wherever it is.
func (b *Broker) Get(id string) (*Item, error) {
	loc, err := b.locate(id)
	if err != nil {
		return nil, err
	}
	d, err := b.s.Get(loc.path)
	if err != nil {
		return nil, err
	}
	return itemFromDoc(d)
}

// itemState returns the state of item id ("" if it does not exist). The
// common case, a dependency in the same queue that is done, costs one
// stat.
func (b *Broker) itemState(queue, id string) string {
	if b.exists(ItemPath(queue, Done, id)) {
		return Done
	}
	loc, err := b.locate(id)
	if err != nil {
		return ""
	}
	return loc.state
}

// ResolveID finds the item ref names and returns its id. ref is an id,
// "QUEUE/ID" (the names `tavern ls items` prints), or a unique prefix of
// the id in either form, or the store path of its file
// (queues/QUEUE/STATE/ID.md, as ls and git status print it; the item is
// found wherever it has moved since). No match is fs.ErrNotExist, several
// are docstore.ErrAmbiguous; an unknown QUEUE is a *schema.UnknownError.
func (b *Broker) ResolveID(ref string) (string, error) {
	if slash := filepath.ToSlash(ref); filepath.IsAbs(ref) || strings.HasPrefix(slash, ".tavern/") || strings.Contains(slash, "/.tavern/") {
		// The file as a shell names it (ls .tavern/queues/Q/pending/):
		// its path in the store.
		if rel, err := b.Store().Rel(ref); err == nil {
			ref = rel
		}
	}
	ref = strings.TrimSuffix(strings.TrimPrefix(ref, "items/"), ".md")
	if rest, ok := strings.CutPrefix(ref, "queues/"); ok {
		if q, tail, ok := strings.Cut(rest, "/"); ok {
			if st, id, ok := strings.Cut(tail, "/"); ok && slices.Contains(schema.ItemStates, st) {
				ref = q + "/" + id
			}
		}
	}
	queue, id, hasQueue := strings.Cut(ref, "/")
	if !hasQueue {
		queue, id = "", ref
	}
	if err := schema.ValidName(id); err != nil {
		return "", &ItemError{Op: "find", ID: ref, Err: err}
	}
	var names []string
	if hasQueue {
		if _, err := b.Queue(queue); err != nil {
			return "", err
		}
		names = []string{queue}
	} else {
		if _, err := b.locate(id); err == nil {
			return id, nil
		}
		var err error
		if names, err = b.QueueNames(); err != nil {
			return "", err
		}
	}
	var ids []string
	for _, q := range names {
		for _, st := range schema.ItemStates {
			got, err := b.listDir(q, st)
			if err != nil {
				return "", err
			}
			ids = append(ids, got...)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids) // a crash leftover is in two states at once
	got, err := docstore.MatchPrefix("item", id, ids)
	if errors.Is(err, fs.ErrNotExist) {
		return "", unknownItem(ref)
	}
	return got, err
}

// unknownItem is the error of an item id that names no item in any
// queue: it says which (`unknown item "X"`) and matches fs.ErrNotExist.
func unknownItem(id string) error {
	return &schema.UnknownError{What: "item", Name: id, Err: fs.ErrNotExist}
}
