package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tavernhq/tavern/schema"
)

// groupHarness holds a Journal's lead: an observer blocks while the leader
// publishes the "block" event, so appends made meanwhile queue up and are
// written as one group once released.
type groupHarness struct {
	t       *testing.T
	j       *Journal
	root    string
	release chan struct{}
	mu      sync.Mutex
	seen    []Event // what observers saw, in order
	wg      sync.WaitGroup
}

func newGroupHarness(t *testing.T) *groupHarness {
	t.Helper()
	root := t.TempDir()
	j, err := Open(root, Options{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	h := &groupHarness{t: t, j: j, root: root, release: make(chan struct{})}
	entered := make(chan struct{})
	j.Observe(func(e Event) {
		h.mu.Lock()
		h.seen = append(h.seen, e)
		h.mu.Unlock()
		if e.Type == "block" {
			close(entered)
			<-h.release
		}
	})
	h.wg.Go(func() {
		if _, err := j.Append(Event{Type: "block"}); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first append never reached its observer")
	}
	return h
}

// queue starts fn (an append) and returns once it is queued behind the
// blocked leader, so appends queue in the order of the calls.
func (h *groupHarness) queue(fn func()) {
	h.t.Helper()
	h.j.mu.Lock()
	n := len(h.j.queue)
	h.j.mu.Unlock()
	h.wg.Go(fn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.j.mu.Lock()
		m := len(h.j.queue)
		h.j.mu.Unlock()
		if m > n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("append not queued after 10s (queue %d)", m)
		}
		time.Sleep(time.Millisecond) // polling a condition, with a deadline
	}
}

// finish releases the leader and waits for every append.
func (h *groupHarness) finish() {
	close(h.release)
	h.wg.Wait()
}

func (h *groupHarness) lines(day string) []Event {
	h.t.Helper()
	var out []Event
	data, err := os.ReadFile(filepath.Join(h.root, Dir, day+".jsonl"))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		e, err := ParseEventLine([]byte(l))
		if err != nil {
			h.t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

func describeEvents(evs []Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, fmt.Sprintf("%s#%d", e.Type, e.Seq))
	}
	return strings.Join(s, " ")
}

// TestJournalGroupCommit: appends queued behind a busy leader are written
// with one write(2), in queue order, with consecutive Seq, and every
// caller gets its own stamped event back.
func TestJournalGroupCommit(t *testing.T) {
	h := newGroupHarness(t)
	const n = 7
	got := make([]Event, n)
	for i := range n {
		h.queue(func() {
			e, err := h.j.Append(Event{Type: fmt.Sprintf("e%d", i)})
			if err != nil {
				t.Error(err)
			}
			got[i] = e
		})
	}
	h.finish()
	if h.j.writes != 2 {
		t.Errorf("writes: got %d, want 2 (the first event, then one group of %d)", h.j.writes, n)
	}
	want := "block#1 e0#2 e1#3 e2#4 e3#5 e4#6 e5#7 e6#8"
	file := h.lines(time.Now().UTC().Format(time.DateOnly))
	if s := describeEvents(file); s != want {
		t.Errorf("file: got %s, want %s", s, want)
	}
	if s := describeEvents(h.seen); s != want {
		t.Errorf("observed: got %s, want %s", s, want)
	}
	for i, e := range got {
		if f := file[i+1]; e.ID != f.ID || e.Seq != f.Seq || e.Writer != "w" {
			t.Errorf("append %d returned id %s seq %d writer %q; its line has id %s seq %d", i, e.ID, e.Seq, e.Writer, f.ID, f.Seq)
		}
	}
}

// TestJournalGroupAppendIfAndDays: within one group an AppendIf decides
// from heads that saw the lines queued before it and the events kept
// before it (the duplicates are skipped and spend no Seq), and events of
// different days go to their own day files.
func TestJournalGroupAppendIfAndDays(t *testing.T) {
	h := newGroupHarness(t)
	heads, err := LoadHeads(h.root)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	other := today.AddDate(0, 0, 1)
	var mu sync.Mutex
	appended := map[string]int{}
	appendIf := func(name string, e Event) func() {
		return func() {
			got, err := h.j.AppendIf(heads, []Event{e}, func(e *Event) bool {
				return !heads.Explained(e.Path, e.Rev, true, time.Time{})
			})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			appended[name] += len(got)
			mu.Unlock()
		}
	}
	add := func(e Event) func() {
		return func() {
			if _, err := h.j.Append(e); err != nil {
				t.Error(err)
			}
		}
	}
	h.queue(add(Event{Type: TypeCreated, Path: "notes/a.md", Rev: "r1", Time: schema.TimeOf(today)}))
	h.queue(appendIf("x", Event{Type: TypeExternal, Path: "notes/a.md", Rev: "r1"}))
	h.queue(add(Event{Type: "b", Time: schema.TimeOf(other)}))
	h.queue(appendIf("y1", Event{Type: TypeExternal, Path: "notes/a.md", Rev: "r2"}))
	h.queue(appendIf("y2", Event{Type: TypeExternal, Path: "notes/a.md", Rev: "r2"}))
	h.queue(add(Event{Type: "c", Time: schema.TimeOf(today)}))
	h.finish()
	if appended["x"] != 0 || appended["y1"] != 1 || appended["y2"] != 0 {
		t.Errorf("AppendIf appended: got %v, want y1:1", appended)
	}
	if s, want := describeEvents(h.lines(today.Format(time.DateOnly))), "block#1 doc.created#2 external#4 c#5"; s != want {
		t.Errorf("today: got %s, want %s", s, want)
	}
	if s, want := describeEvents(h.lines(other.Format(time.DateOnly))), "b#3"; s != want {
		t.Errorf("tomorrow: got %s, want %s", s, want)
	}
	if s, want := describeEvents(h.seen), "block#1 doc.created#2 b#3 external#4 c#5"; s != want {
		t.Errorf("observed: got %s, want %s", s, want)
	}
	if hd, _ := heads.Get("notes/a.md"); hd.Rev != "r2" {
		t.Errorf("head: got %+v, want rev r2", hd)
	}
}

func TestJournalConcurrentAppends(t *testing.T) {
	const goroutines, each = 8, 500
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var seen []uint64 // observers run one at a time: no lock needed, -race checks
	j.Observe(func(e Event) { seen = append(seen, e.Seq) })
	returned := make([][]Event, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e, err := j.Append(Event{Type: "t", Agent: fmt.Sprint(g), Data: map[string]any{"i": i}})
				if err != nil {
					t.Error(err)
					return
				}
				returned[g] = append(returned[g], e)
			}
		})
	}
	wg.Wait()
	byID := map[string]Event{}
	var seqs []uint64
	Read(root, Filter{}, func(e Event, err error) bool {
		if err != nil {
			t.Error(err)
		}
		byID[e.ID] = e
		seqs = append(seqs, e.Seq)
		return true
	})
	if len(seqs) != goroutines*each {
		t.Fatalf("lines: got %d, want %d", len(seqs), goroutines*each)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("line %d: seq %d, want %d", i+1, s, i+1)
		}
	}
	if !slices.Equal(seen, seqs) {
		t.Errorf("observers saw %d events not in file order", len(seen))
	}
	for g, evs := range returned {
		for i, e := range evs {
			f, ok := byID[e.ID]
			if !ok || f.Seq != e.Seq || f.Agent != fmt.Sprint(g) || f.Data["i"] != float64(i) {
				t.Fatalf("goroutine %d append %d returned id %s seq %d; file has %+v", g, i, e.ID, e.Seq, f)
			}
			if i > 0 && e.Seq <= evs[i-1].Seq {
				t.Fatalf("goroutine %d: seq %d after %d", g, e.Seq, evs[i-1].Seq)
			}
		}
	}
	if j.writes >= goroutines*each {
		t.Logf("no append was grouped (%d writes): possible on an idle machine, not a failure", j.writes)
	}
}

// TestEventIDs: event ids are RFC 9562 version 7 UUIDs in the canonical
// form (docstore.NewID, the one id source) and strictly increase in the
// file order of one Journal, even when appends come faster than the clock
// moves.
func TestEventIDs(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range 2000 {
		if _, err := j.Append(Event{Type: "test.id", Data: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	var last string
	n := 0
	_, err = Read(root, Filter{}, func(e Event, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		p, perr := uuid.Parse(e.ID)
		if perr != nil {
			t.Fatal(perr)
		}
		if p.Version() != 7 || p.Variant() != uuid.RFC4122 || p.String() != e.ID {
			t.Fatalf("%s: version %d variant %v, canonical %s", e.ID, p.Version(), p.Variant(), p.String())
		}
		if e.ID <= last {
			t.Fatalf("id %d: %s after %s", n, e.ID, last)
		}
		last = e.ID
		n++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, 2000; got != want {
		t.Errorf("events: got %d, want %d", got, want)
	}
}

// TestJournalLeadRounds: a leader writes at most maxLeadRounds groups;
// what queued during its last one is written by a waiting caller it
// wakes (without that, the last append would wait forever).
func TestJournalLeadRounds(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	gates := map[string]chan struct{}{}
	for i := 1; i <= maxLeadRounds; i++ {
		gates[fmt.Sprintf("g%d", i)] = make(chan struct{})
	}
	entered := make(chan string, 1)
	j.Observe(func(e Event) {
		if g, ok := gates[e.Type]; ok {
			entered <- e.Type
			<-g
		}
	})
	h := &groupHarness{t: t, j: j, root: root}
	appendType := func(typ string) func() {
		return func() {
			if _, err := j.Append(Event{Type: typ}); err != nil {
				t.Error(err)
			}
		}
	}
	h.wg.Go(appendType("g1"))
	for i := 1; i <= maxLeadRounds; i++ {
		select {
		case got := <-entered:
			if want := fmt.Sprintf("g%d", i); got != want {
				t.Fatalf("round %d observed %s, want %s", i, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d never reached its observer", i)
		}
		h.queue(appendType(fmt.Sprintf("g%d", i+1)))
		close(gates[fmt.Sprintf("g%d", i)])
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the append queued during the last round was never written")
	}
	var want []string
	for i := 1; i <= maxLeadRounds+1; i++ {
		want = append(want, fmt.Sprintf("g%d#%d", i, i))
	}
	if got := describeEvents(h.lines(time.Now().UTC().Format(time.DateOnly))); got != strings.Join(want, " ") {
		t.Errorf("file: got %s, want %s", got, strings.Join(want, " "))
	}
	if j.writes != maxLeadRounds+1 {
		t.Errorf("writes: got %d, want %d", j.writes, maxLeadRounds+1)
	}
}
