package queues_test

// Multi-process tests: the test binary re-executes itself as workers
// (TestHelperProcess, storetest.HelperCommand), so claims race across real
// processes, and SIGKILL/SIGSTOP hit real flock holders.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// TestHelperProcess is not a test: it is the worker body of the
// multi-process tests, selected by its role (storetest.HelperRole).
func TestHelperProcess(t *testing.T) {
	mode := storetest.HelperRole()
	if mode == "" {
		t.Skip("helper process only")
	}
	if err := helperMain(mode, os.Getenv("QUEUES_DIR"), os.Getenv("QUEUES_ARG")); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperMain(mode, dir, arg string) error {
	s, err := docstore.Open(dir)
	if err != nil {
		return err
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "worker": // take and complete until the queue is empty; print each id
		for {
			c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock, As: arg})
			if err != nil {
				if isEmpty(err) {
					return nil
				}
				return err
			}
			if _, err := c.Complete("done by " + arg); err != nil {
				return err
			}
			fmt.Fprintln(out, c.ID)
		}
	case "hold": // claim one item, say which, then hang until killed
		c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock, As: arg})
		if err != nil {
			return err
		}
		fmt.Fprintln(out, c.ID, c.Attempt)
		out.Flush()
		select {}
	case "agent": // hold an agent's liveness lock, as its spawn wrapper would
		l, err := s.Lock(schema.AgentLockKey(arg))
		if err != nil {
			return err
		}
		defer l.Unlock()
		fmt.Fprintln(out, "ready")
		out.Flush()
		select {}
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

type helper struct {
	cmd *exec.Cmd
	out *bufio.Reader
}

func startHelper(t *testing.T, s *docstore.Store, mode, arg string) *helper {
	t.Helper()
	cmd := storetest.HelperCommand(t, "^TestHelperProcess$", mode, "QUEUES_DIR="+s.Root(), "QUEUES_ARG="+arg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &helper{cmd: cmd, out: bufio.NewReader(stdout)}
}

// TestExactlyOnceProcesses: 8 worker processes take and complete every
// item of one queue. Each item must be completed exactly once: once in
// done/, once in the workers' reports, one item.claimed and one
// item.completed event, attempts 1.
//
// Sizes: 5,000 items on a relaxed store (the claim protocol is the same;
// only the fsyncs are skipped) in a plain `go test`; under -race (`make
// test`) the workers are race-instrumented and several times slower, so
// 1,500 items; with -tags long, 5,000 items on a durable store; -short,
// 400.
func TestExactlyOnceProcesses(t *testing.T) {
	n, durable := 5000, false
	switch {
	case longTests:
		durable = true
	case raceEnabled:
		n = 1500
	}
	if testing.Short() {
		n = 400
	}
	const workers = 8
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[mustAdd(t, b, "q", queues.AddOptions{Priority: i % 3}).ID] = true
	}
	if durable {
		setDurability(t, s, "durable")
	}
	t.Logf("%d items, %d worker processes, durable %v", n, workers, durable)
	hs := make([]*helper, workers)
	for w := range hs {
		hs[w] = startHelper(t, s, "worker", fmt.Sprintf("w%d", w))
	}
	seen := map[string]string{}
	for w, h := range hs {
		for {
			line, err := h.out.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				if prev, dup := seen[line]; dup {
					t.Errorf("item %s completed by w%d and %s", line, w, prev)
				}
				seen[line] = fmt.Sprintf("w%d", w)
			}
			if err != nil {
				break
			}
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	if len(seen) != n {
		t.Errorf("workers completed %d distinct items, want %d", len(seen), n)
	}
	for id := range want {
		if seen[id] == "" {
			t.Errorf("item %s never completed", id)
		}
	}
	done := ls(t, s, "q", "done")
	if len(done) != n || len(ls(t, s, "q", "pending")) != 0 || len(ls(t, s, "q", "claimed")) != 0 {
		t.Errorf("done %d, pending %d, claimed %d; want %d, 0, 0", len(done), len(ls(t, s, "q", "pending")), len(ls(t, s, "q", "claimed")), n)
	}
	for _, typ := range []string{queues.EventClaimed, queues.EventCompleted} {
		count := map[string]int{}
		for _, e := range events(t, s, typ) {
			count[e.Item]++
		}
		if len(count) != n {
			t.Errorf("%s events for %d items, want %d", typ, len(count), n)
		}
		for id, c := range count {
			if c != 1 || !want[id] {
				t.Errorf("%s: item %s has %d events (known item: %v), want 1", typ, id, c, want[id])
			}
		}
	}
	// Spot-check the files: attempts 1, result from the worker that reported it.
	for i, id := range done {
		if i%97 != 0 {
			continue
		}
		d, err := s.Get(queues.ItemPath("q", "done", id))
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := d.Int("attempts"); a != 1 || d.String("result") != "done by "+seen[id] {
			t.Errorf("%s: attempts %d result %q, want 1, done by %s", id, a, d.String("result"), seen[id])
		}
	}
}

// TestKilledHolderReapedAtOnce: SIGKILL a process holding a liveness
// claim; the next take (and reap) returns the item without waiting for
// its one-hour lease.
func TestKilledHolderReapedAtOnce(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Hour})
	it := mustAdd(t, b, "q", queues.AddOptions{})
	h := startHelper(t, s, "hold", "victim")
	fields := strings.Fields(readLine(t, h.out, 30*time.Second))
	if len(fields) != 2 || fields[0] != it.ID || fields[1] != "1" {
		t.Fatalf("helper claimed %v, want %s 1", fields, it.ID)
	}
	// Alive: a reap leaves it alone.
	rep, err := b.Reap("q")
	if err != nil || len(rep.Returned) != 0 {
		t.Fatalf("reap with live holder: %v %+v", err, rep)
	}
	if _, err := b.Take(context.Background(), take1("q")); !isEmpty(err) {
		t.Fatalf("take with live holder: %v", err)
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
	// A fresh broker (as a new `tavern queue take` process) reaps at once.
	b2 := newBroker(t, s, nil)
	c := mustTake(t, b2, queues.TakeOptions{Queues: []string{"q"}, As: "heir"})
	if c.ID != it.ID || c.Attempt != 2 || c.Attempts != 2 {
		t.Fatalf("took %s attempt %d attempts %d, want %s 2 2", c.ID, c.Attempt, c.Attempts, it.ID)
	}
	reaped := events(t, s, queues.EventReaped)
	if len(reaped) != 1 || !strings.Contains(fmt.Sprint(reaped[0].Data["reason"]), "owner died") {
		t.Errorf("reaped events = %+v", reaped)
	}
	// The dead holder's lock file is gone.
	last := reaped[0]
	if key, _ := last.Data["liveness_lock"].(string); !strings.HasPrefix(key, "holders/") {
		t.Fatalf("reaped event liveness_lock = %v, want a holders/ key", last.Data["liveness_lock"])
	} else if _, err := os.Stat(filepath.Join(s.Root(), ".locks", key+".lock")); !os.IsNotExist(err) {
		t.Errorf("lock of the dead holder: %v, want removed", err)
	}
}

// TestStoppedHolderLeaseExpiry: a SIGSTOPped holder keeps its flock, so
// it looks alive; its lease runs out, the reaper reports it hung
// (item.lease_expired) and returns it after lease_grace. The hung
// holder's claim lock cannot stop the item from being claimed again
// (claim locks are per attempt), and its late completion is refused.
func TestStoppedHolderLeaseExpiry(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Minute, LeaseGrace: 30 * time.Second})
	it := mustAdd(t, b, "q", queues.AddOptions{})
	h := startHelper(t, s, "hold", "sleeper")
	if got := readLine(t, h.out, 30*time.Second); got != it.ID+" 1" {
		t.Fatalf("helper: %q", got)
	}
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Reap("q")
	if err != nil || len(rep.Returned)+len(rep.Hung) != 0 {
		t.Fatalf("reap within lease: %v %+v", err, rep)
	}
	clk.Advance(61 * time.Second) // lease over, grace not
	rep, err = b.Reap("q")
	if err != nil || len(rep.Hung) != 1 || len(rep.Returned) != 0 {
		t.Fatalf("reap after lease: %v %+v", err, rep)
	}
	if evs := events(t, s, queues.EventLeaseExpired); len(evs) != 1 {
		t.Fatalf("lease_expired events: %d, want 1", len(evs))
	}
	b.Reap("q") // seen again: no second event
	if evs := events(t, s, queues.EventLeaseExpired); len(evs) != 1 {
		t.Errorf("lease_expired events after a second reap: %d, want 1", len(evs))
	}
	clk.Advance(30 * time.Second) // grace over
	c := mustTake(t, b, take1("q"))
	if c.ID != it.ID || c.Attempt != 2 {
		t.Fatalf("took %s attempt %d, want %s 2", c.ID, c.Attempt, it.ID)
	}
	if _, err := b.Complete(it.ID, 1, "late"); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("hung holder's completion: %v, want stale", err)
	}
}

// TestAgentLivenessClaim: a take for an agent whose liveness lock is held
// (its spawn wrapper is running) makes a liveness claim tied to that
// lock: killing the wrapper frees the item at once. With no wrapper
// running the claim is lease-only.
func TestAgentLivenessClaim(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Hour})
	mustAdd(t, b, "q", queues.AddOptions{})
	mustAdd(t, b, "q", queues.AddOptions{})

	c := mustTake(t, b, queues.TakeOptions{Queues: []string{"q"}, As: "ghost", Liveness: queues.AgentLock})
	if c.ClaimKind != "lease" || c.LivenessLock != "" {
		t.Errorf("claim for a non-running agent: kind %q lock %q, want lease-only", c.ClaimKind, c.LivenessLock)
	}
	h := startHelper(t, s, "agent", "alice")
	if got := readLine(t, h.out, 30*time.Second); got != "ready" {
		t.Fatalf("agent helper: %q", got)
	}
	c2 := mustTake(t, b, queues.TakeOptions{Queues: []string{"q"}, As: "alice", Liveness: queues.AgentLock})
	if c2.ClaimKind != "liveness" || c2.LivenessLock != "agents/alice" {
		t.Fatalf("claim for a running agent: kind %q lock %q", c2.ClaimKind, c2.LivenessLock)
	}
	if rep, _ := b.Reap("q"); len(rep.Returned) != 0 {
		t.Fatalf("reaped a live agent's claim")
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
	rep, err := b.Reap("q")
	if err != nil || len(rep.Returned) != 1 || rep.Returned[0].ID != c2.ID {
		t.Fatalf("reap after the agent died: %v %+v", err, rep)
	}
}
