package view

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Defaults for Options.
const (
	DefaultRecheck     = 2 * time.Second
	DefaultJournalTail = 500
	DefaultColumn      = 50 // items per board column
	// ThroughputWindow is the window of Queue.Throughput.
	ThroughputWindow = 10 * time.Minute
)

// Options configure Open. The zero value is a one-shot snapshot acting as
// the login user.
type Options struct {
	// Person is who acts through this view: the sender of its messages,
	// answered_by of its answers, and the agent of its journal events.
	// Default: DefaultPerson().
	Person string
	// Face names the face in the journal ("tui", "web"); informational.
	Face string
	// Watch keeps the view current (ui, serve); without it the view is
	// one snapshot (--json, export).
	Watch bool
	// Poll forces the projection to poll (network filesystems are
	// detected and polled anyway).
	Poll time.Duration
	// Recheck is how often what changes without a file event is looked at
	// again: leases running out, holders dying (a dropped flock is no
	// event), question ages. Default DefaultRecheck.
	Recheck time.Duration
	// JournalTail is how many journal events the timeline keeps.
	// Default DefaultJournalTail.
	JournalTail int
	// Column is how many items each board column lists. Default
	// DefaultColumn.
	Column int
	// Needs adds sources of Needs-you entries, for kinds of waiting this
	// package does not know (with their actions in Actions).
	Needs []NeedsSource
	// Actions adds action handlers, by action name, for actions that
	// Needs sources offer (gates' "approve"). A handler runs with the
	// person as its actor and must act through the library's rules.
	Actions map[string]ActionFunc
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// NeedsSource lists extra Needs-you entries for a snapshot being built
// (which holds everything but Needs at that point).
type NeedsSource func(s *Snapshot) []Need

// ActionFunc performs an action offered by a NeedsSource.
type ActionFunc func(ctx context.Context, v *View, a Action) (string, error)

// DefaultPerson is the acting person when none is given: $TAVERN_USER,
// else the login name if it is a valid agent name, else "user".
func DefaultPerson() string { return agents.ResolvePerson("") }

// View is the live view model of one store. It is safe for concurrent
// use.
type View struct {
	opt Options
	s   *docstore.Store
	j   *journal.Journal
	p   *watcher.Projection
	m   *agents.Manager
	b   *queues.Broker
	sp  *tuples.Space

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	bmu    sync.Mutex // one snapshot build at a time
	cached *Snapshot

	mu        sync.Mutex
	closed    bool
	version   uint64
	items     *itemIndex
	timeline  []journal.Event // ring of the last JournalTail events, in order
	completed []completion    // item.completed within ThroughputWindow
	activity  map[string]time.Time
	watchers  map[chan uint64]struct{}
	lastNeeds string
	bodies    map[string]cachedBody // by path
}

type cachedBody struct{ rev, text string }

type completion struct {
	at    time.Time
	queue string
}

// Open builds the view of the store s. It journals every mutation made
// through s with the person as the acting agent, so s should not already
// have a journal observer (open it with docstore.Open). With opt.Watch the
// view follows the store until Close.
func Open(s *docstore.Store, opt Options) (*View, error) {
	if opt.Person == "" {
		opt.Person = DefaultPerson()
	}
	if err := schema.ValidAgentName(opt.Person); err != nil {
		return nil, &ActionError{Op: "person", Path: opt.Person, Err: err}
	}
	if opt.Recheck <= 0 {
		opt.Recheck = DefaultRecheck
	}
	if opt.JournalTail <= 0 {
		opt.JournalTail = DefaultJournalTail
	}
	if opt.Column <= 0 {
		opt.Column = DefaultColumn
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	v := &View{opt: opt, s: s, activity: map[string]time.Time{}, bodies: map[string]cachedBody{}, watchers: map[chan uint64]struct{}{}}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	var err error
	if v.j, err = journal.Open(s.Root(), journal.Options{}); err != nil {
		return nil, err
	}
	journal.RecordMutations(s, v.j, opt.Person, nil)
	if v.m, err = agents.NewManager(s); err != nil {
		v.j.Close()
		return nil, err
	}
	if v.b, err = queues.Open(s, queues.Options{Journal: v.j}); err != nil {
		v.closeAll()
		return nil, err
	}
	if v.sp, err = tuples.NewSpace(s, tuples.SpaceOptions{Journal: v.j}); err != nil {
		v.closeAll()
		return nil, err
	}
	// The view does not journal hand edits as external (that is `tavern
	// watch`'s job): it only reads, and writes through the library.
	if v.p, err = watcher.Open(s, watcher.Options{Watch: opt.Watch, Cache: true, Poll: opt.Poll}); err != nil {
		v.closeAll()
		return nil, err
	}
	var sub *watcher.Subscription
	if opt.Watch {
		// Subscribe before indexing: a change after the index is built
		// then arrives as an event; one before is in the index; one in
		// between is both, and applying it twice is harmless (apply
		// reads the projection, it does not trust the event).
		sub = v.p.Subscribe(journal.Filter{}, 1<<14)
	}
	if err := v.reindex(); err != nil {
		v.closeAll()
		return nil, err
	}
	tail, cur, err := journal.Tail(s.Root(), opt.JournalTail, journal.Filter{})
	if err != nil {
		v.closeAll()
		return nil, err
	}
	for _, e := range tail {
		v.record(e)
	}
	done, _, err := journal.Tail(s.Root(), 1<<20, journal.Filter{Types: []string{queues.EventCompleted}, Since: opt.Now().Add(-ThroughputWindow)})
	if err != nil {
		v.closeAll()
		return nil, err
	}
	for _, e := range done {
		v.completed = append(v.completed, completion{at: e.Time.Time, queue: e.Queue})
	}
	if opt.Watch {
		v.wg.Add(3)
		go v.consume(sub)
		go v.follow(cur)
		go v.recheck()
	}
	return v, nil
}

func (v *View) closeAll() {
	if v.p != nil {
		v.p.Close()
	}
	if v.b != nil {
		v.b.Close()
	}
	if v.m != nil {
		v.m.Close()
	}
	v.j.Close()
}

// Close stops following the store and releases it.
func (v *View) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	for c := range v.watchers {
		delete(v.watchers, c)
		close(c)
	}
	v.mu.Unlock()
	v.cancel()
	var err error
	if v.p != nil {
		err = v.p.Close()
	}
	v.wg.Wait()
	if v.b != nil {
		err = errors.Join(err, v.b.Close())
	}
	if v.m != nil {
		err = errors.Join(err, v.m.Close())
	}
	return errors.Join(err, v.j.Close())
}

// Person is who acts through this view.
func (v *View) Person() string { return v.opt.Person }

// Projection is the projection the view reads (watching with
// Options.Watch): a long-running face serves queries from it.
func (v *View) Projection() *watcher.Projection { return v.p }

// Store is the store the view shows.
func (v *View) Store() *docstore.Store { return v.s }

// Updates returns a channel that receives the view's version whenever
// something it shows changed, and a function that stops the updates.
// Changes are coalesced: a slow receiver gets the latest version once,
// never a backlog. The channel is closed by stop or Close.
func (v *View) Updates() (<-chan uint64, func()) {
	c := make(chan uint64, 1)
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		close(c)
		return c, func() {}
	}
	v.watchers[c] = struct{}{}
	v.mu.Unlock()
	return c, func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if _, ok := v.watchers[c]; ok {
			delete(v.watchers, c)
			close(c)
		}
	}
}

// Version is the number of changes the view has seen.
func (v *View) Version() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.version
}

// bump records a change and tells the watchers; v.mu is held.
func (v *View) bump() {
	v.version++
	for c := range v.watchers {
		select {
		case c <- v.version:
		default:
			// A version is waiting to be read: replace it with this one.
			select {
			case <-c:
			default:
			}
			c <- v.version
		}
	}
}

// consume applies the projection's document events to the index.
func (v *View) consume(sub *watcher.Subscription) {
	defer v.wg.Done()
	defer sub.Close()
	for {
		select {
		case <-v.ctx.Done():
			return
		case e, ok := <-sub.C:
			if !ok {
				return
			}
			batch := []journal.Event{e}
			// Take what else is queued, so a burst is one update.
		more:
			for len(batch) < 4096 {
				select {
				case e, ok := <-sub.C:
					if !ok {
						break more
					}
					batch = append(batch, e)
				default:
					break more
				}
			}
			v.apply(batch)
		}
	}
}

func (v *View) apply(batch []journal.Event) {
	resync := false
	for _, e := range batch {
		if e.Type == journal.TypeMissed {
			resync = true
		}
	}
	if resync {
		// Events were dropped: rebuild the index from the projection.
		if err := v.reindex(); err == nil {
			v.mu.Lock()
			v.bump()
			v.mu.Unlock()
		}
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	changed := false
	for _, e := range batch {
		if e.Path == "" {
			continue
		}
		changed = true
		ent, exists := v.p.Get(e.Path)
		if exists && !ent.Valid {
			v.items.invalid[e.Path] = struct{}{}
		} else {
			delete(v.items.invalid, e.Path)
		}
		if q, st, id, ok := itemPath(e.Path); ok {
			if exists {
				v.items.put(q, st, id, ent.Fields)
			} else {
				v.items.drop(q, st, id)
			}
		}
	}
	if changed {
		v.bump()
	}
}

// follow keeps the timeline, agent activity and throughput current from
// the journal, which is where domain events (item.claimed, agent.state)
// and the acting agents are.
func (v *View) follow(cur journal.Cursor) {
	defer v.wg.Done()
	poll := time.Duration(0)
	if strings.HasPrefix(v.p.Mode(), "poll") {
		poll = DefaultRecheck
	}
	_ = journal.Follow(v.ctx, v.s.Root(), cur, journal.Filter{}, poll, func(e journal.Event, err error) bool {
		if err != nil {
			return true // a malformed line; `tavern log` reports it
		}
		v.mu.Lock()
		v.record(e)
		if e.Type == queues.EventCompleted {
			v.completed = append(v.completed, completion{at: e.Time.Time, queue: e.Queue})
		}
		v.bump()
		v.mu.Unlock()
		return true
	})
}

// record adds e to the timeline ring and the activity map; v.mu is held
// (or the view is not shared yet).
func (v *View) record(e journal.Event) {
	if len(v.timeline) >= v.opt.JournalTail {
		copy(v.timeline, v.timeline[1:])
		v.timeline = v.timeline[:len(v.timeline)-1]
	}
	v.timeline = append(v.timeline, e)
	if e.Agent != "" && e.Time.After(v.activity[e.Agent]) {
		v.activity[e.Agent] = e.Time.Time
	}
}

// recheck looks at the time- and liveness-driven state every Recheck and
// announces a change when the Needs-you list is different.
func (v *View) recheck() {
	defer v.wg.Done()
	t := time.NewTicker(v.opt.Recheck)
	defer t.Stop()
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-t.C:
			snap, err := v.build()
			if err != nil {
				continue
			}
			key := needsKey(snap.Needs)
			v.mu.Lock()
			if key != v.lastNeeds {
				v.lastNeeds = key
				v.bump()
			}
			v.mu.Unlock()
		}
	}
}

func needsKey(ns []Need) string {
	var b strings.Builder
	for _, n := range ns {
		b.WriteString(n.Key) // not Why: it holds ages, which change every second
		b.WriteByte(0)
	}
	return b.String()
}

// reindex rebuilds the item index (and the set of invalid documents) from
// the projection. It visits every document once, through Query's Match,
// which keeps none: no copy of 100k entries is made or sorted.
func (v *View) reindex() error {
	ix := newItemIndex(v.opt.Column, v.p.Len())
	// The scan of every document decodes no field: of 100k items nearly
	// all are done, and only pending items' depends_on is indexed. Those
	// few are read after it (a pending item gone meanwhile is an event
	// the subscription delivers).
	var pending []string
	_, err := v.p.Query(watcher.Query{Fields: []string{}, Match: func(e watcher.Entry) bool {
		if !e.Valid {
			ix.invalid[e.Path] = struct{}{}
		}
		if e.Kind == "item" {
			if q, st, id, ok := itemPath(e.Path); ok {
				ix.put(q, st, id, nil)
				if st == queues.Pending {
					pending = append(pending, e.Path)
				}
			}
		}
		return false
	}})
	for _, path := range pending {
		if e, ok := v.p.Get(path); ok {
			q, st, id, _ := itemPath(path)
			ix.put(q, st, id, e.Fields)
		}
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.items = ix
	v.mu.Unlock()
	return nil
}

// Snapshot returns the current view model. Snapshots are cached: callers
// that ask between two changes (and within Recheck) share one.
func (v *View) Snapshot() (*Snapshot, error) {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, ErrClosed
	}
	ver := v.version
	v.mu.Unlock()
	v.bmu.Lock()
	c := v.cached
	v.bmu.Unlock()
	if c != nil && c.Version == ver && v.opt.Now().Sub(c.Time.Time) < v.opt.Recheck {
		return c, nil
	}
	return v.build()
}

// build makes a fresh snapshot and caches it.
func (v *View) build() (*Snapshot, error) {
	v.bmu.Lock()
	defer v.bmu.Unlock()
	v.mu.Lock()
	ver := v.version
	v.mu.Unlock()
	snap, err := v.snapshot(ver)
	if err != nil {
		return nil, err
	}
	snap.emptyLists()
	v.cached = snap
	return snap, nil
}
