package tuples

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// newSpace returns a tuple space in a fresh store. The journal is real so
// tests can check the events.
func newSpace(tb testing.TB, opt SpaceOptions) *Space {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	sp, err := NewSpace(s, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return sp
}

func out(tb testing.TB, sp *Space, typ string, kv ...any) *Tuple {
	tb.Helper()
	var values []docstore.Field
	for i := 0; i+1 < len(kv); i += 2 {
		values = append(values, docstore.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	t, err := sp.Out(typ, values, OutOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func pattern(tb testing.TB, terms ...string) Pattern {
	tb.Helper()
	p, err := ParsePattern(terms)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// events returns the journal's event types in order, filtered by prefix.
func tupleEvents(tb testing.TB, sp *Space, prefix string) []journal.Event {
	tb.Helper()
	var out []journal.Event
	_, err := journal.Read(sp.Store().Root(), journal.Filter{Types: []string{prefix}}, func(e journal.Event, err error) bool {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
		return true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestOutRdIn(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	a := out(t, sp, "job", "status", "pending", "n", 1)
	b := out(t, sp, "job", "status", "pending", "n", 2)
	out(t, sp, "job", "status", "done", "n", 3)

	if _, err := os.Stat(filepath.Join(sp.Store().Root(), "tuples", "job", a.ID+".md")); err != nil {
		t.Fatalf("tuple file: %v", err)
	}
	// rd does not consume, and returns the oldest match.
	for i := 0; i < 2; i++ {
		got, err := sp.Rdp("job", pattern(t, "status=pending"))
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != a.ID {
			t.Fatalf("rdp #%d = %s, want the oldest %s", i, got.ID, a.ID)
		}
	}
	// Formals capture; predicates filter.
	got, err := sp.Rdp("job", pattern(t, "n>1", "status=?"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != b.ID || got.Captures["status"] != "pending" {
		t.Fatalf("rdp n>1 status=? = %s %v, want %s with status=pending captured", got.ID, got.Captures, b.ID)
	}
	// in takes, in age order, each once.
	for _, want := range []*Tuple{a, b} {
		got, err := sp.Inp("job", pattern(t, "status=pending"))
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Values()["n"] != want.Values()["n"] {
			t.Fatalf("inp = %s %v, want %s", got.ID, got.Values(), want.ID)
		}
	}
	if _, err := sp.Inp("job", pattern(t, "status=pending")); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("third inp: %v, want ErrNoTuple", err)
	}
	if _, err := sp.Rdp("job", pattern(t, "status=pending")); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("rdp after in: %v, want ErrNoTuple", err)
	}
	left, bad := sp.List("job", nil)
	if len(left) != 1 || len(bad) != 0 {
		t.Fatalf("ls = %d tuples, %v; want the done one", len(left), bad)
	}
	// Consumed tuples are archived, not unlinked; no lock files remain.
	trash, _ := filepath.Glob(filepath.Join(sp.Store().Root(), ".trash", "*-tuples__job__*.md"))
	if len(trash) != 2 {
		t.Fatalf("trash holds %d consumed tuples, want 2", len(trash))
	}
	locks, _ := filepath.Glob(filepath.Join(sp.Store().Root(), ".locks", "tuples", "job", "*.lock"))
	if len(locks) != 0 {
		t.Fatalf("lock files left: %v", locks)
	}
	taken, _ := filepath.Glob(filepath.Join(sp.Store().Root(), "tuples", "job", stagingDir, "*"))
	if len(taken) != 0 {
		t.Fatalf("staging not empty: %v", taken)
	}
	var types []string
	for _, e := range tupleEvents(t, sp, "tuple.") {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, " "), "tuple.out tuple.out tuple.out tuple.in tuple.in"; got != want {
		t.Fatalf("journal = %s, want %s", got, want)
	}
}

func TestOutRejects(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	for _, typ := range []string{"", ".hidden", "a/b", ".."} {
		if _, err := sp.Out(typ, nil, OutOptions{}); err == nil {
			t.Errorf("Out(%q) succeeded", typ)
		}
	}
	if _, err := sp.Out("job", []docstore.Field{{Key: "id", Value: "x"}}, OutOptions{}); !errors.Is(err, ErrBadTuple) {
		t.Errorf("Out with id value: %v, want ErrBadTuple", err)
	}
	if _, err := sp.Out("job", nil, OutOptions{TTL: -time.Second}); !errors.Is(err, ErrBadTuple) {
		t.Errorf("Out with negative TTL: %v, want ErrBadTuple", err)
	}
}

func TestTTL(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	sp := newSpace(t, SpaceOptions{Now: clock})

	short, err := sp.Out("lock", []docstore.Field{{Key: "who", Value: "a"}}, OutOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	long, err := sp.Out("lock", []docstore.Field{{Key: "who", Value: "b"}}, OutOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	forever := out(t, sp, "lock", "who", "c")
	if short.Expires.IsZero() || !short.Expires.Equal(clock().Add(time.Minute)) {
		t.Fatalf("expires = %v, want now+1m", short.Expires)
	}
	advance(2 * time.Minute)
	// Expired tuples are invisible to rd and in...
	if got, err := sp.Rdp("lock", pattern(t, "who=a")); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("rdp of expired tuple = %v, %v", got, err)
	}
	got, _ := sp.List("lock", nil)
	if len(got) != 2 || got[0].ID != long.ID || got[1].ID != forever.ID {
		t.Fatalf("ls after expiry = %v", got)
	}
	// ... gc archives them...
	st, err := sp.GC()
	if err != nil {
		t.Fatal(err)
	}
	if st.Expired != 1 {
		t.Fatalf("gc = %+v, want 1 expired", st)
	}
	if _, err := os.Stat(filepath.Join(sp.Store().Root(), short.Path)); !os.IsNotExist(err) {
		t.Fatalf("expired tuple still in place: %v", err)
	}
	if ev := tupleEvents(t, sp, "tuple.expired"); len(ev) != 1 || ev[0].Data["id"] != short.ID {
		t.Fatalf("journal tuple.expired = %v", ev)
	}
	advance(time.Hour)
	// ... and so does an in that finds nothing, on its way.
	if got, err := sp.Inp("lock", pattern(t, "who=b")); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("inp of expired tuple = %v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(sp.Store().Root(), long.Path)); !os.IsNotExist(err) {
		t.Fatalf("expired tuple met by inp still in place: %v", err)
	}
	advance(time.Hour)
	if st, _ := sp.GC("lock"); st.Expired != 0 {
		t.Fatalf("second gc = %+v, want nothing left", st)
	}
}

func TestReapDeadConsumer(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	a := out(t, sp, "job", "n", 1)
	// A consumer that died right after its claim rename: the tuple sits
	// in the staging directory and nobody holds its lock.
	if err := sp.Store().Rename(a.Path, takenPath("job", a.ID)); err != nil {
		t.Fatal(err)
	}
	got, err := sp.Inp("job", nil)
	if err != nil {
		t.Fatalf("inp after a dead consumer: %v", err)
	}
	if got.ID != a.ID {
		t.Fatalf("inp = %s, want %s back", got.ID, a.ID)
	}
	if ev := tupleEvents(t, sp, "tuple.returned"); len(ev) != 1 {
		t.Fatalf("journal tuple.returned = %v", ev)
	}
	// A live claimer (its lock held) is left alone.
	b := out(t, sp, "job", "n", 2)
	l, err := sp.Store().Claim(tupleLockKey("job", b.ID), b.Path, takenPath("job", b.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if st, err := sp.GC(); err != nil || st.Returned != 0 {
		t.Fatalf("gc with a live claimer = %+v, %v", st, err)
	}
	if _, err := sp.Inp("job", nil); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("inp while another holds the claim: %v", err)
	}
}

func TestGCSweepsLockFiles(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	a := out(t, sp, "job", "n", 1)
	// A lock file for a tuple that is gone, as a late loser leaves it.
	l, ok, err := sp.Store().TryLock(tupleLockKey("job", "0190aaaa-0000-7000-8000-000000000000"))
	if err != nil || !ok {
		t.Fatal(err)
	}
	l.Unlock()
	// A lock file of a live tuple stays.
	l, _, _ = sp.Store().TryLock(tupleLockKey("job", a.ID))
	l.Unlock()
	st, err := sp.GC()
	if err != nil {
		t.Fatal(err)
	}
	if st.Locks != 1 {
		t.Fatalf("gc removed %d lock files, want 1", st.Locks)
	}
	locks, _ := filepath.Glob(filepath.Join(sp.Store().Root(), ".locks", "tuples", "job", "*.lock"))
	if len(locks) != 1 || !strings.Contains(locks[0], a.ID) {
		t.Fatalf("locks left = %v, want only %s's", locks, a.ID)
	}
}

func TestHandEditedTuples(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	good := out(t, sp, "job", "n", 1)
	bad := filepath.Join(sp.Store().Root(), "tuples", "job", "0000broken.md")
	if err := os.WriteFile(bad, []byte("---\nn: [1\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, errs := sp.List("job", nil)
	if len(ts) != 1 || len(errs) != 1 || !errors.Is(errs[0], docstore.ErrParse) {
		t.Fatalf("ls = %d tuples, errors %v; want 1 and one parse error", len(ts), errs)
	}
	got, err := sp.Inp("job", nil)
	if err != nil || got.ID != good.ID {
		t.Fatalf("inp past a broken file = %v, %v", got, err)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Fatalf("broken tuple was moved or deleted: %v", err)
	}
}

// TestBlockingWokenByEvents: a blocked in/rd is woken by the write, not by
// the safety-net re-scan (set to an hour here).
func TestBlockingWokenByEvents(t *testing.T) {
	sp := newSpace(t, SpaceOptions{Recheck: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		t   *Tuple
		err error
	}
	rd := make(chan res, 1)
	in := make(chan res, 1)
	go func() { t, err := sp.Rd(ctx, "job", pattern(t, "n=2")); rd <- res{t, err} }()
	go func() { t, err := sp.In(ctx, "job", pattern(t, "n=3")); in <- res{t, err} }()
	out(t, sp, "job", "n", 1) // does not match: nobody returns
	want := map[string]*Tuple{"rd": out(t, sp, "job", "n", 2), "in": out(t, sp, "job", "n", 3)}
	for name, ch := range map[string]chan res{"rd": rd, "in": in} {
		select {
		case r := <-ch:
			if r.err != nil || r.t.ID != want[name].ID {
				t.Fatalf("%s = %v, %v; want %s", name, r.t, r.err, want[name].ID)
			}
		case <-ctx.Done():
			t.Fatalf("%s was not woken by the write", name)
		}
	}
}

func TestBlockingTimeout(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := sp.In(ctx, "job", pattern(t, "n=1"))
	var nt *NoTupleError
	if !errors.As(err, &nt) || nt.Waited <= 0 {
		t.Fatalf("In after its deadline: %v, want a *NoTupleError with the wait", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := sp.Rd(cctx, "job", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rd with a cancelled context: %v", err)
	}
}

// TestInRaceGoroutines: many goroutines of one process taking from one
// type get each tuple exactly once (each claim has its own lock file
// description, so they exclude each other like processes do).
func TestInRaceGoroutines(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	const n = 60
	for i := 0; i < n; i++ {
		out(t, sp, "job", "n", i)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := sp.Inp("job", nil)
				if errors.Is(err, ErrNoTuple) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[got.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("took %d distinct tuples, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("tuple %s taken %d times", id, c)
		}
	}
}

// TestBlockingWithProjection: with a watching projection, Rd and In are
// woken through its WaitFor, and a stale projection entry (a tuple taken
// by someone else) does not make In return or spin.
func TestBlockingWithProjection(t *testing.T) {
	sp0 := newSpace(t, SpaceOptions{})
	// The type's directory exists before the projection opens: see the
	// report on the watcher's new-directory race.
	out(t, sp0, "job", "other", 1)
	proj, err := watcher.Open(sp0.Store(), watcher.Options{Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	sp, err := NewSpace(sp0.Store(), SpaceOptions{Projection: proj, Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		t   *Tuple
		err error
	}
	in := make(chan res, 2)
	for i := 0; i < 2; i++ {
		go func() { t, err := sp.In(ctx, "job", pattern(t, "n=?")); in <- res{t, err} }()
	}
	a := out(t, sp, "job", "n", 1)
	first := <-in
	if first.err != nil || first.t.ID != a.ID {
		t.Fatalf("first In = %v, %v", first.t, first.err)
	}
	select {
	case r := <-in:
		t.Fatalf("second In returned %v, %v with nothing left", r.t, r.err)
	default:
	}
	b := out(t, sp, "job", "n", 2)
	if second := <-in; second.err != nil || second.t.ID != b.ID {
		t.Fatalf("second In = %v, %v", second.t, second.err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := sp.Rd(short, "job", pattern(t, "n=?")); !errors.Is(err, ErrNoTuple) {
		t.Fatalf("Rd on an empty type: %v", err)
	}
}
