package watcher

import (
	"cmp"
	"context"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Problem is one reason a document is invalid, with its position.
type Problem struct {
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	Msg  string `json:"msg"` // full message: path:line:col: what is wrong
}

// Entry is the projection of one document file.
type Entry struct {
	Path   string         `json:"rel"`
	Kind   string         `json:"kind"` // singular kind name; "" if the path matches no kind
	Name   string         `json:"name"`
	Rev    string         `json:"rev"`
	Valid  bool           `json:"valid"`
	Errors []Problem      `json:"errors,omitempty"`
	Fields map[string]any `json:"fields"` // migrated view; nil when the file does not parse

	// raw holds Fields still encoded as in the index cache (see
	// cachecodec.go) when non-empty; Fields is then nil until view
	// decodes it. Entries handed out are always views.
	raw string
}

// view returns a copy of e with its fields decoded.
func (e *Entry) view() Entry {
	c := *e
	if c.raw != "" {
		c.Fields = decodeFields(c.raw)
		c.raw = ""
	}
	return c
}

// Decode decodes the fields of an entry a query left encoded
// (Query.Encoded, DecodeEntries) in place.
func (e *Entry) Decode() {
	if e.raw != "" {
		e.Fields = decodeFields(e.raw)
		e.raw = ""
	}
}

// Parsed reports whether the document parsed: it has fields, decoded
// or (Query.Encoded) not.
func (e *Entry) Parsed() bool {
	return e.Fields != nil || (e.raw != "" && e.raw != rawNil)
}

// noFields is the Fields of an entry viewed with no fields wanted: shared,
// like every Fields map handed out, and read-only.
var noFields = map[string]any{}

// viewOf is view decoding only the top-level keys named by fields (all
// of them when fields is nil).
func (e *Entry) viewOf(fields []string) Entry {
	if fields == nil || e.raw == "" {
		return e.view()
	}
	c := *e
	if len(fields) == 0 {
		c.Fields, c.raw = noFields, ""
		return c
	}
	c.Fields = decodeSomeFieldsInto(nil, c.raw, fields)
	c.raw = ""
	return c
}

// Options configure Open.
type Options struct {
	// Watch keeps the projection current after the first scan. Without it
	// the projection is a one-shot snapshot (what `tavern ls` needs).
	Watch bool
	// Poll, Reconcile, Debounce: see FSOptions.
	Poll, Reconcile, Debounce time.Duration
	// Cache loads and saves the index cache (.index in the store root),
	// so unchanged documents are not read or parsed again.
	Cache bool
	// Kinds, if not nil, restricts the projection to documents of these
	// kinds (singular, plural or alias names): only the directories their
	// path patterns can match are listed, stat'ed, watched and cached.
	// Query and WaitFor for any other kind return ErrOutOfScope.
	Kinds []string
	// Journal, if set, receives an "external" event for every change
	// that no engine call journaled (hand edits, git checkout), also for
	// those made while no projection watched (compared at Open with the
	// journal's per-path state), and its own appends are published to
	// subscribers. Needs Watch.
	Journal *journal.Journal
	// FollowJournal publishes events other processes append to the
	// journal (domain events such as item.claimed) to subscribers.
	FollowJournal bool
	// ExternalGrace is how long a change waits for the engine's journal
	// event before it is called external (default 2s): the engine writes
	// the document first and journals it right after.
	ExternalGrace time.Duration
	// Settle: see FSOptions.Settle.
	Settle time.Duration
	// OnDegrade, if set, is told when the projection cannot use inotify
	// (out of watches or instances) and polls instead (see
	// FSOptions.OnDegrade), besides ReportDegraded (the journal and the
	// process's degrade handler).
	OnDegrade func(err error)
	// Progress, if set, is told how far Open's first scan is in parsing
	// the documents it read (all of them without a cache: reindexing), as
	// the count so far and the total. It is called from one goroutine, and
	// not after Open returns.
	Progress func(done, total int)
}

// Projection is an in-memory index of every document of a store.
type Projection struct {
	progress atomic.Pointer[func(done, total int)] // Options.Progress while Open scans
	store    *docstore.Store
	root     string
	opt      Options
	fw       *FSWatcher

	mu      sync.RWMutex
	docs    map[string]*Entry
	byKind  map[string]map[string]*Entry
	waiters map[*waiter]struct{}
	dirty   map[string]bool // kinds whose cache section differs from the saved one
	scope   scope
	// lastValid holds, for documents that are invalid now, the last
	// valid entry projected: a repair's changed fields are relative to
	// it, and a document never valid before is created by its first
	// valid state.
	lastValid map[string]*Entry
	// startup: the first scan is running; its changes are compared with
	// the journal's heads as a whole when it ends (startPrev keeps the
	// cached entries it replaced, for their fields).
	startup   bool
	startPrev map[string]*Entry
	// replaced: the valid cached entries a projection that does not
	// journal externals replaced (a one-shot ls after a hand edit, the
	// query daemon), oldest first, until SaveCache forgets them on disk
	// and hands their fields to the journal's heads (keepReplaced).
	replaced map[string][]*Entry
	// Field indexes (fieldindex.go), built by queries of a watching
	// projection.
	indexes    map[indexKey]*fieldIndex
	indexClock uint64

	smu  sync.Mutex
	subs map[*Subscription]struct{}

	ext *externals

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type waiter struct {
	kind string
	pred func(Entry) bool
	ch   chan Entry
}

// Open builds the projection of the store: from the index cache when
// enabled and valid, then a parallel scan that reads and parses only what
// changed. With opt.Watch it stays current until Close.
func Open(s *docstore.Store, opt Options) (*Projection, error) {
	if opt.ExternalGrace <= 0 {
		opt.ExternalGrace = 2 * time.Second
	}
	sc, err := newScope(opt.Kinds)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Projection{
		lastValid: map[string]*Entry{},
		startPrev: map[string]*Entry{},
		scope:     sc,
		dirty:     map[string]bool{},
		store:     s,
		root:      s.Root(),
		opt:       opt,
		docs:      map[string]*Entry{},
		byKind:    map[string]map[string]*Entry{},
		waiters:   map[*waiter]struct{}{},
		subs:      map[*Subscription]struct{}{},
		ctx:       ctx,
		cancel:    cancel,
	}
	// The index is loaded while WatchFS lists and stats the tree (they
	// are independent until WatchFS compares them): on a big store each
	// takes a few hundred milliseconds.
	var loadKnown func() map[string]FileState
	if opt.Cache {
		type loaded struct {
			entries []*Entry
			states  map[string]FileState
			bad     []string
		}
		ch := make(chan loaded, 1)
		go func() {
			entries, states, bad, _ := loadCache(p.root, sc.kinds(), opt.Watch)
			// Nothing reads the entries before WatchFS reports its
			// first changes, after it has the states.
			p.fill(entries, bad)
			ch <- loaded{entries, states, bad}
		}()
		loadKnown = func() map[string]FileState {
			l := <-ch
			if len(l.entries) > 0 || len(l.bad) == 0 {
				return l.states
			}
			return nil
		}
	}
	start := time.Now()
	if opt.Journal != nil && opt.Watch {
		// The journal's own record of every path, read before the scan:
		// what the scan finds that the journal does not account for was
		// changed while nobody watched.
		h, err := journal.LoadHeads(p.root)
		if err != nil {
			cancel()
			return nil, err
		}
		p.ext = newExternals(p, opt.Journal, h, start)
		p.startup = true
	}
	if opt.Journal != nil {
		opt.Journal.Observe(func(e journal.Event) {
			if !strings.HasPrefix(e.Type, "doc.") { // seen from the files
				p.publish(e)
			}
		})
	}
	filter := &scopeFilter{sc: sc}
	fopt := FSOptions{
		Poll:      opt.Poll,
		Reconcile: opt.Reconcile,
		Debounce:  opt.Debounce,
		Ignore: func(rel string, dir bool) bool {
			return ignoreNonDocs(rel, dir) || filter.excludes(rel, dir)
		},
		LoadKnown: loadKnown,
		OnChange:  p.apply,
		OnRestat:  p.restat,
		Settle:    opt.Settle,
		OnDegrade: p.degraded,
	}
	if !opt.Watch {
		fopt.Poll = time.Duration(1<<63 - 1) // no watches: one scan
	}
	if opt.Progress != nil {
		p.progress.Store(&opt.Progress) // the first scan's batch only: WatchFS delivers it before returning
	}
	fw, err := WatchFS(p.root, fopt)
	p.progress.Store(nil)
	if err != nil {
		cancel()
		return nil, err
	}
	p.fw = fw
	if p.ext != nil {
		p.observeStartup(start, filter)
	}
	if !opt.Watch {
		fw.Close()
	}
	if opt.Cache {
		save := func() {
			if err := p.SaveCache(); err != nil {
				// A cache that cannot be written costs speed, not truth.
				p.publish(journal.Event{Type: journal.TypeError, Time: schema.TimeOf(time.Now().UTC()), Data: map[string]any{"error": err.Error()}})
			}
		}
		if opt.Watch {
			// A watching projection is answering already: the index of
			// what the scan found (re-encoding 100k entries when one
			// changed) is saved a little later, off the first answers'
			// path, and by Close at the latest.
			// Like Close's, the save is of what the files are then: it
			// syncs first, or removals still settling (a claim moving an
			// item out of pending/) are saved as entries of missing
			// files, which doctor reports as stale-index.
			delay := initialSaveDelay
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				select {
				case <-time.After(delay):
					ctx, cancel := context.WithTimeout(p.ctx, closeSyncTimeout)
					err := p.fw.Sync(ctx)
					cancel()
					if p.ctx.Err() != nil {
						return // Close saves
					}
					_ = err // bounded: a stuck filesystem costs an index the next open re-checks
					save()
				case <-p.ctx.Done(): // Close saves
				}
			}()
		} else {
			save()
		}
	}
	if opt.FollowJournal {
		p.wg.Add(1)
		go p.follow()
	}
	return p, nil
}

// fill puts the entries of a loaded index in the projection (before the
// first scan's changes) and marks the kinds whose index could not be used.
func (p *Projection) fill(entries []*Entry, bad []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kind := range bad {
		p.dirty[kind] = true // missing, stale format or corrupt: rebuild
	}
	// Sized up front: no rehashing while filling.
	p.docs = make(map[string]*Entry, len(entries))
	perKind := map[string]int{}
	for _, e := range entries {
		perKind[e.Kind]++
	}
	for kind, n := range perKind {
		p.byKind[kind] = make(map[string]*Entry, n)
	}
	for _, e := range entries {
		// Fields stay encoded (also when watching): a third of the
		// memory of decoded maps, and queries match on the encoding.
		p.put(e)
	}
}

// degraded reports a switch to polling: journaled (a person looking at
// the journal learns why changes come late), told to the process's
// degrade handler and to the caller.
func (p *Projection) degraded(err error) {
	ReportDegraded(p.opt.Journal, p.root, err)
	if p.opt.OnDegrade != nil {
		p.opt.OnDegrade(err)
	}
}

// ignoreNonDocs hides the journal, the plain files (schema.PlainFiles) and
// anything that is not a .md file.
func ignoreNonDocs(rel string, dir bool) bool {
	if rel == journal.Dir || strings.HasPrefix(rel, journal.Dir+"/") {
		return true
	}
	return !dir && (!strings.HasSuffix(rel, ".md") || schema.PlainFile(rel))
}

// Close stops watching and saves the index cache if enabled.
// SettleExternals waits until the changes the projection has seen so far
// are decided: those no engine call made are journaled as external (each
// waits Options.ExternalGrace for the engine's own entry first). Close
// drops the ones not yet due; a process that stops on request (tavern
// watch interrupted) calls this first so that what it printed is in the
// journal. It returns early when ctx is done; without a journal it
// returns at once.
func (p *Projection) SettleExternals(ctx context.Context) {
	if p.ext != nil {
		p.ext.settle(ctx)
	}
}

func (p *Projection) Close() error {
	if p.opt.Cache && p.opt.Watch && p.fw != nil {
		// The index saved below must be what the files are now: changes
		// still on their way from the kernel (a pool's last item moved to
		// done just before it stops) would otherwise stay in it as entries
		// of missing files. Bounded: a stuck filesystem costs an index
		// that the next open re-checks, never a Close that hangs.
		ctx, cancel := context.WithTimeout(context.Background(), closeSyncTimeout)
		p.fw.Sync(ctx)
		cancel()
	}
	p.cancel()
	var err error
	if p.fw != nil {
		err = p.fw.Close()
	}
	p.wg.Wait()
	if p.ext != nil {
		p.ext.stop()
	}
	p.smu.Lock()
	for s := range p.subs {
		delete(p.subs, s)
		close(s.c)
	}
	p.smu.Unlock()
	if p.opt.Cache {
		if e := p.SaveCache(); err == nil {
			err = e
		}
	}
	return err
}

// initialSaveDelay is how long after Open a watching projection saves the
// index of what its first scan found (and what changed since). A
// variable for tests.
var initialSaveDelay = 5 * time.Second

// closeSyncTimeout bounds Close's wait for changes in flight.
const closeSyncTimeout = 5 * time.Second

// Sync waits until every change made before the call is in the projection.
func (p *Projection) Sync(ctx context.Context) error { return p.fw.Sync(ctx) }

// Mode says how the projection detects changes ("fsnotify", "poll (nfs)").
func (p *Projection) Mode() string { return p.fw.Mode() }

// Polling reports whether changes are found by polling (a network
// filesystem, no inotify, or chosen) rather than by kernel events.
func (p *Projection) Polling() bool { return p.fw.Polling() }

// Root returns the store root the projection is of.
func (p *Projection) Root() string { return p.root }

// Scoped reports whether the projection holds only some kinds
// (Options.Kinds).
func (p *Projection) Scoped() bool { return p.scope != nil }

// Watching reports whether the projection follows changes (Options.Watch).
func (p *Projection) Watching() bool { return p.opt.Watch }

// parseEntry turns file content into an Entry. It never fails: problems
// become the entry's Errors.
func parseEntry(rel string, data []byte) *Entry {
	e := &Entry{Path: rel, Rev: docstore.Revision(data), Valid: true}
	k, caps, kerr := schema.KindOfPath(rel)
	if kerr == nil {
		e.Kind = k.Name
		e.Name = k.DocName(caps)
	}
	d, err := docstore.Parse(rel, data)
	if err != nil {
		e.Valid = false
		_, line, col := docstore.Position(err)
		e.Errors = []Problem{{Line: line, Col: col, Msg: err.Error()}}
		return e
	}
	d.Kind = k
	e.Fields = d.View().Fields()
	for _, fe := range d.Validate(false) {
		e.Valid = false
		e.Errors = append(e.Errors, Problem{Line: fe.Line, Col: fe.Col, Msg: fe.Error()})
	}
	return e
}

// apply is the FSWatcher callback: parse changed files in parallel, then
// update the index, wake waiters and publish events.
func (p *Projection) apply(cs []Change) {
	parsed := make([]*Entry, len(cs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(cs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if c := cs[i]; c.Op == OpCreate || c.Op == OpUpdate {
					parsed[i] = parseEntry(c.Path, c.Data)
				}
			}
		}()
	}
	prog := p.progress.Load()
	for i := range cs {
		next <- i
		if prog != nil && i%128 == 0 {
			(*prog)(i, len(cs))
		}
	}
	close(next)
	wg.Wait()
	if prog != nil {
		(*prog)(len(cs), len(cs))
	}

	now := time.Now().UTC()
	var events []docEvent
	p.mu.Lock()
	for i, c := range cs {
		var ev docEvent
		switch c.Op {
		case OpCreate, OpUpdate:
			e := parsed[i]
			old := p.docs[c.Path]
			key := ""
			if old != nil {
				key = old.Path
			}
			p.dirty[e.Kind] = true
			if old != nil {
				p.dirty[old.Kind] = true
			}
			if old != nil && old.Rev == e.Rev && old.Valid == e.Valid {
				// Same bytes as the cached entry (a re-read after a
				// restart): not a change.
				p.put(compact(e, key))
				continue
			}
			if p.ext == nil && p.opt.Cache && !p.opt.Watch && old != nil && old.Valid {
				// One-shot only: a watching projection (the query daemon)
				// saves its index at Close, and would hold every edited
				// path's old states until then (issue 21's flat memory).
				p.keepReplaced(c.Path, old)
			}
			if old != nil && old.raw != "" {
				o := old.view()
				old = &o
			}
			// The last valid state before this one, if any.
			prev := p.lastValid[c.Path]
			if old != nil && old.Valid {
				prev = old
			}
			if e.Valid {
				delete(p.lastValid, c.Path)
			} else if prev != nil {
				p.lastValid[c.Path] = prev
			}
			p.put(compact(e, key))
			ev = docEvent{e: docEventOf(e, old, prev, now), fields: e.Fields}
			if p.startup {
				if _, ok := p.startPrev[c.Path]; !ok {
					p.startPrev[c.Path] = prev
				}
			} else if p.ext != nil {
				p.ext.observe(&observation{path: cmp.Or(key, c.Path), kind: e.Kind, present: true, entry: e, prev: prev, seen: seenTime(c.State.Seen)})
			}
			// Woken (and published, below) after it is queued for the
			// externals' decision: a waiter may count on that.
			p.wake(e)
		case OpRemove:
			old := p.docs[c.Path]
			if old == nil {
				continue
			}
			prev := p.lastValid[c.Path]
			if old.Valid {
				prev = old
			}
			p.drop(c.Path)
			delete(p.lastValid, c.Path)
			p.dirty[old.Kind] = true
			ev = docEvent{e: journal.Event{Type: journal.TypeRemoved, Time: schema.TimeOf(now), Kind: old.Kind, Path: c.Path}, gone: true}
			if !p.startup && p.ext != nil {
				p.ext.observe(&observation{path: c.Path, kind: old.Kind, prev: prev, seen: time.Now()})
			}
		case OpError:
			ev = docEvent{e: journal.Event{Type: journal.TypeError, Time: schema.TimeOf(now), Path: c.Path, Data: map[string]any{"error": c.Err.Error()}}}
		}
		events = append(events, ev)
	}
	p.mu.Unlock()
	for _, ev := range events {
		p.publishDoc(ev)
	}
}

// docEvent is an event about a document with the fields of its new
// state (nil if it has none), for subscriptions filtered on fields.
type docEvent struct {
	e      journal.Event
	fields map[string]any
	gone   bool // the document was removed
}

func seenTime(ns int64) time.Time {
	if ns == 0 {
		return time.Now()
	}
	return time.Unix(0, ns)
}

// observeStartup hands the externals every difference between the
// documents found by the first scan and the journal's heads: what was
// changed, created or removed while no projection watched. The index
// cache plays no part: `tavern ls` refreshing it hides nothing.
func (p *Projection) observeStartup(start time.Time, filter *scopeFilter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var obs []*observation
	var same []*Entry
	for path, e := range p.docs {
		if p.ext.h.Explained(path, e.Rev, true, start) {
			// Unchanged since journaled: its fields are what the next
			// change is compared with.
			same = append(same, e)
			continue
		}
		if e.raw != "" {
			v := e.view()
			e = &v
		}
		prev := p.startPrev[path]
		if prev == nil && e.Valid {
			prev = p.lastValid[path]
		}
		obs = append(obs, &observation{path: path, kind: e.Kind, present: true, entry: e, prev: prev, seen: start})
	}
	p.ext.h.Paths(func(path string, hd journal.Head) {
		if _, ok := p.docs[path]; ok || Ignored(path) || ignoreNonDocs(path, false) || filter.excludes(path, false) {
			return
		}
		if _, err := os.Lstat(p.Path(path)); err == nil || !isGone(err) {
			return // there, but not a document we could read: not a removal
		}
		kind := ""
		if k, _, err := schema.KindOfPath(path); err == nil {
			kind = k.Name
		}
		obs = append(obs, &observation{path: path, kind: kind, seen: start})
	})
	slices.SortFunc(obs, func(a, b *observation) int { return strings.Compare(a.path, b.path) })
	for _, o := range obs {
		p.ext.observe(o)
	}
	p.startup = false
	p.startPrev = nil
	go func() {
		// Digests only for revisions not recorded yet: after the first
		// run, the few documents that changed. (Entries are never
		// changed in place, so reading them here is safe.)
		for _, e := range same {
			if e.Valid && !p.ext.h.HasFields(e.Path, e.Rev) {
				v := e.view()
				p.ext.seenState(&observation{path: e.Path, present: true, entry: &v})
			}
		}
	}()
}

// restat is the FSWatcher's OnRestat callback: files whose stat changed
// but not their content. Their cache sections must be saved with the new
// states, or they would be re-read on every run.
func (p *Projection) restat(paths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, path := range paths {
		if e := p.docs[path]; e != nil {
			p.dirty[e.Kind] = true
		}
	}
}

// docEventOf is the event for e replacing old (nil: new to the
// projection); prev is the last valid state before e, if any. A valid
// document with no valid state before it (new, or invalid until now) is
// created; its changed fields are relative to prev.
func docEventOf(e, old, prev *Entry, now time.Time) journal.Event {
	ev := journal.Event{Type: journal.TypeUpdated, Time: schema.TimeOf(now), Kind: e.Kind, Path: e.Path, Rev: e.Rev}
	if !e.Valid {
		ev.Type = journal.TypeInvalid
		pr := e.Errors[0]
		ev.Data = map[string]any{"error": pr.Msg, "line": pr.Line, "col": pr.Col}
		return ev
	}
	if old == nil || prev == nil {
		ev.Type = journal.TypeCreated
		return ev
	}
	if ch := journal.ChangedFields(prev.Fields, e.Fields); len(ch) > 0 {
		ev.Data = map[string]any{"changed": ch}
	}
	return ev
}

// compact returns the entry the projection keeps for e: its fields
// encoded (Entry.raw), which take a third of the memory of the decoded
// maps; e itself keeps its map for the events of the change. key is the
// path string the maps already hold for e.Path, if any: the entry shares
// it rather than keep the change's own copy (3 MB after 27,000 edits at
// 100k documents).
func compact(e *Entry, key string) *Entry {
	if e.raw != "" {
		return e
	}
	raw, err := encodeFields(e)
	if err != nil {
		return e // a value the encoding does not know: keep the map
	}
	c := *e
	c.Fields = nil
	// Name, revision and fields in one allocation, as a loaded entry's
	// (ownEntry): an edit then frees and reuses slots of one size class,
	// where three smaller strings left the loaded entries' slots empty
	// and grew the heap by their size (fragmentation, not live data).
	all := e.Name + e.Rev + raw
	a, b := len(e.Name), len(e.Name)+len(e.Rev)
	c.Name, c.Rev, c.raw = all[:a], all[a:b], all[b:]
	if key == e.Path {
		c.Path = key
	}
	return &c
}

// put and drop maintain both indexes; p.mu is held.
func (p *Projection) put(e *Entry) {
	old := p.docs[e.Path]
	if old != nil && old.Kind != e.Kind {
		delete(p.byKind[old.Kind], e.Path)
	}
	p.indexPut(old, e)
	p.docs[e.Path] = e
	m := p.byKind[e.Kind]
	if m == nil {
		m = map[string]*Entry{}
		p.byKind[e.Kind] = m
	}
	m[e.Path] = e
}

func (p *Projection) drop(rel string) {
	if old := p.docs[rel]; old != nil {
		p.indexDrop(old)
		delete(p.byKind[old.Kind], rel)
		delete(p.docs, rel)
	}
}

// wake hands e to every waiter it satisfies; p.mu is held.
func (p *Projection) wake(e *Entry) {
	if !e.Valid {
		return
	}
	for w := range p.waiters {
		if w.kind == e.Kind && w.pred(*e) {
			w.ch <- *e // buffered, one send per waiter
			delete(p.waiters, w)
		}
	}
}

// Get returns the entry for a document path.
func (p *Projection) Get(rel string) (Entry, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.docs[rel]
	if !ok {
		return Entry{}, false
	}
	return e.view(), true
}

// Len returns the number of documents.
func (p *Projection) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.docs)
}

// Query selects entries. Kind is a singular, plural or alias kind name
// ("" for all). Where conditions all must hold (docstore.ParseWhere
// syntax); Match, if set, too. Sort is a field name, "-field" for
// descending; ties and the unsorted order are by path. Limit <= 0 means
// all. Invalid documents are included (Valid false) when they match:
// queries show them marked rather than silently using an old state.
type Query struct {
	Kind  string
	Where []docstore.Cond
	Match func(Entry) bool
	Sort  string
	Limit int
	// Fields, if not nil, is all the entries need of their fields: an
	// entry still encoded (from the cache) is decoded only that far, and
	// its Fields hold just these top-level keys (a decoded entry keeps
	// all of them). For scans of every document that need a field or two:
	// decoding 100k documents in full was most of opening a view. An
	// empty, non-nil Fields decodes nothing.
	Fields []string
	// Encoded leaves the fields of entries the projection holds encoded
	// (as the index cache has them) encoded: their Fields stay nil
	// (Parsed tells a document that did not parse) and AppendEntries
	// copies them as they are. For a caller that passes the entries on
	// without reading their fields: the query daemon spent most of an
	// answer decoding fields to encode them again. It is ignored with
	// Match or Sort, which read the fields.
	Encoded bool
	// Unparsed also selects the entries of files that did not parse
	// (Parsed false, their Errors say why), which no Where condition can
	// match: a listing reports them whatever it filters on, as it does
	// without Where. It is ignored with Match.
	Unparsed bool
}

// Query returns the entries selected by q. The entries are copies, but
// their Fields maps are shared with the projection: treat them as
// read-only.
func (p *Projection) Query(q Query) ([]Entry, error) {
	kind := ""
	if q.Kind != "" {
		k, err := schema.Lookup(q.Kind)
		if err != nil {
			return nil, err
		}
		kind = k.Name
	}
	if p.scope != nil && (q.Kind == "" || !p.scope.has(kind)) {
		return nil, ErrOutOfScope
	}
	// Entries still encoded (from the cache) are filtered on just the
	// top-level keys the conditions name, and decoded in full only if
	// they match.
	encoded := q.Encoded && q.Match == nil && q.Sort == ""
	view := func(e *Entry) Entry {
		if encoded {
			return *e
		}
		return e.viewOf(q.Fields)
	}
	var keys []string
	for _, c := range q.Where {
		k, _, _ := strings.Cut(c.Field, ".")
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if q.Kind != "" && slices.ContainsFunc(q.Where, indexable) && p.opt.Watch {
		// An equality on a field: the field's index gives the entries
		// that can match (building it takes the write lock).
		p.mu.Lock()
		if cands, ok := p.candidates(kind, q.Where); ok {
			matched, views := gather(slices.Values(cands), len(cands), q, keys, view)
			p.mu.Unlock()
			return finishQuery(orderViews(matched, views, q, view), q), nil
		}
		p.mu.Unlock()
	}
	p.mu.RLock()
	var src map[string]*Entry
	if q.Kind != "" {
		src = p.byKind[kind]
	} else {
		src = p.docs
	}
	matched, views := gather(maps.Values(src), len(src), q, keys, view)
	p.mu.RUnlock()
	return finishQuery(orderViews(matched, views, q, view), q), nil
}

// gather runs under p.mu: it returns the entries that satisfy q.Where,
// or with q.Match the views of those it accepts, in no order: a Match
// that visits every document and keeps none (a view's index) costs no
// copy of them, and no sort.
func gather(src iter.Seq[*Entry], n int, q Query, keys []string, view func(*Entry) Entry) (matched []*Entry, views []Entry) {
	some := map[string]any{}
	if q.Match != nil {
		for e := range src {
			if len(q.Where) > 0 && !matchEntry(e, q.Where, keys, some) {
				continue
			}
			if v := view(e); q.Match(v) {
				views = append(views, v)
			}
		}
		return nil, views
	}
	if len(q.Where) == 0 {
		matched = make([]*Entry, 0, n)
	}
	for e := range src {
		if len(q.Where) == 0 || matchEntry(e, q.Where, keys, some) || (q.Unparsed && !e.Parsed()) {
			matched = append(matched, e)
		}
	}
	return matched, nil
}

// orderViews puts what gather found in path order and makes the views of
// the matched entries. Pointers are sorted, not views: swapping 120-byte
// entries was most of an answer of the query daemon. It runs outside the
// projection's lock: an entry is never changed once it is in the maps (a
// change puts a new one), so the matches stay what they were when the
// lock was held.
func orderViews(matched []*Entry, views []Entry, q Query, view func(*Entry) Entry) []Entry {
	if q.Match != nil {
		slices.SortFunc(views, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
		return views
	}
	slices.SortFunc(matched, func(a, b *Entry) int { return strings.Compare(a.Path, b.Path) })
	out := make([]Entry, 0, len(matched))
	for _, e := range matched {
		out = append(out, view(e))
		if q.Sort == "" && q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out
}

// finishQuery sorts and limits a query's result.
// The entries come in path order (queryViews): the order of ties.
func finishQuery(out []Entry, q Query) []Entry {
	if q.Sort != "" {
		docstore.SortBy(out, q.Sort, func(e Entry) map[string]any { return e.Fields })
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// matchEntry reports whether e's fields satisfy every condition: on the
// encoded fields when it can, else on the decoded keys the conditions
// name (keys; some is a scratch map). Entries without fields match no
// condition.
func matchEntry(e *Entry, where []docstore.Cond, keys []string, some map[string]any) bool {
	fields := e.Fields
	if e.raw != "" {
		if match, decided := matchRaw(e.raw, where); decided {
			return match
		}
		fields = decodeSomeFieldsInto(some, e.raw, keys)
	}
	for _, c := range where {
		if fields == nil || !c.Match(fields) {
			return false
		}
	}
	return true
}

// WaitFor returns the first valid document of kind for which pred holds:
// at once if one exists, else as soon as the watcher projects one. It is
// woken by the change itself, not by polling. pred runs under the
// projection's lock: keep it cheap and do not call the projection from it.
//
// A caller that loses the race for the returned document (someone else
// claimed it) should Sync before waiting again, or it may be handed the
// same, already-gone document.
func (p *Projection) WaitFor(ctx context.Context, kind string, pred func(Entry) bool) (Entry, error) {
	k, err := schema.Lookup(kind)
	if err != nil {
		return Entry{}, err
	}
	if !p.scope.has(k.Name) {
		return Entry{}, ErrOutOfScope
	}
	if pred == nil {
		pred = func(Entry) bool { return true }
	}
	w := &waiter{kind: k.Name, pred: pred, ch: make(chan Entry, 1)}
	p.mu.Lock()
	paths := make([]string, 0, len(p.byKind[k.Name]))
	for path := range p.byKind[k.Name] {
		paths = append(paths, path)
	}
	slices.Sort(paths) // oldest first: names are time-ordered IDs
	for _, path := range paths {
		if e := p.byKind[k.Name][path]; e.Valid {
			if v := e.view(); pred(v) {
				p.mu.Unlock()
				return v, nil
			}
		}
	}
	p.waiters[w] = struct{}{}
	p.mu.Unlock()
	select {
	case e := <-w.ch:
		return e, nil
	case <-ctx.Done():
	case <-p.ctx.Done():
	}
	p.mu.Lock()
	delete(p.waiters, w)
	p.mu.Unlock()
	select {
	case e := <-w.ch: // woken while giving up: the match still counts
		return e, nil
	default:
	}
	if ctx.Err() != nil {
		return Entry{}, ctx.Err()
	}
	return Entry{}, ErrClosed
}

// Subscription delivers events that match its filter. A subscriber that
// does not keep up is never blocked on and never silently loses events:
// overflowing events are counted and, as soon as there is room, a
// TypeMissed event with Data["missed"] = N says how many were dropped, so
// the subscriber can resync (re-query the projection or re-read the
// journal).
type Subscription struct {
	C      <-chan journal.Event
	c      chan journal.Event
	f      journal.Filter
	p      *Projection
	missed int
	// where: only events about documents whose fields match; in holds
	// the paths that match now (guarded by p.smu).
	where []docstore.Cond
	in    map[string]bool
}

// Subscribe starts delivering matching events with a buffer of buf
// (default 256).
func (p *Projection) Subscribe(f journal.Filter, buf int) *Subscription {
	return p.SubscribeWhere(f, nil, buf)
}

// SubscribeWhere is Subscribe for the documents whose fields satisfy
// every condition of where (the expressions of `tavern ls --where`), as
// they are after each change. A change that makes a matching document
// stop matching (or removes it, or makes it unparseable) is delivered
// once as TypeLeft, so a subscriber's view of the matching set stays
// right; a document that starts matching arrives with the event of the
// change (doc.updated, doc.created). Events that are not about a
// document (no path) are not delivered; other events about a document
// (item.claimed, external...) are while it matches.
func (p *Projection) SubscribeWhere(f journal.Filter, where []docstore.Cond, buf int) *Subscription {
	if buf <= 0 {
		buf = 256
	}
	c := make(chan journal.Event, buf)
	s := &Subscription{C: c, c: c, f: f, p: p, where: where}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if len(where) > 0 {
		s.in = map[string]bool{}
		var keys []string
		for _, c := range where {
			k, _, _ := strings.Cut(c.Field, ".")
			keys = append(keys, k)
		}
		some := map[string]any{}
		for path, e := range p.docs {
			if matchEntry(e, where, keys, some) {
				s.in[path] = true
			}
		}
	}
	p.smu.Lock()
	p.subs[s] = struct{}{}
	p.smu.Unlock()
	return s
}

func matchAll(where []docstore.Cond, fields map[string]any) bool {
	if fields == nil {
		return false
	}
	for _, c := range where {
		if !c.Match(fields) {
			return false
		}
	}
	return true
}

// Close stops the subscription and closes C.
func (s *Subscription) Close() {
	s.p.smu.Lock()
	defer s.p.smu.Unlock()
	if _, ok := s.p.subs[s]; ok {
		delete(s.p.subs, s)
		close(s.c)
	}
}

// Missed returns how many events were dropped and not yet reported.
func (s *Subscription) Missed() int {
	s.p.smu.Lock()
	defer s.p.smu.Unlock()
	return s.missed
}

// publish delivers an event that is not a document change.
func (p *Projection) publish(e journal.Event) {
	p.smu.Lock()
	defer p.smu.Unlock()
	for s := range p.subs {
		if len(s.where) > 0 && (e.Path == "" || !s.in[e.Path]) {
			continue
		}
		s.send(e)
	}
}

// publishDoc delivers a document change, and TypeLeft to the field
// subscriptions the document stops matching.
func (p *Projection) publishDoc(d docEvent) {
	p.smu.Lock()
	defer p.smu.Unlock()
	for s := range p.subs {
		e := d.e
		if len(s.where) > 0 && e.Path != "" && e.Type != journal.TypeError {
			now := !d.gone && matchAll(s.where, d.fields)
			was := s.in[e.Path]
			switch {
			case now:
				s.in[e.Path] = true
			case was:
				delete(s.in, e.Path)
				e = journal.Event{Type: journal.TypeLeft, Time: e.Time, Kind: e.Kind, Path: e.Path, Rev: e.Rev,
					Data: map[string]any{"op": d.e.Type}}
			default:
				continue
			}
		} else if len(s.where) > 0 {
			continue
		}
		s.send(e)
	}
}

// send delivers e if it passes the filter; p.smu is held.
func (s *Subscription) send(e journal.Event) {
	if !s.f.Match(e) {
		return
	}
	if s.missed > 0 {
		m := journal.Event{Type: journal.TypeMissed, Time: schema.TimeOf(time.Now().UTC()), Data: map[string]any{"missed": s.missed}}
		select {
		case s.c <- m:
			s.missed = 0
		default:
			s.missed++
			return
		}
	}
	select {
	case s.c <- e:
	default:
		s.missed++
	}
}

// follow publishes journal events appended by other processes. Document
// events are skipped: the projection reports those from the files.
func (p *Projection) follow() {
	defer p.wg.Done()
	cur, err := journal.End(p.root)
	if err != nil {
		return
	}
	own := ""
	if p.opt.Journal != nil {
		own = p.opt.Journal.Writer()
	}
	poll := time.Duration(0)
	if p.fw.Polling() {
		poll = time.Duration(p.fw.poll.Load())
	}
	_ = journal.Follow(p.ctx, p.root, cur, journal.Filter{}, poll, func(e journal.Event, err error) bool {
		if err != nil {
			p.publish(journal.Event{Type: journal.TypeError, Time: schema.TimeOf(time.Now().UTC()), Data: map[string]any{"error": err.Error()}})
			return true
		}
		if e.Writer == own || strings.HasPrefix(e.Type, "doc.") {
			return true
		}
		p.publish(e)
		return true
	})
}

// Path returns the absolute path of a document path.
func (p *Projection) Path(rel string) string { return filepath.Join(p.root, filepath.FromSlash(rel)) }

// DocMatcher selects journal events by the fields of the document they
// are about, as it is on disk now (`tavern log --where`): the journal
// records revisions, not fields. Events without a path, and events about
// documents that no longer exist or do not parse, never match.
type DocMatcher struct {
	store *docstore.Store
	where []docstore.Cond
	memo  map[string]bool // path -> matches, while Fresh is false
	// Fresh re-reads the document for every event (following the
	// journal, where documents change as their events come); otherwise
	// each document is read once.
	Fresh bool
}

// NewDocMatcher returns a matcher for the conditions where.
func NewDocMatcher(s *docstore.Store, where []docstore.Cond) *DocMatcher {
	return &DocMatcher{store: s, where: where, memo: map[string]bool{}}
}

// Match reports whether e is about a document that satisfies every
// condition.
func (m *DocMatcher) Match(e journal.Event) bool {
	if e.Path == "" {
		return false
	}
	if ok, seen := m.memo[e.Path]; seen && !m.Fresh {
		return ok
	}
	ok := false
	if data, err := m.store.ReadFile(e.Path); err == nil {
		ok = matchAll(m.where, parseEntry(e.Path, data).Fields)
	}
	m.memo[e.Path] = ok
	return ok
}
