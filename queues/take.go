package queues

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// TakeOptions say where to take an item from and who holds the claim.
type TakeOptions struct {
	// Queues are the taker's own queues, tried in queue priority order
	// (ties keep this order): the first claimable item of the first queue
	// that has one is taken.
	Queues []string
	// Steal: when the own queues have nothing claimable, take from the
	// other queues that allow stealing (steal: true), fairly: stride
	// scheduling weighted 1/(1+priority), so a low-priority queue gets a
	// smaller share but never starves.
	Steal bool
	// As is recorded as claimed_by (default host/pid of this process).
	// With AgentLock it is an agent name and must pass
	// schema.ValidAgentName.
	As string
	// Instance is the spawn instance the claim is made for (default the
	// Broker's Options.Instance): recorded in the item's instance field;
	// with AgentLock, the claim is tied to the instance's liveness lock
	// (schema.InstanceLockKey) instead of the agent's.
	Instance string
	// Liveness says what keeps the claim alive (LeaseOnly, HoldLock,
	// AgentLock).
	Liveness Liveness
	// Wait blocks up to this long for an item to become claimable. The
	// wait is event-driven (inotify on the pending and done directories,
	// timers for backoffs and lease expiries), not a polling loop.
	Wait time.Duration
	// Guard, when set, is asked before every attempt to claim (the first
	// scan and each one a wait makes): an error ends the take with
	// nothing claimed and is returned as it is. A drone of a pool that
	// drains claims nothing from then on (agents: ErrPoolDraining).
	Guard func() error
}

// Blocked is a pending item that can never be claimed as things stand:
// a dependency is dead (or missing).
type Blocked struct {
	ID, Queue, Path string
	Dep             string // the blocking dependency
	DepState        string // "dead", or "missing"
}

func (b Blocked) String() string {
	return fmt.Sprintf("%s is blocked: dependency %s is %s", b.Path, b.Dep, b.DepState)
}

// Diagnostics is what Take (and Stats) saw besides claimable items.
type Diagnostics struct {
	Invalid []error   // item files that do not parse or validate (path:line:col); left in place
	Blocked []Blocked // items whose dependency is dead or missing
	Backoff int       // items waiting for not_before
	Waiting int       // items waiting for dependencies to finish
	Gated   int       // items waiting at a claim-stage gate (a person, a timer)
	Cycles  []Cycle   // dependency cycles (filled by an empty Take when items wait)
	// Elsewhere counts items the coordination engine says are held or
	// finished on another machine (their local copy is not synced yet).
	Elsewhere int
	Wake      time.Time // earliest known moment something may become claimable
	// View is a listing's warning that the engine could not be asked
	// (*EngineViewError): what it lists is this machine's state.
	View error
}

func (d *Diagnostics) wakeAt(t time.Time) {
	if !t.IsZero() && (d.Wake.IsZero() || t.Before(d.Wake)) {
		d.Wake = t
	}
}

// EmptyError is returned by Take when nothing is claimable. It unwraps to
// ErrEmpty and says why the items that exist are not claimable.
type EmptyError struct {
	Queues []string
	Diag   *Diagnostics
	Waited time.Duration // how long a take with Wait waited (0: it did not)
}

func (e *EmptyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no claimable item in %s", strings.Join(e.Queues, ", "))
	if e.Waited > 0 {
		fmt.Fprintf(&b, " within %s", e.Waited)
	}
	var why []string
	if e.Diag != nil {
		if e.Diag.Backoff > 0 {
			why = append(why, fmt.Sprintf("%d in backoff", e.Diag.Backoff))
		}
		if e.Diag.Elsewhere > 0 {
			why = append(why, fmt.Sprintf("%d held or finished on other machines", e.Diag.Elsewhere))
		}
		if e.Diag.Waiting > 0 {
			why = append(why, fmt.Sprintf("%d waiting for dependencies", e.Diag.Waiting))
		}
		if e.Diag.Gated > 0 {
			why = append(why, fmt.Sprintf("%d waiting at gates", e.Diag.Gated))
		}
		if n := len(e.Diag.Blocked); n > 0 {
			why = append(why, fmt.Sprintf("%d blocked by dead dependencies", n))
		}
		if n := len(e.Diag.Invalid); n == 1 {
			why = append(why, "1 invalid item file")
		} else if n > 0 {
			why = append(why, fmt.Sprintf("%d invalid item files", n))
		}
		for _, c := range e.Diag.Cycles {
			why = append(why, c.String())
		}
	}
	if len(why) > 0 {
		b.WriteString(" (" + strings.Join(why, ", ") + ")")
	}
	return b.String()
}

func (e *EmptyError) Unwrap() error { return ErrEmpty }

// Take claims the next claimable item: the first, in file-name order
// (priority, then age), of the first of opt.Queues that has one whose
// not_before has passed and whose dependencies are all done; then, with
// opt.Steal, from other queues. Claimed items whose owner died are
// reaped on the way. It returns *EmptyError (ErrEmpty) when there is
// nothing, after waiting up to opt.Wait.
func (b *Broker) Take(ctx context.Context, opt TakeOptions) (*Claim, error) {
	if len(opt.Queues) == 0 {
		return nil, fmt.Errorf("take: %w: no queue given", ErrBadOption)
	}
	var own []*Queue
	for _, name := range opt.Queues {
		q, err := b.Queue(name)
		if err != nil {
			return nil, err
		}
		own = append(own, q)
	}
	sort.SliceStable(own, func(i, j int) bool { return own[i].Priority < own[j].Priority })
	who := opt.As
	if who == "" {
		who = b.who
	}
	inst := opt.Instance
	if inst == "" {
		inst = b.inst
	} else if err := schema.ValidName(inst); err != nil {
		return nil, fmt.Errorf("take: %w: instance: %w", ErrBadOption, err)
	}
	h := holder{who: who, kind: "lease", instance: inst}
	switch opt.Liveness {
	case HoldLock:
		key, err := b.holderLock()
		if err != nil {
			return nil, err
		}
		h.kind, h.lock, h.held = "liveness", key, true
	case AgentLock:
		if err := schema.ValidAgentName(opt.As); err != nil {
			return nil, fmt.Errorf("take --as: %w", err)
		}
		key := schema.AgentLockKey(opt.As)
		if inst != "" {
			// The instance's lock is held by its whole process tree (the
			// wrapper and its inherited descriptor): the claim lives as
			// long as any of them does.
			key = schema.InstanceLockKey(inst)
		}
		// A shared probe: another process probing the same agent at
		// this instant is not taken for the agent (docstore.LockFree).
		free, err := b.s.LockFree(key)
		if err != nil {
			return nil, err
		}
		if !free { // else the agent is not running: its claim can only live by its lease
			h.kind, h.lock = "liveness", key
		}
	}
	start := time.Now()
	if opt.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Wait)
		defer cancel()
	}
	guard := opt.Guard
	if guard == nil {
		guard = func() error { return nil }
	}
	if err := guard(); err != nil {
		return nil, err
	}
	c, diag, err := b.tryTake(own, opt.Steal, h)
	if c != nil || err != nil {
		return c, err
	}
	if opt.Wait <= 0 {
		return nil, b.withCycles(&EmptyError{Queues: opt.Queues, Diag: diag})
	}
	// Wait: the watches go in first and the scan runs again, so a file
	// that arrived between the scan above and the watch is seen.
	werr := watcher.WaitDir(ctx, b.waitDirs(own, opt.Steal), watcher.WaitDirOptions{
		Recheck: b.recheck,
		Wake:    func() time.Time { return diag.Wake },
		Journal: b.j, Root: b.s.Root(), // a poll forced by inotify's limits is journaled
	}, func() (bool, error) {
		if err := guard(); err != nil {
			return false, err
		}
		c, diag, err = b.tryTake(own, opt.Steal, h)
		return c != nil, err
	})
	if c != nil || werr == nil {
		return c, werr
	}
	if ctx.Err() != nil {
		waited := opt.Wait // the deadline; an earlier cancel waited less
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			waited = time.Since(start).Round(time.Millisecond)
		}
		return nil, b.withCycles(&EmptyError{Queues: opt.Queues, Diag: diag, Waited: waited})
	}
	return nil, werr
}

// withCycles names the dependency cycles in an empty report when items
// wait for dependencies: a cycle's items would wait forever.
func (b *Broker) withCycles(e *EmptyError) error {
	if e.Diag != nil && e.Diag.Waiting > 0 {
		if cs, err := b.Cycles(); err == nil {
			e.Diag.Cycles = cs
		}
	}
	return e
}

type holder struct {
	who      string
	kind     string // lease | liveness
	lock     string // liveness_lock: the Broker's holder lock, an agent's or an instance's lock
	held     bool   // lock is this Broker's holder lock
	instance string // recorded as the claim's instance
}

func (b *Broker) waitDirs(own []*Queue, steal bool) []string {
	var dirs []string
	add := func(q string) {
		for _, st := range []string{Pending, Done} {
			if full, err := b.s.Abs("queues/" + q + "/" + st); err == nil {
				dirs = append(dirs, full)
			}
		}
	}
	for _, q := range own {
		add(q.Name)
	}
	if steal {
		if qs, _ := b.Queues(); qs != nil {
			for _, q := range qs {
				if q.Steal {
					add(q.Name)
				}
			}
		}
	}
	return dirs
}

func (b *Broker) tryTake(own []*Queue, steal bool, h holder) (*Claim, *Diagnostics, error) {
	diag := &Diagnostics{}
	for pass := 0; pass < 2; pass++ {
		force := pass == 1 // nothing found: reap everything before giving up
		for _, q := range own {
			b.maybeReap(q, force, diag)
			c, err := b.scanQueue(q, h, diag, force)
			if c != nil || err != nil {
				return c, diag, err
			}
		}
		if steal {
			c, err := b.steal(own, h, force, diag)
			if c != nil || err != nil {
				return c, diag, err
			}
		}
		if pass == 0 {
			diag = &Diagnostics{}
		}
	}
	return nil, diag, diag.engineDown()
}

// steal tries the other stealable queues in stride-scheduling order.
func (b *Broker) steal(own []*Queue, h holder, force bool, diag *Diagnostics) (*Claim, error) {
	all, errs := b.Queues()
	diag.Invalid = append(diag.Invalid, errs...)
	mine := map[string]bool{}
	for _, q := range own {
		mine[q.Name] = true
	}
	var cands []*Queue
	for _, q := range all {
		if q.Steal && !mine[q.Name] {
			cands = append(cands, q)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	b.mu.Lock()
	for _, q := range cands {
		if _, ok := b.pass[q.Name]; !ok {
			b.pass[q.Name] = b.vtime + b.rng.Float64()*stride(q)
		}
	}
	pass := make(map[string]float64, len(cands))
	for _, q := range cands {
		pass[q.Name] = b.pass[q.Name]
	}
	b.mu.Unlock()
	sort.SliceStable(cands, func(i, j int) bool { return pass[cands[i].Name] < pass[cands[j].Name] })
	var empty []string
	for _, q := range cands {
		b.maybeReap(q, force, diag)
		c, err := b.scanQueue(q, h, diag, force)
		if err != nil {
			return nil, err
		}
		if c == nil {
			empty = append(empty, q.Name)
			continue
		}
		b.mu.Lock()
		p := b.pass[q.Name]
		if p > b.vtime {
			b.vtime = p
		}
		b.pass[q.Name] = p + stride(q)
		// A queue that was empty must not bank credit while it was: it
		// rejoins at the current virtual time.
		for _, e := range empty {
			if b.pass[e] < b.vtime {
				b.pass[e] = b.vtime
			}
		}
		b.mu.Unlock()
		return c, nil
	}
	return nil, nil
}

func stride(q *Queue) float64 { return float64(1 + q.Priority) }

// listDir returns the item ids in a state directory, in file-name order.
func (b *Broker) listDir(queue, state string) ([]string, error) {
	f, err := os.Open(b.path("queues/" + queue + "/" + state))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if strings.HasSuffix(n, ".md") && schema.ValidName(n) == nil {
			out = append(out, strings.TrimSuffix(n, ".md"))
		}
	}
	sort.Strings(out)
	return out, nil
}

// errSkip aborts a claim (inside Move's edit function) of an item that is
// not claimable now; nothing is written.
type errSkip struct{}

func (errSkip) Error() string { return "not claimable" }

// scanQueue claims the first claimable pending item of q. relist makes
// the Broker's pending index read the directory again first (a Take that
// found nothing does, as a safety net under the inotify-fed index).
func (b *Broker) scanQueue(q *Queue, h holder, diag *Diagnostics, relist bool) (*Claim, error) {
	if relist {
		b.pending.invalidate(q.Name)
	}
	after := ""
	for {
		id, found, ok := b.pending.next(b, q.Name, after)
		if !ok {
			return b.scanList(q, h, diag)
		}
		if !found {
			return nil, nil
		}
		c, err := b.claimOne(q, id, h, diag)
		b.pending.done(q.Name, id)
		if c != nil || err != nil {
			return c, err
		}
		after = id
	}
}

// scanList is scanQueue without the index: list the directory.
func (b *Broker) scanList(q *Queue, h holder, diag *Diagnostics) (*Claim, error) {
	ids, err := b.listDir(q.Name, Pending)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		c, err := b.claimOne(q, id, h, diag)
		if c != nil || err != nil {
			return c, err
		}
	}
	return nil, nil
}

// claimOne tries to claim pending item id of q. It returns nil, nil when
// the item is not claimable or another taker got it.
func (b *Broker) claimOne(q *Queue, id string, h holder, diag *Diagnostics) (*Claim, error) {
	if b.coord != nil && b.coordSkip(q, id, diag) {
		return nil, nil // held or finished on another machine (coord.go)
	}
	l, ok, err := b.s.TryLock(ItemLockKey(q.Name, id))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil // another taker or a reaper is on it
	}
	defer l.Unlock()
	from, to := ItemPath(q.Name, Pending, id), ItemPath(q.Name, Claimed, id)
	now := b.now()
	var attempt int
	var grant *coordGrant // coordination: etcd/git (coord.go)
	d, err := b.move(l, from, to, func(d *docstore.Doc) error {
		if errs := d.Validate(false); len(errs) > 0 {
			return &docstore.ValidationError{Path: from, Errors: errs}
		}
		it, err := itemFromDoc(d)
		if err != nil {
			return err
		}
		if b.staleCopy(l, it) {
			return errSkip{}
		}
		if it.NotBefore.After(now) {
			diag.Backoff++
			diag.wakeAt(it.NotBefore)
			return errSkip{}
		}
		for _, dep := range it.DependsOn {
			switch st := b.itemState(q.Name, dep); st {
			case Done:
			case Dead, "":
				if st == "" {
					st = "missing"
				}
				diag.Blocked = append(diag.Blocked, Blocked{ID: id, Queue: q.Name, Path: from, Dep: dep, DepState: st})
				return errSkip{}
			default:
				diag.Waiting++
				return errSkip{}
			}
		}
		if b.claimGated(it, diag) {
			return errSkip{}
		}
		attempt = it.ClaimAttempt + 1
		attempts := it.Attempts + 1
		if b.coord != nil {
			if grant, err = b.coordClaim(q, it, h, diag); err != nil {
				return err
			}
		}
		coordFields := grant.apply(&attempt, &attempts)
		fields := []docstore.Field{
			{Key: "attempts", Value: attempts},
			{Key: "claimed_by", Value: h.who},
			{Key: "claim_attempt", Value: attempt},
			{Key: "claim_kind", Value: h.kind},
			{Key: "lease_until", Value: now.Add(q.Lease)},
			{Key: "started", Value: now},
			{Key: "updated", Value: now},
		}
		if h.lock != "" {
			fields = append(fields, docstore.Field{Key: "liveness_lock", Value: h.lock})
		}
		if h.instance != "" {
			fields = append(fields, docstore.Field{Key: "instance", Value: h.instance})
		}
		fields = append(fields, coordFields...)
		fl := []string{"not_before", "hung_since"}
		if h.instance == "" {
			fl = append(fl, "instance")
		}
		if h.kind == "lease" {
			fl = append(fl, "liveness_lock")
		}
		return editFields(d, fields, fl...)
	})
	if err != nil {
		b.coordUndo(l, q, id, grant, err)
		var skip errSkip
		switch {
		case errors.As(err, &skip), errors.Is(err, fs.ErrNotExist):
			return nil, nil // not claimable, or someone else claimed it first
		case badFile(err):
			diag.Invalid = append(diag.Invalid, err)
			return nil, nil
		case errors.Is(err, fs.ErrExist):
			// A claimed copy exists already: a crash between writing a
			// new copy and removing the old one. Keep the newer.
			b.resolveDup(l, q.Name, id, diag)
			return nil, nil
		}
		return nil, err
	}
	it, err := itemFromDoc(d)
	if err != nil {
		return nil, err
	}
	_ = b.journal(EventClaimed, it, h.who, map[string]any{"attempt": attempt, "claim_kind": h.kind})
	c := &Claim{Item: it, Attempt: attempt, Notes: diag, b: b, held: h.held, instance: h.instance}
	c.doc.Store(d)
	return c, nil
}

// resolveDup handles an item that has both a pending and a claimed copy
// (left by a crash in the middle of a move). The copy with the later
// `updated` stamp wins; the other goes to .trash/. The caller holds the
// item lock.
func (b *Broker) resolveDup(l *docstore.Lock, queue, id string, diag *Diagnostics) {
	p, perr := b.readItem(ItemPath(queue, Pending, id))
	c, cerr := b.readItem(ItemPath(queue, Claimed, id))
	if perr != nil || cerr != nil {
		diag.Invalid = append(diag.Invalid, fmt.Errorf("%s: both pending and claimed copies exist (resolve by hand): %v %v", ItemPath(queue, Pending, id), perr, cerr))
		return
	}
	pu, _ := p.Doc.Time("updated")
	cu, _ := c.Doc.Time("updated")
	if pu.After(cu) {
		_ = b.s.DeleteHeld(l, c.Path)
	} else {
		_ = b.s.DeleteHeld(l, p.Path)
	}
}

// staleCopy reports whether a pending copy is a crash leftover because a
// later copy of the item exists in done/ (final) or a newer one in dead/;
// the stale copy goes to .trash/. An older dead copy left by a crashed
// retry is trashed instead. The caller holds the item lock.
func (b *Broker) staleCopy(l *docstore.Lock, p *Item) bool {
	if b.exists(ItemPath(p.Queue, Done, p.ID)) {
		_ = b.s.DeleteHeld(l, p.Path)
		return true
	}
	deadRel := ItemPath(p.Queue, Dead, p.ID)
	if !b.exists(deadRel) {
		return false
	}
	dd, err := b.get(deadRel)
	if err != nil {
		return true // unreadable dead copy: leave both for a person
	}
	pu, _ := p.Doc.Time("updated")
	du, _ := dd.Time("updated")
	if pu.After(du) {
		_ = b.s.DeleteHeld(l, deadRel)
		return false
	}
	_ = b.s.DeleteHeld(l, p.Path)
	return true
}
