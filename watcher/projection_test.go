package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newStore(tb testing.TB) *docstore.Store {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func agentDoc(name, state string) string {
	return fmt.Sprintf("---\nname: %s\nstate: %s\n---\nnotes\n", name, state)
}

func writeDoc(tb testing.TB, s *docstore.Store, rel, text string) {
	tb.Helper()
	p := filepath.Join(s.Root(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func writeDocAtomic(tb testing.TB, s *docstore.Store, rel, text string) {
	tb.Helper()
	p := filepath.Join(s.Root(), filepath.FromSlash(rel))
	tmp := filepath.Join(s.Root(), ".tmp", filepath.Base(rel)+".writing")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		tb.Fatal(err)
	}
}

func openProj(tb testing.TB, s *docstore.Store, opt Options) *Projection {
	tb.Helper()
	p, err := Open(s, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

func paths(es []Entry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Path)
	}
	return strings.Join(out, ",")
}

func TestProjectionQuery(t *testing.T) {
	s := newStore(t)
	writeDoc(t, s, "agents/carol.md", agentDoc("carol", "working"))
	writeDoc(t, s, "agents/alice.md", agentDoc("alice", "working"))
	writeDoc(t, s, "agents/bob.md", agentDoc("bob", "idle"))
	writeDoc(t, s, "agents/bad.md", agentDoc("bad", "sleepy")) // not in the enum
	writeDoc(t, s, "agents/broken.md", "---\nname: [unclosed\n---\n")
	writeDoc(t, s, "agents/README.txt", "not a document")
	p := openProj(t, s, Options{})
	where := func(exprs ...string) []docstore.Cond {
		var cs []docstore.Cond
		for _, x := range exprs {
			c, err := docstore.ParseWhere(x)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	for _, tc := range []struct {
		name string
		q    Query
		want string
	}{
		{"all agents by path", Query{Kind: "agents"}, "agents/alice.md,agents/bad.md,agents/bob.md,agents/broken.md,agents/carol.md"},
		{"where", Query{Kind: "agent", Where: where("state=working")}, "agents/alice.md,agents/carol.md"},
		{"sort desc limit", Query{Kind: "agent", Where: where("state=working"), Sort: "-name", Limit: 1}, "agents/carol.md"},
		{"invalid still matches, marked", Query{Kind: "agent", Where: where("state=sleepy")}, "agents/bad.md"},
		{"match func", Query{Kind: "agent", Match: func(e Entry) bool { return !e.Valid }}, "agents/bad.md,agents/broken.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Query(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if paths(got) != tc.want {
				t.Errorf("got %s, want %s", paths(got), tc.want)
			}
		})
	}
	e, ok := p.Get("agents/broken.md")
	if !ok || e.Valid || e.Fields != nil || len(e.Errors) == 0 || e.Errors[0].Line == 0 {
		t.Errorf("broken entry: got %+v", e)
	}
	if _, err := p.Query(Query{Kind: "nosuchkind"}); err == nil {
		t.Error("unknown kind: got nil error")
	}
}

func next(tb testing.TB, sub *Subscription) journal.Event {
	tb.Helper()
	select {
	case e, ok := <-sub.C:
		if !ok {
			tb.Fatal("subscription closed")
		}
		return e
	case <-time.After(10 * time.Second):
		tb.Fatal("no event within 10s")
	}
	return journal.Event{}
}

func TestHandEditInvalidAndBack(t *testing.T) {
	s := newStore(t)
	p := openProj(t, s, Options{Watch: true, Reconcile: -1})
	sub := p.Subscribe(journal.Filter{Kinds: []string{"agent"}}, 16)
	writeDoc(t, s, "agents/alice.md", agentDoc("alice", "idle"))
	if e := next(t, sub); e.Type != journal.TypeCreated || e.Path != "agents/alice.md" {
		t.Fatalf("got %+v, want created", e)
	}
	writeDoc(t, s, "agents/alice.md", "---\nname: alice\nstate: [working\n---\nnotes\n")
	e := next(t, sub)
	// path:line:col (yaml.v3 places this error on the line the mapping
	// entry starts, so only require a position inside the frontmatter).
	if line, _ := e.Data["line"].(int); e.Type != journal.TypeInvalid || line < 2 || line > 3 ||
		!strings.HasPrefix(fmt.Sprint(e.Data["error"]), "agents/alice.md:") {
		t.Fatalf("got %+v, want invalid with path:line:col", e)
	}
	got, _ := p.Get("agents/alice.md")
	if got.Valid || got.Fields != nil {
		t.Errorf("invalid doc still carries its last valid state: %+v", got)
	}
	raw, _ := os.ReadFile(filepath.Join(s.Root(), "agents/alice.md"))
	if !strings.Contains(string(raw), "[working") {
		t.Error("broken file was rewritten")
	}
	writeDoc(t, s, "agents/alice.md", agentDoc("alice", "working"))
	e = next(t, sub)
	if e.Type != journal.TypeUpdated {
		t.Fatalf("got %+v, want updated", e)
	}
	got, _ = p.Get("agents/alice.md")
	if !got.Valid || got.Fields["state"] != "working" {
		t.Errorf("after repair: %+v", got)
	}
	os.Remove(filepath.Join(s.Root(), "agents/alice.md"))
	if e := next(t, sub); e.Type != journal.TypeRemoved {
		t.Fatalf("got %+v, want removed", e)
	}
}

func TestWaitForWokenByEvent(t *testing.T) {
	s := newStore(t)
	// No reconcile, no polling: only an event can wake the waiter.
	p := openProj(t, s, Options{Watch: true, Reconcile: -1, Poll: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		e   Entry
		err error
	}
	done := make(chan res, 1)
	registered := make(chan struct{})
	go func() {
		e, err := p.WaitFor(ctx, "agents", func(e Entry) bool {
			select {
			case <-registered:
			default:
				close(registered) // the first call is the initial check
			}
			return e.Fields["state"] == "working"
		})
		done <- res{e, err}
	}()
	writeDoc(t, s, "agents/zed.md", agentDoc("zed", "idle")) // not a match
	<-registered
	writeDoc(t, s, "agents/bob.md", agentDoc("bob", "working"))
	select {
	case r := <-done:
		if r.err != nil || r.e.Path != "agents/bob.md" {
			t.Fatalf("WaitFor: got %+v, %v", r.e, r.err)
		}
	case <-ctx.Done():
		t.Fatal("WaitFor not woken by the write")
	}
	// Already there: returns at once.
	e, err := p.WaitFor(ctx, "agent", func(e Entry) bool { return e.Name == "bob" })
	if err != nil || e.Path != "agents/bob.md" {
		t.Errorf("existing match: got %+v, %v", e, err)
	}
}

func TestWaitForCancel(t *testing.T) {
	s := newStore(t)
	p := openProj(t, s, Options{Watch: true, Reconcile: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.WaitFor(ctx, "agent", func(Entry) bool { return false })
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor ignored cancellation")
	}
	p.mu.RLock()
	n := len(p.waiters)
	p.mu.RUnlock()
	if n != 0 {
		t.Errorf("%d waiters left registered", n)
	}
}

func TestSlowSubscriberGetsMissed(t *testing.T) {
	s := newStore(t)
	p := openProj(t, s, Options{Watch: true, Reconcile: -1})
	sub := p.Subscribe(journal.Filter{Types: []string{journal.TypeCreated}}, 2)
	for i := range 5 {
		// Written whole (temp + rename): a plain write can be seen empty
		// for a moment on a busy machine, which is reported as invalid
		// and then updated, not created; this test is about overflow.
		writeDocAtomic(t, s, fmt.Sprintf("agents/a%d.md", i), agentDoc(fmt.Sprintf("a%d", i), "idle"))
		if err := p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := sub.Missed(); got != 3 {
		t.Errorf("Missed() = %d, want 3", got)
	}
	next(t, sub)
	next(t, sub)
	writeDoc(t, s, "agents/late.md", agentDoc("late", "idle"))
	m := next(t, sub)
	if m.Type != journal.TypeMissed || m.Data["missed"] != 3 {
		t.Fatalf("got %+v, want missed=3", m)
	}
	if e := next(t, sub); e.Path != "agents/late.md" {
		t.Errorf("after the missed signal: got %+v", e)
	}
}

// freshEntries is what a projection built from scratch, without a cache,
// sees.
func freshEntries(tb testing.TB, s *docstore.Store) []Entry {
	tb.Helper()
	p, err := Open(s, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	es, err := p.Query(Query{})
	if err != nil {
		tb.Fatal(err)
	}
	return es
}

func assertSameEntries(tb testing.TB, got, want []Entry) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("entries: got %d, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			tb.Fatalf("entry %d:\ngot  %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestIndexCache(t *testing.T) {
	s := newStore(t)
	for i := range 50 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), "idle"))
	}
	writeDoc(t, s, "agents/broken.md", "---\nname: [\n---\n")
	cachePath := filepath.Join(s.Root(), CacheFile, "agent")
	load := func() ([]*Entry, map[string]FileState, error) {
		entries, states, _, err := loadCache(s.Root(), []string{"agent"}, false)
		return entries, states, err
	}
	query := func() []Entry {
		p := openProj(t, s, Options{Cache: true})
		es, err := p.Query(Query{})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		return es
	}
	query() // builds the cache
	if _, err := os.Stat(cachePath); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	t.Run("warm", func(t *testing.T) {
		// Age the cached states so none is racy (instead of sleeping),
		// then no document may be read: everything comes from the cache.
		ageCache(t, s.Root())
		var reads atomic.Int64
		testOpenHook = func(p string) (*os.File, error) {
			reads.Add(1)
			return os.OpenFile(p, openFlags, 0)
		}
		got := query()
		testOpenHook = nil
		if n := reads.Load(); n != 0 {
			t.Errorf("warm open read %d documents, want 0", n)
		}
		assertSameEntries(t, got, freshEntries(t, s))
	})
	t.Run("stale", func(t *testing.T) {
		writeDoc(t, s, "agents/a03.md", agentDoc("a03", "working"))
		os.Remove(filepath.Join(s.Root(), "agents/a04.md"))
		writeDoc(t, s, "agents/new.md", agentDoc("new", "idle"))
		assertSameEntries(t, query(), freshEntries(t, s))
	})
	t.Run("corrupt", func(t *testing.T) {
		data, _ := os.ReadFile(cachePath)
		data[len(data)/2] ^= 0xff
		os.WriteFile(cachePath, data, 0o644)
		if _, _, err := load(); !errors.Is(err, ErrCacheCorrupt) {
			t.Fatalf("loadCache of flipped byte: got %v, want ErrCacheCorrupt", err)
		}
		writeDoc(t, s, "agents/a05.md", agentDoc("a05", "done"))
		assertSameEntries(t, query(), freshEntries(t, s))
		if _, _, err := load(); err != nil {
			t.Errorf("cache not rebuilt: %v", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		data, _ := os.ReadFile(cachePath)
		os.WriteFile(cachePath, data[:len(data)/3], 0o644)
		assertSameEntries(t, query(), freshEntries(t, s))
	})
	t.Run("garbage", func(t *testing.T) {
		os.WriteFile(cachePath, []byte("hello"), 0o644)
		assertSameEntries(t, query(), freshEntries(t, s))
	})
	t.Run("other schema", func(t *testing.T) {
		writeSection(s.Root(), &cacheData{Schema: "other", Kind: "agent", Records: []cacheRecord{{Entry: Entry{Path: "agents/ghost.md", Kind: "agent"}}}})
		if _, _, err := load(); !errors.Is(err, ErrCacheStale) {
			t.Fatalf("got %v, want ErrCacheStale", err)
		}
		assertSameEntries(t, query(), freshEntries(t, s))
	})
	t.Run("lying entry with matching stat", func(t *testing.T) {
		// Each entry's revision must be the hash its state records; an
		// entry that disagrees (and a ghost for a missing file) makes
		// the whole cache suspect.
		_, states, err := load()
		if err != nil {
			t.Fatal(err)
		}
		recs := []cacheRecord{{State: FileState{Size: 1, Seen: 1}, Entry: Entry{Path: "agents/ghost.md", Kind: "agent"}}}
		for path, st := range states {
			recs = append(recs, cacheRecord{State: st, Entry: Entry{Path: path, Kind: "agent"}})
			break
		}
		writeSection(s.Root(), &cacheData{Schema: schemaFingerprint(), Kind: "agent", Records: recs})
		assertSameEntries(t, query(), freshEntries(t, s))
	})
}

// ageCache rewrites every cache section with states aged so none is
// racy (instead of sleeping).
func ageCache(t *testing.T, root string) {
	t.Helper()
	for _, kind := range allSections() {
		cd, err := loadSection(root, kind)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not cached (yet)
		}
		if err != nil {
			t.Fatalf("section %q: %v", kind, err)
		}
		for i := range cd.Records {
			st := &cd.Records[i].State
			st.Seen = max(st.MTime, st.CTime) + int64(time.Hour)
		}
		if err := writeSection(root, cd); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExternalEdits(t *testing.T) {
	s := newStore(t)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	journal.RecordMutations(s, j, "", func(err error) { t.Errorf("journal: %v", err) })
	writeDoc(t, s, "agents/eng.md", agentDoc("eng", "idle"))
	writeDoc(t, s, "agents/hand.md", agentDoc("hand", "idle"))
	p := openProj(t, s, Options{Watch: true, Reconcile: -1, Journal: j, ExternalGrace: time.Second})
	if _, err := s.Update("agents/eng.md", func(d *docstore.Doc) error { return d.Set("state", "working") }); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeDoc(t, s, "agents/hand.md", agentDoc("hand", "done"))
	// A hand edit followed at once by an engine update of the same
	// document: the hand edit is still external.
	writeDoc(t, s, "agents/mixed.md", agentDoc("mixed", "idle"))
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("agents/mixed.md", func(d *docstore.Doc) error { return d.Set("state", "working") }); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ext journal.Event
	seen := map[string]bool{}
	err = journal.Follow(ctx, s.Root(), journal.Cursor{}, journal.Filter{Types: []string{journal.TypeExternal}}, 0, func(e journal.Event, err error) bool {
		if err != nil {
			t.Errorf("journal: %v", err)
			return true
		}
		if e.Path == "agents/hand.md" && e.Data["op"] == journal.TypeUpdated {
			ext = e
		}
		if e.Path != "agents/hand.md" || e.Data["op"] == journal.TypeUpdated {
			seen[e.Path] = true
		}
		return !seen["agents/hand.md"] || !seen["agents/mixed.md"]
	})
	if err != nil {
		t.Fatalf("no external event: %v", err)
	}
	if ext.Path != "agents/hand.md" || fmt.Sprint(ext.Data["changed"]) != "[state]" || ext.Data["op"] != journal.TypeUpdated {
		t.Errorf("external event: got %+v", ext)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var types []string
	journal.Read(s.Root(), journal.Filter{}, func(e journal.Event, err error) bool {
		op, _ := e.Data["op"].(string)
		types = append(types, strings.TrimSpace(e.Type+" "+e.Path+" "+op))
		return true
	})
	slices.Sort(types) // the externals are decided at the same moment
	// The documents written before the projection opened (tavern.md by
	// Init) were never journaled: the projection journals them as
	// created, then the hand edits as they happen.
	want := "doc.updated agents/eng.md,doc.updated agents/mixed.md," +
		"external agents/eng.md doc.created,external agents/hand.md doc.created,external agents/hand.md doc.updated," +
		"external agents/mixed.md doc.created,external tavern.md doc.created"
	if got := strings.Join(types, ","); got != want {
		t.Errorf("journal: got %s, want %s", got, want)
	}
}

// TestStartupLateCreate: a `tuple out` journals its doc.created after
// the file is visible, and a `tuple in --wait` woken by it journals its
// move away first (seen in a real run's journal; so can a `queue take
// --wait` racing `queue add`). A watcher started later took the late
// creation for the head and journaled an external removal of a tuple
// the engine took. A path removed by hand is still journaled.
func TestStartupLateCreate(t *testing.T) {
	s := newStore(t)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	now := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	at := func(ms int) schema.Timestamp { return schema.TimeOf(now.Add(time.Duration(ms) * time.Millisecond)) }
	for _, e := range []journal.Event{
		{Type: journal.TypeMoved, Path: "tuples/job/.taken/a.md", Time: at(0), Data: map[string]any{"from": "tuples/job/a.md"}},
		{Type: journal.TypeMoved, Path: ".trash/x-tuples__job__a.md", Time: at(0), Data: map[string]any{"from": "tuples/job/.taken/a.md"}},
		{Type: "tuple.in", Kind: "tuple", Path: "tuples/job/a.md", Rev: "ra", Time: at(0)},
		{Type: journal.TypeCreated, Kind: "tuple", Path: "tuples/job/a.md", Rev: "ra", Time: at(1)},
		// Created by the engine, then removed by hand.
		{Type: journal.TypeCreated, Kind: "agent", Path: "agents/gone.md", Rev: "rg", Time: at(2)},
	} {
		if _, err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	p := openProj(t, s, Options{Watch: true, Reconcile: -1, Journal: j, ExternalGrace: time.Millisecond})
	// The startup's observations are decided in one batch: once the hand
	// removal is journaled, so would the tuple's be.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = journal.Follow(ctx, s.Root(), journal.Cursor{}, journal.Filter{Types: []string{journal.TypeExternal}}, 0, func(e journal.Event, err error) bool {
		return err != nil || e.Path != "agents/gone.md"
	})
	if err != nil {
		t.Fatalf("no external removal of agents/gone.md: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	journal.Read(s.Root(), journal.Filter{Types: []string{journal.TypeExternal}}, func(e journal.Event, err error) bool {
		if err == nil && strings.HasPrefix(e.Path, "tuples/") {
			t.Errorf("external event for a tuple the engine took: %+v", e)
		}
		return true
	})
}

func TestProjectionSeesNewDirectories(t *testing.T) {
	s := newStore(t)
	p := openProj(t, s, Options{Watch: true, Reconcile: -1, Poll: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan Entry, 1)
	go func() {
		e, err := p.WaitFor(ctx, "items", nil)
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	// mkdir -p of the queue's directories and an item in one go: the
	// item's directory did not exist when the projection started.
	writeDoc(t, s, "queues/build/pending/0001.md", "---\nqueue: build\n---\nwork\n")
	writeDoc(t, s, "queues/build/notes.txt", "not a document")
	select {
	case e := <-got:
		if e.Path != "queues/build/pending/0001.md" || e.Kind != "item" {
			t.Errorf("got %+v", e)
		}
	case <-ctx.Done():
		t.Fatal("item in a new directory never projected")
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Get("queues/build/notes.txt"); ok {
		t.Error("a .txt file was projected")
	}
	// Renamed directory: the item moves with it.
	if err := os.Rename(filepath.Join(s.Root(), "queues/build"), filepath.Join(s.Root(), "queues/ship")); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	es, _ := p.Query(Query{Kind: "items"})
	if paths(es) != "queues/ship/pending/0001.md" {
		t.Errorf("after renaming the queue dir: %s", paths(es))
	}
}

// TestCloseSavesCurrentIndex: a watching projection that saves the index
// cache when it closes saves what the files are when Close is called, not
// what it had applied by then. Files removed or moved just before Close
// (a pool's last item moved to done) must not stay in the index as
// entries of missing files, which doctor reports (stale-index).
func TestCloseSavesCurrentIndex(t *testing.T) {
	for round := range 5 {
		s := newStore(t)
		for i := range 20 {
			writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), "idle"))
		}
		p := openProj(t, s, Options{Watch: true, Cache: true})
		// Removed, and renamed to another name, at once before Close.
		for i := range 10 {
			from := filepath.Join(s.Root(), fmt.Sprintf("agents/a%02d.md", i))
			if i%2 == 0 {
				if err := os.Remove(from); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Rename(from, filepath.Join(s.Root(), fmt.Sprintf("agents/b%02d.md", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		fs, err := IndexFindings(s.Root())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			t.Errorf("round %d: index after Close: %s %s: %s", round, f.Kind, f.Path, f.Detail)
		}
		entries, _, _, err := loadCache(s.Root(), []string{"agent"}, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(entries), 15; got != want { // 10 untouched, 5 renamed
			t.Errorf("round %d: index after Close has %d agents, want %d", round, got, want)
		}
	}
}

// TestEngineCreatesNeedNoSettle: a document the engine creates (an
// unnamed O_TMPFILE linked in place, then closed) is complete when its
// name appears; the projection reports it without waiting out the settle
// time. Before, inotify's IN_EXCL_UNLINK hid the unnamed file's close and
// every engine create (a take, a done, a send) reached watchers a second
// late (the settle default): the views' event-to-page p99 was 1 s. The
// settle time here is an hour, so the old code fails at the deadline.
func TestEngineCreatesNeedNoSettle(t *testing.T) {
	s := newStore(t)
	p := openProj(t, s, Options{Watch: true, Settle: time.Hour})
	if strings.HasPrefix(p.Mode(), "poll") {
		t.Skip("no inotify here: polling reads files as they are")
	}
	sub := p.Subscribe(journal.Filter{}, 100)
	defer sub.Close()
	for i := range 3 {
		name := fmt.Sprintf("agents/z%d.md", i)
		d, err := docstore.Parse(name, []byte(agentDoc(fmt.Sprintf("z%d", i), "idle")))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(name, d); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-sub.C:
			if got, want := e.Path, name; got != want {
				t.Fatalf("event for %s, want %s", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s created by the engine: no event within 30s (held for the settle time)", name)
		}
	}
}

// TestQueryFields: a query that names the fields it needs gets entries
// decoded that far (from the index cache), and the same paths, kinds and
// values as a full query.
func TestQueryFields(t *testing.T) {
	s := newStore(t)
	for i := range 5 {
		writeDoc(t, s, fmt.Sprintf("agents/a%d.md", i), agentDoc(fmt.Sprintf("a%d", i), "idle"))
	}
	first := openProj(t, s, Options{Cache: true})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	p := openProj(t, s, Options{Cache: true}) // entries come encoded from the cache
	some, err := p.Query(Query{Kind: "agents", Fields: []string{"state"}})
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.Query(Query{Kind: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(some), len(all); got != want || want != 5 {
		t.Fatalf("%d entries with Fields, %d without, want 5", got, want)
	}
	for i := range some {
		if some[i].Path != all[i].Path || !some[i].Valid {
			t.Errorf("entry %d: %s (valid %v), want %s", i, some[i].Path, some[i].Valid, all[i].Path)
		}
		if got, want := len(some[i].Fields), 1; got != want {
			t.Errorf("%s: %d fields decoded, want %d: %v", some[i].Path, got, want, some[i].Fields)
		}
		if got, want := some[i].Fields["state"], all[i].Fields["state"]; got != want || want != "idle" {
			t.Errorf("%s: state %v, want %v", some[i].Path, got, want)
		}
	}
}

// TestSaveCacheEncodesOutsideLocks: encoding a section (100k entries on a
// big store) must not hold the projection's lock, or every change, and
// every page of a view, waits for it.
func TestSaveCacheEncodesOutsideLocks(t *testing.T) {
	s := newStore(t)
	for i := range 5 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), "idle"))
	}
	p := openProj(t, s, Options{Watch: true, Cache: true})
	p.mu.Lock()
	p.dirty["agent"] = true
	p.mu.Unlock()
	testHookEncoding = func() {
		locked := make(chan struct{})
		go func() {
			p.mu.Lock() // what apply takes for a change
			p.mu.Unlock()
			p.fw.smu.Lock() // what the watcher takes to process one
			p.fw.smu.Unlock()
			close(locked)
		}()
		select {
		case <-locked:
		case <-time.After(10 * time.Second):
			t.Error("a change could not take the projection's locks while the index was encoded")
		}
	}
	defer func() { testHookEncoding = nil }()
	if err := p.SaveCache(); err != nil {
		t.Fatal(err)
	}
}

// TestEditedEntryLayout: the entry kept for an edited document keeps its
// name, revision and fields in one allocation, as a loaded entry does
// (three strings left the loaded entries' slots empty: the heap grew
// with edits), and uses the path string the projection's maps already
// hold, not the change's own copy (3 MB after 27,000 edits at 100k
// documents), as does the externals' map of last observations.
func TestEditedEntryLayout(t *testing.T) {
	s, p := watchedAgent(t)
	key := func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		for k := range p.docs {
			if k == "agents/a00.md" {
				return k
			}
		}
		t.Fatal("agents/a00.md is not in the projection")
		return ""
	}
	before := key()
	writeDoc(t, s, "agents/a00.md", agentDoc("a00", "working"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.WaitFor(ctx, "agent", func(e Entry) bool { return e.Fields["state"] == "working" }); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	kept := *p.docs["agents/a00.md"]
	p.mu.Unlock()
	if unsafe.StringData(kept.Path) != unsafe.StringData(before) || unsafe.StringData(key()) != unsafe.StringData(before) {
		t.Error("the edited entry's path is a string of its own, not the maps' key")
	}
	// Its name, revision and fields share one allocation, as a loaded
	// entry's do.
	name := unsafe.Pointer(unsafe.StringData(kept.Name))
	if kept.Name == "" || kept.Rev == "" || kept.raw == "" ||
		unsafe.Pointer(unsafe.StringData(kept.Rev)) != unsafe.Add(name, len(kept.Name)) ||
		unsafe.Pointer(unsafe.StringData(kept.raw)) != unsafe.Add(name, len(kept.Name)+len(kept.Rev)) {
		t.Errorf("the edited entry's name, revision and fields are not one allocation: %q %q %q", kept.Name, kept.Rev, kept.raw)
	}
	// The hand edit's observation keys the externals' map the same way.
	p.ext.mu.Lock()
	defer p.ext.mu.Unlock()
	found := false
	for k := range p.ext.last {
		if k == "agents/a00.md" {
			found = true
			if unsafe.StringData(k) != unsafe.StringData(before) {
				t.Error("the externals' map keys the edit with a string of its own")
			}
		}
	}
	if !found {
		t.Error("the hand edit was not observed")
	}
}

// watchedAgent is a store with one idle agent, agents/a00.md, and a
// watching projection that journals hand edits.
func watchedAgent(tb testing.TB) (*docstore.Store, *Projection) {
	tb.Helper()
	s := newStore(tb)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { j.Close() })
	writeDoc(tb, s, "agents/a00.md", agentDoc("a00", "idle"))
	return s, openProj(tb, s, Options{Watch: true, Journal: j})
}

// TestPublishedChangeIsObserved: a change is queued for the externals'
// decision before anyone hears of it, so a WaitFor that returns can count
// on it. CI saw TestEditedEntryLayout's WaitFor return first. The test
// holds the externals' lock: before the fix, the change was published
// while its observation waited for that lock.
func TestPublishedChangeIsObserved(t *testing.T) {
	s, p := watchedAgent(t)
	observed := func() bool {
		_, ok := p.ext.last["agents/a00.md"]
		return ok
	}
	p.ext.mu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			p.ext.mu.Unlock()
		}
	}
	defer unlock()
	writeDoc(t, s, "agents/a00.md", agentDoc("a00", "working"))
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := p.WaitFor(ctx, "agent", func(e Entry) bool { return e.Fields["state"] == "working" })
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if !observed() {
			t.Fatal("the change was published before it was queued for the externals")
		}
	case <-time.After(500 * time.Millisecond):
		// Not published while its observation waits: as it should be.
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.ext.mu.Lock()
	defer p.ext.mu.Unlock()
	if !observed() {
		t.Error("the hand edit was not observed")
	}
}

// TestInitialSaveIsCurrent: the index a watching projection saves a few
// seconds after Open (initialSaveDelay) is what the files are then, like
// Close's. Before, files removed or moved shortly before that save (a
// claim moving an item from pending/ to claimed/, still settling) were
// saved as entries of missing files, and `tavern doctor` reported
// stale-index and exited 5 on a healthy store: seen after a pool of
// drones ran for five seconds with a drone killed at the wrong moment.
func TestInitialSaveIsCurrent(t *testing.T) {
	defer func(d time.Duration) { initialSaveDelay = d }(initialSaveDelay)
	initialSaveDelay = 300 * time.Millisecond
	s := newStore(t)
	for i := range 10 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), "idle"))
	}
	// Removals settle for an hour: only a sync applies them in time.
	p := openProj(t, s, Options{Watch: true, Cache: true, Settle: time.Hour})
	if strings.HasPrefix(p.Mode(), "poll") {
		t.Skip("no inotify here: polling reads files as they are")
	}
	for i := range 4 {
		from := filepath.Join(s.Root(), fmt.Sprintf("agents/a%02d.md", i))
		if i%2 == 0 {
			if err := os.Remove(from); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Rename(from, filepath.Join(s.Root(), fmt.Sprintf("agents/b%02d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	section := filepath.Join(s.Root(), CacheFile, sectionFile("agent"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(section); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no index saved after Open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fs, err := IndexFindings(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		t.Errorf("index saved after Open: %s %s: %s", f.Kind, f.Path, f.Detail)
	}
}
