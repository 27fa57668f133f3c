package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/schema"
)

// journalWorker appends args[1] events from each of args[3] goroutines
// sharing one Journal (writer "w"+args[2]), so the appends of a process
// are written in groups while other processes append to the same file.
func journalWorker(args []string) error {
	root := args[0]
	n, _ := strconv.Atoi(args[1])
	id := args[2]
	g, _ := strconv.Atoi(args[3])
	j, err := Open(root, Options{Writer: "w" + id})
	if err != nil {
		return err
	}
	defer j.Close()
	big := strings.Repeat("y", 9000) // beyond PIPE_BUF: only the lock keeps it whole
	errs := make(chan error, g)
	for k := range g {
		go func() {
			for i := range n {
				e := Event{Type: "test.append", Agent: fmt.Sprintf("w%s/g%d", id, k), Data: map[string]any{"i": i}}
				if i%10 == 0 {
					e.Data["pad"] = big
				}
				if _, err := j.Append(e); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range g {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

func TestMain(m *testing.M) {
	if storetest.HelperRole() == "journal" {
		if err := journalWorker(strings.Split(os.Getenv("TAVERN_WATCHER_ARGS"), ",")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestJournalConcurrentProcesses: procs processes × goroutines goroutines
// × each appends to one journal. Every line parses (none torn or
// interleaved), none is lost or duplicated, each writer's Seq runs 1, 2,
// 3... in file order, and each goroutine's events are in its append order.
func TestJournalConcurrentProcesses(t *testing.T) {
	const procs, goroutines, each = 4, 4, 2500
	root := t.TempDir()
	var cmds []*exec.Cmd
	for p := range procs {
		c := helper(t, "journal", root, strconv.Itoa(each), strconv.Itoa(p), strconv.Itoa(goroutines))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	lastSeq := map[string]uint64{}
	lastID := map[string]string{}
	next := map[string]int{} // per goroutine (Agent): the i expected next
	ids := map[string]bool{}
	total := 0
	_, err := Read(root, Filter{}, func(e Event, err error) bool {
		if err != nil {
			t.Errorf("malformed line: %v", err)
			return true
		}
		total++
		if ids[e.ID] {
			t.Errorf("duplicate id %s", e.ID)
		}
		ids[e.ID] = true
		if e.Seq != lastSeq[e.Writer]+1 {
			t.Errorf("writer %s: seq %d after %d (lost or reordered)", e.Writer, e.Seq, lastSeq[e.Writer])
		}
		lastSeq[e.Writer] = e.Seq
		if e.ID <= lastID[e.Writer] {
			t.Errorf("writer %s: id %s after %s (ids must increase in file order)", e.Writer, e.ID, lastID[e.Writer])
		}
		lastID[e.Writer] = e.ID
		if i, _ := e.Data["i"].(float64); int(i) != next[e.Agent] {
			t.Errorf("goroutine %s: data i=%v, want %d", e.Agent, e.Data["i"], next[e.Agent])
		}
		next[e.Agent]++
		if pad, ok := e.Data["pad"].(string); next[e.Agent]%10 == 1 && len(pad) != 9000 {
			t.Errorf("goroutine %s: pad of %d bytes, want 9000 (ok %v)", e.Agent, len(pad), ok)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != procs*goroutines*each {
		t.Errorf("events: got %d, want %d", total, procs*goroutines*each)
	}
	if len(lastSeq) != procs {
		t.Errorf("writers: got %d, want %d", len(lastSeq), procs)
	}
	if len(next) != procs*goroutines {
		t.Errorf("goroutines: got %d, want %d", len(next), procs*goroutines)
	}
	for a, n := range next {
		if n != each {
			t.Errorf("goroutine %s: %d events, want %d", a, n, each)
		}
	}
}

func TestJournalFilterAndMalformed(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	evs := []Event{
		{Type: "item.claimed", Kind: "item", Agent: "a1", Time: schema.TimeOf(day)},
		{Type: "item.completed", Kind: "item", Agent: "a2", Time: schema.TimeOf(day.Add(time.Hour))},
		{Type: "agent.spawned", Kind: "agent", Agent: "a1", Parent: "boss", Time: schema.TimeOf(day.Add(24 * time.Hour))},
	}
	for _, e := range evs {
		if _, err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Append(Event{}); !errors.Is(err, ErrNoType) {
		t.Errorf("Append without type: got %v, want ErrNoType", err)
	}
	// A torn fragment and a hand-written junk line in the middle.
	f, _ := os.OpenFile(filepath.Join(root, Dir, "2026-11-20.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"id\":\"x\",\"type\":\"t\"}{\"id\":\n")
	f.WriteString("not json\n")
	f.Close()
	for _, tc := range []struct {
		name string
		f    Filter
		want string
	}{
		{"all", Filter{}, "item.claimed,item.completed,agent.spawned"},
		{"type prefix", Filter{Types: []string{"item."}}, "item.claimed,item.completed"},
		{"type glob", Filter{Types: []string{"agent*"}}, "agent.spawned"},
		{"type glob inside", Filter{Types: []string{"*.claimed"}}, "item.claimed"},
		{"type glob class", Filter{Types: []string{"item.c[a-n]*"}}, "item.claimed"},
		{"agent", Filter{Agent: "a1"}, "item.claimed,agent.spawned"},
		{"parent", Filter{Parent: "boss"}, "agent.spawned"},
		{"since", Filter{Since: day.Add(30 * time.Minute)}, "item.completed,agent.spawned"},
		{"until", Filter{Until: day.Add(30 * time.Minute)}, "item.claimed"},
		{"kind", Filter{Kinds: []string{"agent"}}, "agent.spawned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			bad := 0
			_, err := Read(root, tc.f, func(e Event, err error) bool {
				var le *LineError
				if errors.As(err, &le) {
					bad++
					return true
				}
				got = append(got, e.Type)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, ","); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
			if tc.name == "all" && bad != 2 {
				t.Errorf("malformed lines reported: got %d, want 2", bad)
			}
		})
	}
}

func TestFollowJournal(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(Event{Type: "before"}); err != nil {
		t.Fatal(err)
	}
	cur, err := Read(root, Filter{}, func(Event, error) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if end, err := End(root); err != nil || end != cur {
		t.Errorf("JournalEnd = %+v, %v; ReadJournal ended at %+v", end, err, cur)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan string, 10)
	var wg sync.WaitGroup
	wg.Add(1)
	ready := make(chan struct{})
	go func() {
		defer wg.Done()
		close(ready)
		// No poll: only fsnotify can wake it.
		Follow(ctx, root, cur, Filter{Types: []string{"x."}}, 0, func(e Event, err error) bool {
			got <- e.Type
			return e.Type != "x.stop"
		})
	}()
	<-ready
	for _, typ := range []string{"y.skip", "x.one", "x.stop"} {
		if _, err := j.Append(Event{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	var seq []string
	for len(seq) < 2 {
		select {
		case s := <-got:
			seq = append(seq, s)
		case <-ctx.Done():
			t.Fatalf("follow saw %v before deadline", seq)
		}
	}
	wg.Wait()
	if s := strings.Join(seq, ","); s != "x.one,x.stop" {
		t.Errorf("followed: got %s, want x.one,x.stop", s)
	}
}

func FuzzParseEventLine(f *testing.F) {
	f.Add([]byte(`{"id":"0190a1b2-0000-7000-8000-000000000000","time":"2026-11-22T00:00:00Z","type":"item.claimed","path":"queues/q/claimed/a.md","data":{"attempt":2}}`))
	f.Add([]byte(`{"id":"x","type":"t"}{"id":`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"id":"x","type":"t","time":"bad"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEventLine(line)
		if err != nil {
			return
		}
		if e.ID == "" || e.Type == "" {
			t.Fatalf("accepted event without id/type: %+v", e)
		}
	})
}

func TestJournalCreatesDirOnFirstAppend(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := os.Stat(filepath.Join(root, Dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenJournal created the directory (stat: %v)", err)
	}
	if _, err := j.Append(Event{Type: "x"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	Read(root, Filter{}, func(Event, error) bool { n++; return true })
	if n != 1 {
		t.Errorf("events: got %d, want 1", n)
	}
}

// helper starts this test binary as another process in role (see TestMain).
func helper(tb testing.TB, role string, args ...string) *exec.Cmd {
	tb.Helper()
	return storetest.HelperCommand(tb, "^$", role, "TAVERN_WATCHER_ARGS="+strings.Join(args, ","))
}

// TestAppendAfterDayFileReplaced: a Journal keeps its day file open
// between appends. When that file is replaced (git checkout or stash of a
// committed journal, an rsync: a copy renamed over the name) or removed,
// the next append goes to the file now at the name, not to the one gone.
func TestAppendAfterDayFileReplaced(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	appendType := func(typ string) {
		t.Helper()
		if _, err := j.Append(Event{Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	types := func() []string {
		t.Helper()
		var got []string
		if _, err := Read(root, Filter{}, func(e Event, err error) bool {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.Type)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	appendType("test.first")
	days, err := filepath.Glob(filepath.Join(j.Dir(), "*.jsonl"))
	if err != nil || len(days) != 1 {
		t.Fatalf("day files: %v %v", days, err)
	}
	day := days[0]

	// Replaced: a copy renamed over it, as git and rsync write files.
	data, err := os.ReadFile(day)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(day+".new", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(day+".new", day); err != nil {
		t.Fatal(err)
	}
	appendType("test.after-replace")
	if got, want := strings.Join(types(), ","), "test.first,test.after-replace"; got != want {
		t.Errorf("after the day file was replaced: %s, want %s", got, want)
	}

	// Removed (git stash of a journal committed before today's).
	if err := os.Remove(day); err != nil {
		t.Fatal(err)
	}
	appendType("test.after-remove")
	if got, want := strings.Join(types(), ","), "test.after-remove"; got != want {
		t.Errorf("after the day file was removed: %s, want %s", got, want)
	}
}

func TestTypeHint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"item.claimed", ""},
		{"item.", ""},
		{"item*", ""},
		{"*.claimd", ""},
		{"frobnicate", ""},
		{"doc.update", `doc.update: no such event type (did you mean "doc.updated"?)`},
		{"doc", `doc: no such event type (did you mean "doc."?)`},
		{"updated", `updated: no such event type (did you mean "*.updated" or "doc.updated"?)`},
		{"watch.nope", "watch.nope: no such event type (the watch. types: watch.degraded, watch.error, watch.missed)"},
	} {
		got := ""
		if h := TypeHint(tc.in); h != nil {
			got = h.Error()
		}
		if got != tc.want {
			t.Errorf("TypeHint(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
	if err := (Filter{Types: []string{"item.[a"}}).Check(); !errors.Is(err, ErrBadTypePattern) {
		t.Errorf("Check of item.[a: got %v, want ErrBadTypePattern", err)
	}
}

// A writer killed inside write(2) leaves a line without its newline
// (Linux stops a write at a page boundary on SIGKILL). The next append,
// from this process or another, must start a line of its own: before, it
// was glued to the fragment and lost with it.
func TestAppendAfterTornLine(t *testing.T) {
	root := t.TempDir()
	day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	open := func() *Journal {
		t.Helper()
		j, err := Open(root, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		return j
	}
	a, b := open(), open()
	tear := func() {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(root, Dir, "2026-11-20.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(`{"id":"01a00000-0000-7000-8000-000000000000","time":"2026-11-20T12:00:00.000Z","type":"item.comp`); err != nil {
			t.Fatal(err)
		}
	}
	appendAs := func(j *Journal, typ string) {
		t.Helper()
		if _, err := j.Append(Event{Type: typ, Kind: "item", Time: schema.TimeOf(day)}); err != nil {
			t.Fatal(err)
		}
	}
	appendAs(a, "e1")
	tear()
	appendAs(a, "e2") // the writer whose own last line was clean
	tear()
	appendAs(b, "e3") // another writer
	appendAs(b, "e4")
	var got []string
	bad := 0
	if _, err := Read(root, Filter{}, func(e Event, err error) bool {
		if err != nil {
			bad++
			return true
		}
		got = append(got, e.Type)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if s, want := strings.Join(got, ","), "e1,e2,e3,e4"; s != want {
		t.Errorf("events: got %s, want %s", s, want)
	}
	if bad != 2 {
		t.Errorf("torn lines reported: got %d, want 2 (the fragments)", bad)
	}
}
