package queues_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

func TestCreateQueueAndUnknown(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "build", queues.QueueOptions{Priority: 3, MaxAttempts: 5, Lease: time.Minute, NoSteal: true})
	q, err := b.Queue("build")
	if err != nil {
		t.Fatal(err)
	}
	if q.Priority != 3 || q.MaxAttempts != 5 || q.Lease != time.Minute || q.Steal {
		t.Errorf("queue = %+v, want priority 3, max 5, lease 1m, no steal", q)
	}
	for _, st := range []string{"pending", "claimed", "done", "dead"} {
		if fi, err := os.Stat(filepath.Join(s.Root(), "queues/build", st)); err != nil || !fi.IsDir() {
			t.Errorf("state dir %s: %v", st, err)
		}
	}
	if _, err := b.CreateQueue("build", queues.QueueOptions{}); !errors.Is(err, queues.ErrQueueExists) {
		t.Errorf("second create: got %v, want ErrQueueExists", err)
	}
	for _, bad := range []queues.QueueOptions{{Priority: -1}, {Priority: 100}, {OnEmpty: "explode"}, {Lease: -time.Second}} {
		if _, err := b.CreateQueue("x", bad); err == nil {
			t.Errorf("create with %+v: got nil error", bad)
		}
	}
	if _, err := b.Add("nope", queues.AddOptions{}); !errors.Is(err, queues.ErrUnknownQueue) {
		t.Errorf("add to unknown queue: got %v, want ErrUnknownQueue", err)
	}
	if _, err := b.Take(context.Background(), take1("nope")); !errors.Is(err, queues.ErrUnknownQueue) {
		t.Errorf("take from unknown queue: got %v, want ErrUnknownQueue", err)
	}
}

func TestPriorityOrder(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	var want []string
	low1 := mustAdd(t, b, "q", queues.AddOptions{Priority: 50, Title: "low1"})
	high := mustAdd(t, b, "q", queues.AddOptions{Priority: 0, Title: "high"})
	mid := mustAdd(t, b, "q", queues.AddOptions{Priority: 7, Title: "mid"})
	low2 := mustAdd(t, b, "q", queues.AddOptions{Priority: 50, Title: "low2"})
	want = []string{high.ID, mid.ID, low1.ID, low2.ID}
	if got := ls(t, s, "q", "pending"); !slices.Equal(got, want) {
		t.Errorf("ls pending = %v, want %v (priority, then age)", got, want)
	}
	var got []string
	for range want {
		c := mustTake(t, b, take1("q"))
		got = append(got, c.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("take order = %v, want %v", got, want)
	}
	for _, p := range []int{-1, 100, 1 << 20} {
		if _, err := b.Add("q", queues.AddOptions{Priority: p}); !errors.Is(err, queues.ErrPriority) {
			t.Errorf("add priority %d: got %v, want ErrPriority", p, err)
		}
	}
}

func TestClaimCompleteAndFencing(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Minute})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "t", Body: []byte("do the thing\n")})
	c := mustTake(t, b, queues.TakeOptions{Queues: []string{"q"}, As: "alice"})
	if c.ID != it.ID || c.Attempt != 1 || c.ClaimedBy != "alice" || c.ClaimKind != "lease" || c.State != "claimed" {
		t.Fatalf("claim = %+v", c.Item)
	}
	if c.LeaseUntil.Sub(clk.Now()) < 59*time.Second {
		t.Errorf("lease_until = %v, want about a minute from now", c.LeaseUntil)
	}
	if _, err := b.Take(context.Background(), take1("q")); !isEmpty(err) {
		t.Fatalf("second take: got %v, want ErrEmpty", err)
	}
	// Lease expires: reaped back to pending, then claimed as attempt 2.
	clk.Advance(2 * time.Minute)
	rep, err := b.Reap("q")
	if err != nil || len(rep.Returned) != 1 {
		t.Fatalf("reap: %v, %+v", err, rep)
	}
	c2 := mustTake(t, b, take1("q"))
	if c2.Attempt != 2 || c2.Attempts != 2 {
		t.Errorf("second claim attempt %d attempts %d, want 2, 2", c2.Attempt, c2.Attempts)
	}
	// The first claimer's done is stale: refused, nothing changes.
	before, _ := os.ReadFile(filepath.Join(s.Root(), c2.Path))
	for name, f := range map[string]func() error{
		"complete": func() error { _, err := b.Complete(c.ID, 1, "late"); return err },
		"fail":     func() error { _, err := b.Fail(c.ID, 1, "late"); return err },
		"renew":    func() error { _, err := b.Renew(c.ID, 1); return err },
		"release":  func() error { _, err := b.Release(c.ID, 1); return err },
	} {
		if err := f(); !errors.Is(err, queues.ErrStale) {
			t.Errorf("%s with stale attempt: got %v, want ErrStale", name, err)
		}
	}
	after, _ := os.ReadFile(filepath.Join(s.Root(), c2.Path))
	if string(before) != string(after) {
		t.Errorf("stale calls changed the item:\n%s\n---\n%s", before, after)
	}
	done, err := c2.Complete("all good")
	if err != nil {
		t.Fatal(err)
	}
	if done.State != "done" || done.Result != "all good" || done.Completed.IsZero() {
		t.Errorf("done item = %+v", done)
	}
	if got := ls(t, s, "q", "done"); !slices.Equal(got, []string{it.ID}) {
		t.Errorf("done/ = %v", got)
	}
	if _, err := b.Complete(it.ID, 2, "again"); !errors.Is(err, queues.ErrStale) {
		t.Errorf("second complete: got %v, want ErrStale", err)
	}
	d, _ := s.Get(done.Path)
	if !strings.Contains(string(d.Body()), "do the thing") {
		t.Errorf("body lost: %q", d.Body())
	}
	if got := len(events(t, s, queues.EventCompleted)); got != 1 {
		t.Errorf("%d item.completed events, want 1", got)
	}
	if _, err := b.Complete("p00-nope", 1, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("complete of unknown item: got %v, want ErrNotExist", err)
	}
}

func TestLongResultGoesToBody(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustAdd(t, b, "q", queues.AddOptions{})
	c := mustTake(t, b, take1("q"))
	it, err := c.Complete("first line\nsecond line\n")
	if err != nil {
		t.Fatal(err)
	}
	if it.Result != "first line …" || !strings.Contains(string(it.Doc.Body()), "## Result\n\nfirst line\nsecond line") {
		t.Errorf("result %q body %q", it.Result, it.Doc.Body())
	}
}

func TestFailBackoffDeadRetry(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 3, Backoff: 10 * time.Second, BackoffMax: 15 * time.Second})
	it := mustAdd(t, b, "q", queues.AddOptions{})
	wantDelay := []time.Duration{10 * time.Second, 15 * time.Second} // 10s, then 20s capped at 15s
	for attempt := 1; attempt <= 3; attempt++ {
		c := mustTake(t, b, take1("q"))
		if c.Attempt != attempt {
			t.Fatalf("attempt %d, want %d", c.Attempt, attempt)
		}
		f, err := c.Fail(fmt.Sprintf("boom %d", attempt))
		if err != nil {
			t.Fatal(err)
		}
		if attempt == 3 {
			if f.State != "dead" || !strings.Contains(f.DeadReason, "3 of 3") || f.LastError != "boom 3" {
				t.Fatalf("after last attempt: %+v", f)
			}
			break
		}
		if f.State != "pending" || f.LastError != fmt.Sprintf("boom %d", attempt) {
			t.Fatalf("after fail: %+v", f)
		}
		if got := f.NotBefore.Sub(clk.Now()).Round(time.Second); got != wantDelay[attempt-1] {
			t.Errorf("backoff after attempt %d = %v, want %v", attempt, got, wantDelay[attempt-1])
		}
		_, err = b.Take(context.Background(), take1("q"))
		var ee *queues.EmptyError
		if !errors.As(err, &ee) || ee.Diag.Backoff != 1 {
			t.Fatalf("take during backoff: got %v, want EmptyError with 1 in backoff", err)
		}
		clk.Advance(wantDelay[attempt-1] + time.Second)
	}
	if got := ls(t, s, "q", "dead"); !slices.Equal(got, []string{it.ID}) {
		t.Fatalf("dead/ = %v", got)
	}
	if n := len(events(t, s, queues.EventDead)); n != 1 {
		t.Errorf("%d item.dead events, want 1", n)
	}
	if _, err := b.Retry("q", "p00-none"); err == nil {
		t.Error("retry of a missing item: no error")
	}
	moved, err := b.Retry("q")
	if err != nil || len(moved) != 1 || moved[0].State != "pending" || moved[0].Attempts != 0 {
		t.Fatalf("retry: %v %+v", err, moved)
	}
	c := mustTake(t, b, take1("q"))
	if c.Attempt != 4 || c.Attempts != 1 {
		t.Errorf("after retry: claim attempt %d (fencing, keeps growing), attempts %d (reset); want 4, 1", c.Attempt, c.Attempts)
	}
	if _, err := b.Retry("q", c.ID); !errors.Is(err, queues.ErrState) {
		t.Errorf("retry of a claimed item: got %v, want ErrState", err)
	}
}

func TestReleaseDoesNotCountAttempt(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustAdd(t, b, "q", queues.AddOptions{})
	c := mustTake(t, b, take1("q"))
	r, err := c.Release()
	if err != nil || r.State != "pending" || r.Attempts != 0 {
		t.Fatalf("release: %v %+v", err, r)
	}
	c2 := mustTake(t, b, take1("q"))
	if c2.Attempt != 2 || c2.Attempts != 1 {
		t.Errorf("after release: attempt %d attempts %d, want 2, 1", c2.Attempt, c2.Attempts)
	}
}

func TestDependencies(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 1})
	a := mustAdd(t, b, "q", queues.AddOptions{Priority: 5, Title: "a"})
	dep := mustAdd(t, b, "q", queues.AddOptions{Priority: 0, Title: "needs a", DependsOn: []string{a.ID}})
	// dep has the higher priority but is not claimable until a is done.
	c := mustTake(t, b, take1("q"))
	if c.ID != a.ID {
		t.Fatalf("took %s, want %s (its dependent is blocked)", c.Title, a.Title)
	}
	_, err := b.Take(context.Background(), take1("q"))
	var ee *queues.EmptyError
	if !errors.As(err, &ee) || ee.Diag.Waiting != 1 {
		t.Fatalf("take while dependency claimed: %v", err)
	}
	if _, err := c.Complete(""); err != nil {
		t.Fatal(err)
	}
	if c := mustTake(t, b, take1("q")); c.ID != dep.ID {
		t.Fatalf("took %s, want the dependent", c.ID)
	}

	// A dead dependency blocks, and is reported.
	x := mustAdd(t, b, "q", queues.AddOptions{Title: "x"})
	y := mustAdd(t, b, "q", queues.AddOptions{Title: "y", DependsOn: []string{x.ID}})
	cx := mustTake(t, b, take1("q"))
	if cx.ID != x.ID {
		t.Fatalf("took %s, want x", cx.ID)
	}
	if f, err := cx.Fail("no"); err != nil || f.State != "dead" {
		t.Fatalf("fail: %v %+v", err, f)
	}
	_, err = b.Take(context.Background(), take1("q"))
	if !errors.As(err, &ee) || len(ee.Diag.Blocked) != 1 || ee.Diag.Blocked[0].ID != y.ID || ee.Diag.Blocked[0].DepState != "dead" {
		t.Fatalf("take with dead dependency: %v", err)
	}
	st, err := b.Stats("q")
	if err != nil || len(st.Blocked) != 1 || st.Blocked[0].Dep != x.ID {
		t.Fatalf("stats: %v %+v", err, st)
	}

	// Unknown dependency and cycles are rejected at add.
	if _, err := b.Add("q", queues.AddOptions{DependsOn: []string{"p00-missing"}}); !errors.Is(err, queues.ErrBadDependency) {
		t.Errorf("unknown dependency: got %v, want ErrBadDependency", err)
	}
	// A cycle can only come from hand edits (ids are fresh): make one.
	m := mustAdd(t, b, "q", queues.AddOptions{Title: "m"})
	n := mustAdd(t, b, "q", queues.AddOptions{Title: "n", DependsOn: []string{m.ID}})
	handEdit(t, s, m.Path, func(d *docstore.Doc) error { return d.Set("depends_on", []string{n.ID}) })
	if _, err := b.Add("q", queues.AddOptions{DependsOn: []string{n.ID}}); !errors.Is(err, queues.ErrCycle) {
		t.Errorf("dependency on a cycle: got %v, want ErrCycle", err)
	}
}

func TestBadItemDoesNotBlockQueue(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	good := mustAdd(t, b, "q", queues.AddOptions{Priority: 5})
	// Hand-edited items at the head of the queue: broken YAML, and a
	// field of the wrong type.
	broken := filepath.Join(s.Root(), "queues/q/pending/p00-broken.md")
	if err := os.WriteFile(broken, []byte("---\ntitle: [unclosed\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(s.Root(), "queues/q/pending/p01-wrong.md")
	if err := os.WriteFile(wrong, []byte("---\nqueue: q\nattempts: lots\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustTake(t, b, take1("q"))
	if c.ID != good.ID {
		t.Fatalf("took %s, want %s", c.ID, good.ID)
	}
	if len(c.Notes.Invalid) != 2 {
		t.Fatalf("notes: %v, want the 2 bad files", c.Notes.Invalid)
	}
	for _, e := range c.Notes.Invalid {
		path, line, _ := docstore.Position(e)
		if !strings.HasPrefix(path, "queues/q/pending/p0") || line < 2 {
			t.Errorf("error %q: position %s:%d, want the bad file and its line", e, path, line)
		}
	}
	for _, f := range []string{broken, wrong} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("bad file moved or removed: %v", err)
		}
	}
	st, err := b.Stats("q")
	if err != nil || len(st.Invalid) != 2 || st.Claimed != 1 {
		t.Errorf("stats: %v %+v", err, st)
	}
}

func TestMultiQueueTakeAndStealFairness(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "own", queues.QueueOptions{Priority: 5})
	mustQueue(t, b, "urgent", queues.QueueOptions{Priority: 0})
	mustQueue(t, b, "private", queues.QueueOptions{Priority: 0, NoSteal: true})
	mustQueue(t, b, "hi", queues.QueueOptions{Priority: 0})
	mustQueue(t, b, "lo", queues.QueueOptions{Priority: 3})
	// Own queues in queue priority order, whatever order they are named in.
	o := mustAdd(t, b, "own", queues.AddOptions{})
	u := mustAdd(t, b, "urgent", queues.AddOptions{})
	if c := mustTake(t, b, take1("own", "urgent")); c.ID != u.ID {
		t.Errorf("took from %s, want urgent (priority 0) first", c.Queue)
	}
	if c := mustTake(t, b, take1("own", "urgent")); c.ID != o.ID {
		t.Errorf("took from %s, want own", c.Queue)
	}
	// Without --steal nothing else is taken.
	for i := 0; i < 200; i++ {
		mustAdd(t, b, "hi", queues.AddOptions{})
		mustAdd(t, b, "lo", queues.AddOptions{})
		mustAdd(t, b, "private", queues.AddOptions{})
	}
	if _, err := b.Take(context.Background(), take1("own")); !isEmpty(err) {
		t.Fatalf("take without steal: %v", err)
	}
	// Stealing: hi (priority 0, weight 1) and lo (priority 3, weight
	// 1/4) share the steals 4:1; private is never stolen from.
	got := map[string]int{}
	for i := 0; i < 100; i++ {
		c := mustTake(t, b, queues.TakeOptions{Queues: []string{"own"}, Steal: true})
		got[c.Queue]++
	}
	if got["private"] != 0 {
		t.Errorf("stole %d items from a no-steal queue", got["private"])
	}
	if got["hi"] < 78 || got["hi"] > 82 || got["lo"] < 18 || got["lo"] > 22 {
		t.Errorf("steals = %v, want hi:lo = 80:20 (stride scheduling, weight 1/(1+priority))", got)
	}
	// When hi runs dry, lo gets everything; it never starves.
	for {
		c, err := b.Take(context.Background(), take1("hi"))
		if err != nil {
			break
		}
		c.Complete("")
	}
	for i := 0; i < 10; i++ {
		if c := mustTake(t, b, queues.TakeOptions{Queues: []string{"own"}, Steal: true}); c.Queue != "lo" {
			t.Fatalf("stole from %s, want lo", c.Queue)
		}
	}
}

func TestTakeWaitWakesOnAdd(t *testing.T) {
	s := newStore(t, true)
	// No periodic recheck within the test's deadline: only the file
	// event can wake the waiter.
	b, err := queues.Open(s, queues.Options{Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustQueue(t, b, "q", queues.QueueOptions{})
	start := time.Now()
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Wait: 50 * time.Millisecond}); !isEmpty(err) {
		t.Fatalf("wait on empty queue: %v", err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("returned before the wait was over")
	}
	got := make(chan *queues.Claim, 1)
	go func() {
		c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	// Another broker (as another process would) adds the item; the
	// waiter is woken by the file event.
	b2 := newBroker(t, s, nil)
	it := mustAdd(t, b2, "q", queues.AddOptions{})
	select {
	case c := <-got:
		if c == nil || c.ID != it.ID {
			t.Fatalf("waiter got %+v", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waiter not woken")
	}
}

func TestJournalEvents(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 1})
	it := mustAdd(t, b, "q", queues.AddOptions{})
	c := mustTake(t, b, take1("q"))
	c.Fail("x")
	b.Retry("q")
	c = mustTake(t, b, take1("q"))
	c.Release()
	c = mustTake(t, b, take1("q"))
	c.Complete("")
	for typ, n := range map[string]int{queues.EventAdded: 1, queues.EventClaimed: 3, queues.EventDead: 1,
		queues.EventRetried: 1, queues.EventReleased: 1, queues.EventCompleted: 1} {
		evs := events(t, s, typ)
		if len(evs) != n {
			t.Errorf("%d %s events, want %d", len(evs), typ, n)
			continue
		}
		if evs[0].Item != it.ID || evs[0].Queue != "q" {
			t.Errorf("%s event = %+v", typ, evs[0])
		}
	}
}

// Claim.Complete reuses the document read at claim time only while the
// file is byte for byte what the claim wrote: a hand edit of the claimed
// copy is kept, and a claim reaped and re-taken since is refused.
func TestClaimCompleteSeesFileChanges(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Minute})
	mustAdd(t, b, "q", queues.AddOptions{Title: "t"})
	c := mustTake(t, b, take1("q"))
	if _, err := s.Update(c.Path, func(d *docstore.Doc) error { return d.Set("note", "by hand") }); err != nil {
		t.Fatal(err)
	}
	done, err := c.Complete("ok")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Get(done.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.String("note"), "by hand"; got != want {
		t.Errorf("done copy note = %q, want %q (the hand edit)", got, want)
	}

	mustAdd(t, b, "q", queues.AddOptions{Title: "t2"})
	c1 := mustTake(t, b, take1("q"))
	clk.Advance(2 * time.Minute)
	if rep, err := b.Reap("q"); err != nil || len(rep.Returned) != 1 {
		t.Fatalf("reap: %v, %+v", err, rep)
	}
	c2 := mustTake(t, b, take1("q"))
	if _, err := c1.Complete("late"); !errors.Is(err, queues.ErrStale) {
		t.Errorf("complete by the reaped claim: got %v, want ErrStale", err)
	}
	if _, err := c2.Complete("ok"); err != nil {
		t.Errorf("complete by the current claim: %v", err)
	}
}

// The Broker keeps its state directories open (move.go). A directory
// replaced by hand is followed: a claimed/ rebuilt under the same path
// still lets the claim complete, and the item lands in done/.
func TestStateDirReplacedByHand(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, &clock{})
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Minute})
	mustAdd(t, b, "q", queues.AddOptions{Title: "warm"})
	mustTake(t, b, take1("q")) // opens the handles
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "t"})
	c := mustTake(t, b, take1("q"))
	if c.Item.ID != it.ID {
		t.Fatalf("took %s, want %s", c.Item.ID, it.ID)
	}
	claimed := filepath.Join(s.Root(), "queues", "q", "claimed")
	if err := os.Rename(claimed, claimed+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(claimed, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(claimed + ".old")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(claimed+".old", e.Name()), filepath.Join(claimed, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Complete("ok"); err != nil {
		t.Fatalf("complete after claimed/ was rebuilt: %v", err)
	}
	if got := ls(t, s, "q", queues.Done); !slices.Contains(got, it.ID) {
		t.Errorf("done/ = %v, want it to hold %s", got, it.ID)
	}
	if got, _ := os.ReadDir(claimed + ".old"); len(got) != 0 {
		t.Errorf("the old claimed/ got %d entries back", len(got))
	}
}

// A state directory replaced by a symlink leaving the store is never
// followed: take reports or skips, and the file outside stays untouched.
func TestStateDirSymlinkRefused(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, &clock{})
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "outside"})
	pending := filepath.Join(s.Root(), "queues", "q", "pending")
	outside := t.TempDir()
	if err := os.Rename(filepath.Join(pending, it.ID+".md"), filepath.Join(outside, it.ID+".md")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(outside, it.ID+".md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pending); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, pending); err != nil {
		t.Fatal(err)
	}
	b2 := newBroker(t, s, &clock{})
	if c, err := b2.Take(context.Background(), take1("q")); err == nil {
		t.Fatalf("took %s through a symlink leaving the store", c.Item.ID)
	}
	after, err := os.ReadFile(filepath.Join(outside, it.ID+".md"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("file outside the store changed or went away: %v", err)
	}
	for _, st := range []string{queues.Claimed, queues.Done} {
		if got := ls(t, s, "q", st); len(got) != 0 {
			t.Errorf("%s/ = %v, want empty", st, got)
		}
	}
}

// A state directory renamed away by hand and made anew is followed once
// the handle is rechecked (Options.DirRecheck; negative: every use): the
// completion lands in the new done/, nothing in the old one.
func TestStateDirRecheck(t *testing.T) {
	s := newStore(t, true)
	b, err := queues.Open(s, queues.Options{DirRecheck: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustAdd(t, b, "q", queues.AddOptions{Title: "warm"})
	warm := mustTake(t, b, take1("q"))
	if _, err := warm.Complete("ok"); err != nil { // opens the done/ handle
		t.Fatal(err)
	}
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "t"})
	c := mustTake(t, b, take1("q"))
	done := filepath.Join(s.Root(), "queues", "q", "done")
	if err := os.Rename(done, done+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(done, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete("ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(done, it.ID+".md")); err != nil {
		t.Errorf("completed item not in the new done/: %v", err)
	}
	if _, err := os.Stat(filepath.Join(done+".old", it.ID+".md")); err == nil {
		t.Errorf("completed item written into the done/ renamed away")
	}
}

// TakeOptions.Guard is asked before every attempt to claim: its error
// ends the take with nothing claimed, at once when the item is there,
// and at the first attempt a wait makes when it arrives later (a drone of
// a draining pool, an agent that failed meanwhile).
func TestTakeGuard(t *testing.T) {
	s := newStore(t, true)
	b, err := queues.Open(s, queues.Options{Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustQueue(t, b, "q", queues.QueueOptions{})
	errStop := errors.New("stop")
	var stop atomic.Bool
	var calls atomic.Int32
	// The second call is the wait's first attempt, after the first found
	// nothing: it holds there while the guard turns and an item arrives,
	// so that attempt is the one that would claim it.
	asked, release := make(chan struct{}), make(chan struct{})
	guard := func() error {
		if calls.Add(1) == 2 {
			close(asked)
			<-release
		}
		if stop.Load() {
			return errStop
		}
		return nil
	}
	got := make(chan error, 1)
	go func() {
		c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Wait: time.Minute, Guard: guard})
		if c != nil {
			err = fmt.Errorf("claimed %s", c.ID)
		}
		got <- err
	}()
	<-asked
	stop.Store(true)
	it := mustAdd(t, newBroker(t, s, nil), "q", queues.AddOptions{})
	close(release)
	select {
	case err := <-got:
		if !errors.Is(err, errStop) {
			t.Fatalf("take woken with the guard stopping it: %v, want the guard's error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not woken by the add")
	}
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Guard: guard}); !errors.Is(err, errStop) {
		t.Fatalf("take with the item there and the guard stopping it: %v, want the guard's error", err)
	}
	if got := ls(t, s, "q", queues.Pending); len(got) != 1 || got[0] != it.ID {
		t.Fatalf("pending = %v, want the item, unclaimed", got)
	}
}
