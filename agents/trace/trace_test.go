package trace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/trace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

func setup(t *testing.T) (*agents.Manager, *queues.Broker) {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "t")
	if err != nil {
		t.Fatal(err)
	}
	m, err := agents.NewManager(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	journal.RecordMutations(s, m.Journal, "", nil)
	b, err := queues.Open(s, queues.Options{Journal: m.Journal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return m, b
}

func TestTraceItem(t *testing.T) {
	m, b := setup(t)
	if _, err := b.CreateQueue("q", queues.QueueOptions{Backoff: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	it, err := b.Add("q", queues.AddOptions{Title: "port the parser", Gate: "human", By: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	// Attempt 1 fails, attempt 2 succeeds and waits at the gate.
	for i, script := range []string{"echo looking around; echo no luck >&2; exit 1", "echo ported it; echo all tests pass"} {
		done := make(chan error, 1)
		go func() {
			res, err := m.Spawn(context.Background(), agents.SpawnOptions{Name: "drone-" + string(rune('a'+i)), Queues: []string{"q"}, Work: agents.QueueWork(b),
				Command: []string{"/bin/sh", "-c", script}, Wait: 10 * time.Second})
			if err == nil && res.Outcome == agents.OutcomeNoWork {
				err = agents.ErrNoWork
			}
			done <- err
		}()
		if i == 1 {
			deadline := time.Now().Add(20 * time.Second)
			for {
				if a, err := m.GetAgent("drone-b"); err == nil && a.State == agents.Waiting {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("drone-b never waited at the gate")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := b.Approve(it.ID, queues.Decision{By: "ann", Caller: &queues.Caller{User: "ann", Env: map[string]string{}}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-done; err != nil && i == 1 {
			t.Fatal(err)
		}
	}
	tr, err := trace.Item(b, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != queues.Done || tr.CreatedBy != "lead" || len(tr.Attempts) != 2 {
		t.Fatalf("trace: state %s created by %q, %d attempts", tr.State, tr.CreatedBy, len(tr.Attempts))
	}
	a1, a2 := tr.Attempts[0], tr.Attempts[1]
	if a1.Holder != "drone-a" || a1.Outcome != "failed" || !strings.Contains(a1.Reason, "exit status 1") || a1.Liveness != "liveness" {
		t.Errorf("attempt 1: %+v", a1)
	}
	if a2.Holder != "drone-b" || a2.Outcome != "completed" {
		t.Errorf("attempt 2: %+v", a2)
	}
	if tr.Usage.Runs != 2 || tr.Usage.Wall <= 0 {
		t.Errorf("usage: %+v", tr.Usage)
	}
	want := map[string]bool{"message:no luck": false, "message:all tests pass": false, "approval:approved": false,
		"event:agent.gated": false, "event:gate.approved": false, "event:usage.recorded": false, "event:item.claimed": false}
	for _, e := range tr.Timeline {
		for k := range want {
			kind, what, _ := strings.Cut(k, ":")
			if e.Kind == kind && (e.Type == what || strings.Contains(e.Summary, what)) {
				want[k] = true
			}
		}
	}
	for k, ok := range want {
		if !ok {
			t.Errorf("the timeline lacks %s", k)
		}
	}
	for i := 1; i < len(tr.Timeline); i++ {
		if tr.Timeline[i].Time.Before(tr.Timeline[i-1].Time.Time) {
			t.Fatal("the timeline is not in time order")
		}
	}
}

func TestAtFromJournalAndGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	m, b := setup(t)
	s := m.Store
	project := filepath.Dir(s.Root())
	gitc := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "alice", Role: "dev"}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(s.Root(), "agents/alice.md"))
	gitc("init", "-q")
	gitc("add", ".tavern/agents")
	gitc("commit", "-qm", "alice")
	// git's commit times have one-second precision: step past them.
	time.Sleep(1100 * time.Millisecond)
	t1 := time.Now()
	time.Sleep(1100 * time.Millisecond)
	if _, err := m.Transition("alice", agents.Working, agents.TransitionOptions{By: "t"}); err != nil {
		t.Fatal(err)
	}
	// Unchanged since t1 was... changed: git has the old copy.
	snap, err := trace.At(b, "agents/alice", t1)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Exists || !strings.HasPrefix(snap.Source, "git ") || snap.Content != string(first) {
		t.Fatalf("at t1: exists %v source %q, content equal %v\n%s", snap.Exists, snap.Source, snap.Content == string(first), snap.Note)
	}
	if len(snap.After) == 0 {
		t.Error("the change after t1 is not listed")
	}
	// Now: the current file.
	now, err := trace.At(b, "agents/alice", time.Now())
	if err != nil || !strings.HasPrefix(now.Source, "current file") {
		t.Fatalf("at now: %v %+v", err, now)
	}
	// Before it existed.
	before, err := trace.At(b, "agents/alice", t1.Add(-time.Hour))
	if err != nil || before.Exists {
		t.Fatalf("before creation: %v %+v", err, before)
	}
	// Without git, a changed document says what it knows.
	os.RemoveAll(filepath.Join(project, ".git"))
	snap, err = trace.At(b, "agents/alice", t1)
	if err != nil || snap.Source != "" || !snap.Exists || snap.Rev == "" || !strings.Contains(snap.Note, "changed since") {
		t.Fatalf("without git: %v %+v", err, snap)
	}
	// An item's state is replayed from its events.
	b.CreateQueue("q", queues.QueueOptions{})
	it, _ := b.Add("q", queues.AddOptions{Title: "x"})
	c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	mid := time.Now()
	time.Sleep(10 * time.Millisecond)
	c.Complete("ok")
	snap, err = trace.At(b, "items/"+it.ID, mid)
	if err != nil || snap.Item == nil || snap.Item.State != queues.Claimed || snap.Item.Holder != "bob" || !strings.Contains(snap.Path, "/claimed/") {
		t.Fatalf("item at mid: %v %+v %+v", err, snap, snap.Item)
	}
}

// TestAtHandRemoved: a document created and removed by hand (journaled as
// external, with the operation in its data) does not exist after its
// removal, and did between.
func TestAtHandRemoved(t *testing.T) {
	m, b := setup(t)
	ext := func(op, rev string) time.Time {
		t.Helper()
		e, err := m.Journal.Append(journal.Event{Type: journal.TypeExternal, Kind: "agent", Path: "agents/carl.md", Rev: rev, Data: map[string]any{"op": op}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // distinct journal times
		return e.Time.Time
	}
	created := ext(journal.TypeCreated, "5dbb7a0c5d51d4f0")
	removed := ext(journal.TypeRemoved, "")
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{created.Add(-time.Hour), false},
		{created.Add(time.Millisecond), true},
		{removed.Add(time.Millisecond), false},
	} {
		snap, err := trace.At(b, "agents/carl", tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Exists != tc.want {
			t.Errorf("at %s: exists %v, want %v", tc.at.Format(time.RFC3339Nano), snap.Exists, tc.want)
		}
	}
}
