package view

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// fixture is a store in which every kind of Needs-you entry exists.
type fixture struct {
	s        *docstore.Store
	m        *agents.Manager
	b        *queues.Broker
	question string // alice's open question to the user
	dead     string // dead item in build
	blocked  string // pending item in build depending on dead
	hung     *queues.Claim
}

func newStore(tb testing.TB) *docstore.Store {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// must returns v, or panics: Go passes a call's two results to a
// function only as its whole argument list, so a testing.TB cannot come
// along. A panic fails the test binary with the stack of the call.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{s: newStore(t)}
	f.m = must(agents.NewManager(f.s))
	t.Cleanup(func() { f.m.Close() })
	past := time.Now().Add(-time.Hour)
	f.b = must(queues.Open(f.s, queues.Options{Now: func() time.Time { return past }}))
	t.Cleanup(func() { f.b.Close() })

	must(f.m.CreateAgent(agents.AgentSpec{Name: "alice", Role: "coder"}))
	must(f.m.CreateAgent(agents.AgentSpec{Name: "bob"}))
	must(f.m.Transition("alice", agents.Working, agents.TransitionOptions{By: "test"}))
	must(f.m.Transition("bob", agents.Failed, agents.TransitionOptions{By: "test", Reason: "wrapper crashed"}))
	f.question = must(f.m.Ask("alice", "user", 0, "Postgres or **SQLite**?")).ID

	must(f.m.AddCommitment("alice", "the tests pass", "echo failing; exit 3", 5*time.Second))
	must(f.m.Verify(context.Background(), "alice", "verifier"))

	must(f.b.CreateQueue("build", queues.QueueOptions{MaxAttempts: 1, Lease: time.Minute}))
	deadItem := must(f.b.Add("build", queues.AddOptions{Title: "flaky"}))
	c := must(f.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"build"}, As: "carol"}))
	must(c.Fail("segfault"))
	f.dead = deadItem.ID
	// A lease claim made an hour ago (the broker's clock): its lease is
	// long over.
	must(f.b.Add("build", queues.AddOptions{Title: "slow"}))
	f.hung = must(f.b.Take(context.Background(), queues.TakeOptions{Queues: []string{"build"}, As: "dave"}))
	f.blocked = must(f.b.Add("build", queues.AddOptions{Title: "after flaky", DependsOn: []string{f.dead}})).ID
	if err := f.s.WriteFile("agents/broken.md", []byte("---\nname: [broken\n---\n")); err != nil {
		t.Fatal(err)
	}
	return f
}

func needKeys(ns []Need) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Key)
	}
	return out
}

func findNeed(ns []Need, key string) (Need, bool) {
	for _, n := range ns {
		if n.Key == key {
			return n, true
		}
	}
	return Need{}, false
}

func TestSnapshotNeedsYou(t *testing.T) {
	f := newFixture(t)
	v := must(Open(f.s, Options{Person: "pat"}))
	defer v.Close()
	snap := must(v.Snapshot())

	for _, tc := range []struct {
		key, kind, action string
	}{
		{"question:" + f.question, NeedQuestion, ActAnswer},
		{"failed:bob", NeedFailed, ActRespawn},
		{"dead:build/" + f.dead, NeedDead, ActRetry},
		{"invalid:agents/broken.md", NeedInvalid, ActEdit},
	} {
		n, ok := findNeed(snap.Needs, tc.key)
		if !ok {
			t.Errorf("no need %s in %v", tc.key, needKeys(snap.Needs))
			continue
		}
		if n.Kind != tc.kind || n.What == "" || n.Why == "" || n.Do == "" {
			t.Errorf("%s: got kind %q what %q why %q do %q", tc.key, n.Kind, n.What, n.Why, n.Do)
		}
		if len(n.Actions) == 0 || n.Actions[0].Name != tc.action {
			t.Errorf("%s: got actions %+v, want %s first", tc.key, n.Actions, tc.action)
		}
	}
	q, _ := findNeed(snap.Needs, "question:"+f.question)
	if !strings.Contains(q.Text, "**SQLite**") || q.Agent != "alice" {
		t.Errorf("question need: text %q agent %q", q.Text, q.Agent)
	}
	b, _ := findNeed(snap.Needs, "failed:bob")
	if b.Why != "wrapper crashed" {
		t.Errorf("failed need why: got %q, want the transition's reason", b.Why)
	}
	inv, _ := findNeed(snap.Needs, "invalid:agents/broken.md")
	if !regexp.MustCompile(`^agents/broken\.md:\d+:\d+: `).MatchString(inv.Why) {
		t.Errorf("invalid need why: got %q, want path:line", inv.Why)
	}
	var commitment bool
	for _, n := range snap.Needs {
		if n.Kind == NeedCommitment && n.Agent == "alice" && strings.Contains(n.Text, "failing") {
			commitment = true
		}
	}
	if !commitment {
		t.Errorf("no failing commitment need in %v", needKeys(snap.Needs))
	}
	// The hung claim (lease over an hour ago, lease-only) and the
	// blocked item.
	if _, ok := findNeed(snap.Needs, "hung:build/"+f.hung.ID); !ok {
		t.Errorf("no hung need for %s in %v", f.hung.ID, needKeys(snap.Needs))
	}
	if _, ok := findNeed(snap.Needs, "blocked:build/"+f.blocked); !ok {
		t.Errorf("no blocked need for %s in %v", f.blocked, needKeys(snap.Needs))
	}
	// Questions first.
	if snap.Needs[0].Kind != NeedQuestion {
		t.Errorf("first need: got %s, want a question", snap.Needs[0].Kind)
	}

	// The other lenses.
	var build *Queue
	for i := range snap.Queues {
		if snap.Queues[i].Name == "build" {
			build = &snap.Queues[i]
		}
	}
	if build == nil {
		t.Fatalf("no queue build in %+v", snap.Queues)
	}
	if got, want := [4]int{build.Pending, build.Claimed, build.Done, build.Dead}, [4]int{1, 1, 0, 1}; got != want {
		t.Errorf("build depth: got %v, want %v", got, want)
	}
	if build.Owners["dave"] != 1 || build.Hung != 1 {
		t.Errorf("build owners %v hung %d", build.Owners, build.Hung)
	}
	states := map[string]string{}
	for _, a := range snap.Agents {
		states[a.Name] = a.State
	}
	if states["alice"] != agents.Waiting || states["bob"] != agents.Failed {
		t.Errorf("agent states: %v", states)
	}
	if len(snap.Journal) == 0 || snap.Journal[len(snap.Journal)-1].Type == "" {
		t.Errorf("journal tail: %+v", snap.Journal)
	}
}

func TestNeedsBlockedItem(t *testing.T) {
	s := newStore(t)
	b := must(queues.Open(s, queues.Options{}))
	defer b.Close()
	must(b.CreateQueue("q", queues.QueueOptions{MaxAttempts: 1}))
	dep := must(b.Add("q", queues.AddOptions{Title: "first"}))
	c := must(b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}))
	must(c.Fail("no"))
	later := must(b.Add("q", queues.AddOptions{Title: "second", DependsOn: []string{dep.ID}}))
	v := must(Open(s, Options{Person: "pat"}))
	defer v.Close()
	snap := must(v.Snapshot())
	n, ok := findNeed(snap.Needs, "blocked:q/"+later.ID)
	if !ok {
		t.Fatalf("no blocked need in %v", needKeys(snap.Needs))
	}
	if !strings.Contains(n.Why, dep.ID) || !strings.Contains(n.Why, "dead") {
		t.Errorf("why: %q", n.Why)
	}
	// A person knows the item by its title: the id alone named it.
	if want := `"second"`; !strings.Contains(n.What, want) || !strings.Contains(n.What, later.ID) {
		t.Errorf("what: %q, want the title %s and the id", n.What, want)
	}
	if !strings.Contains(n.Why, `"first"`) {
		t.Errorf("why: %q, want the dependency's title", n.Why)
	}
}

// TestNeedsBlockedTransitively: C depends on B, which depends on dead A.
// B was listed as blocked, C (which can never run either) was not.
func TestNeedsBlockedTransitively(t *testing.T) {
	s := newStore(t)
	b := must(queues.Open(s, queues.Options{}))
	defer b.Close()
	must(b.CreateQueue("q", queues.QueueOptions{MaxAttempts: 1}))
	a := must(b.Add("q", queues.AddOptions{Title: "alpha"}))
	c := must(b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}))
	must(c.Fail("no"))
	bb := must(b.Add("q", queues.AddOptions{Title: "beta", DependsOn: []string{a.ID}}))
	cc := must(b.Add("q", queues.AddOptions{Title: "gamma", DependsOn: []string{bb.ID}}))
	v := must(Open(s, Options{Person: "pat"}))
	defer v.Close()
	snap := must(v.Snapshot())
	if _, ok := findNeed(snap.Needs, "blocked:q/"+bb.ID); !ok {
		t.Fatalf("no blocked need for beta in %v", needKeys(snap.Needs))
	}
	n, ok := findNeed(snap.Needs, "blocked:q/"+cc.ID)
	if !ok {
		t.Fatalf("no blocked need for gamma (through beta) in %v", needKeys(snap.Needs))
	}
	if !strings.Contains(n.What, `"gamma"`) {
		t.Errorf("what: %q", n.What)
	}
	for _, want := range []string{`"beta"`, `"alpha"`, a.ID, "dead"} {
		if !strings.Contains(n.Why, want) {
			t.Errorf("why: %q, want %s", n.Why, want)
		}
	}
	got := 0
	for _, n := range snap.Needs {
		if n.Kind == NeedBlocked {
			got++
		}
	}
	if got != 2 {
		t.Errorf("%d blocked needs, want 2 (beta, gamma): %v", got, needKeys(snap.Needs))
	}
}

// TestLiveUpdates drives the view the way a face does: wait on Updates,
// re-snapshot, until a change made through another Store (as another
// process would) shows.
func TestLiveUpdates(t *testing.T) {
	s := newStore(t)
	v := must(Open(s, Options{Person: "pat", Watch: true}))
	defer v.Close()
	ups, stop := v.Updates()
	defer stop()

	other := must(docstore.Open(s.Root()))
	m := must(agents.NewManager(other))
	defer m.Close()
	must(m.CreateAgent(agents.AgentSpec{Name: "zed"}))
	must(m.Transition("zed", agents.Working, agents.TransitionOptions{By: "test"}))
	q := must(m.Ask("zed", "user", 0, "ship it?"))

	waitFor(t, v, ups, func(s *Snapshot) bool {
		_, ok := findNeed(s.Needs, "question:"+q.ID)
		return ok
	})
	// And the journal timeline has the domain event.
	waitFor(t, v, ups, func(s *Snapshot) bool {
		return slices.ContainsFunc(s.Journal, func(e journal.Event) bool { return e.Type == "question.raised" })
	})
}

func waitFor(t *testing.T, v *View, ups <-chan uint64, cond func(*Snapshot) bool) *Snapshot {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		snap, err := v.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if cond(snap) {
			return snap
		}
		select {
		case <-ups:
		case <-deadline:
			t.Fatalf("condition not met within 20s; needs %v", needKeys(snap.Needs))
		}
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t)
	v := must(Open(f.s, Options{Person: "pat", Face: "test"}))
	defer v.Close()
	ctx := context.Background()

	t.Run("answer", func(t *testing.T) {
		if _, err := v.Do(ctx, Action{Name: ActAnswer, Target: f.question}); !errors.Is(err, ErrNoInput) {
			t.Fatalf("empty answer: got %v, want ErrNoInput", err)
		}
		must(v.Do(ctx, Action{Name: ActAnswer, Target: f.question, Text: "SQLite"}))
		q := must(f.m.GetQuestion(f.question))
		if q.Status != agents.QuestionAnswered || q.Answer != "SQLite" || q.AnsweredBy != "pat" {
			t.Errorf("question: %+v", q)
		}
		if a := must(f.m.GetAgent("alice")); a.State != agents.Working {
			t.Errorf("alice: got %s, want working (woken by the answer)", a.State)
		}
		if _, err := v.Do(ctx, Action{Name: ActAnswer, Target: f.question, Text: "again"}); !errors.Is(err, agents.ErrAnswered) {
			t.Errorf("second answer: got %v, want ErrAnswered", err)
		}
	})
	t.Run("retry", func(t *testing.T) {
		// An id that names no item, without a queue: not found, not a
		// complaint about the queue nobody named.
		if _, err := v.Do(ctx, Action{Name: ActRetry, Target: "p00-nope"}); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), `queue ""`) {
			t.Errorf("retry of an unknown item: got %v, want not found", err)
		}
		must(v.Do(ctx, Action{Name: ActRetry, Target: f.dead, Queue: "build"}))
		if it := must(f.b.Get(f.dead)); it.State != queues.Pending {
			t.Errorf("retried item: got %s, want pending", it.State)
		}
	})
	t.Run("release", func(t *testing.T) {
		if _, err := v.Do(ctx, Action{Name: ActRelease, Target: f.hung.ID, Attempt: f.hung.Attempt + 1}); !errors.Is(err, queues.ErrStale) {
			t.Fatalf("release with a wrong fencing token: got %v, want ErrStale", err)
		}
		must(v.Do(ctx, Action{Name: ActRelease, Target: f.hung.ID, Attempt: f.hung.Attempt}))
		if it := must(f.b.Get(f.hung.ID)); it.State != queues.Pending {
			t.Errorf("released item: got %s, want pending", it.State)
		}
	})
	t.Run("send", func(t *testing.T) {
		must(v.Do(ctx, Action{Name: ActSend, Target: "@alice", Text: "use SQLite"}))
		ms := must(messages.ReadMessages(f.s, "@alice", "", 0))
		if len(ms) != 1 || ms[0].Sender != "pat" || ms[0].Text != "use SQLite" {
			t.Errorf("messages: %+v", ms)
		}
	})
	t.Run("respawn", func(t *testing.T) {
		must(v.Do(ctx, Action{Name: ActRespawn, Target: "bob"}))
		if a := must(f.m.GetAgent("bob")); a.State != agents.Idle {
			t.Errorf("bob: got %s, want idle", a.State)
		}
		// Respawned already (by another page, or a second click): refused,
		// not reported as done again.
		if _, err := v.Do(ctx, Action{Name: ActRespawn, Target: "bob"}); !errors.Is(err, agents.ErrStateChanged) {
			t.Errorf("respawn of an idle agent: got %v, want ErrStateChanged", err)
		}
		// Respawn is failed -> idle: from a page shown while alice had
		// failed, it must not stop her now that she works again.
		if _, err := v.Do(ctx, Action{Name: ActRespawn, Target: "alice"}); !errors.Is(err, agents.ErrStateChanged) {
			t.Errorf("respawn of a working agent: got %v, want ErrStateChanged", err)
		}
		if a := must(f.m.GetAgent("alice")); a.State != agents.Working {
			t.Errorf("alice: got %s, want working (untouched)", a.State)
		}
	})
	t.Run("edit", func(t *testing.T) {
		broken := must(f.s.ReadFile("agents/broken.md"))
		rev := docstore.Revision(broken)
		_, err := v.Do(ctx, Action{Name: ActEdit, Target: "agents/broken.md", Rev: rev, Text: "---\nname: broken\nstate: sleeping\n---\n"})
		if !errors.Is(err, schema.ErrInvalid) {
			t.Fatalf("invalid edit: got %v, want ErrInvalid", err)
		}
		if got := must(f.s.ReadFile("agents/broken.md")); string(got) != string(broken) {
			t.Fatalf("a refused edit changed the file: %q", got)
		}
		if _, err := v.Do(ctx, Action{Name: ActEdit, Target: "agents/broken.md", Text: "---\nname: broken\n---\n"}); !errors.Is(err, ErrNoInput) {
			t.Fatalf("edit without a base revision: got %v, want ErrNoInput", err)
		}
		must(v.Do(ctx, Action{Name: ActEdit, Target: "agents/broken.md", Rev: rev, Text: "---\nname: broken\nstate: idle\n---\n"}))
		if _, err := v.Do(ctx, Action{Name: ActEdit, Target: "agents/broken.md", Rev: rev, Text: "---\nname: broken\n---\n"}); !errors.Is(err, docstore.ErrConflict) {
			t.Fatalf("edit over a stale revision: got %v, want ErrConflict", err)
		}
	})
	t.Run("edit obeys the store's rules", func(t *testing.T) {
		// bob is idle (respawned above); idle -> done is not a transition.
		before := must(f.s.ReadFile("agents/bob.md"))
		text := strings.Replace(string(before), "state: idle", "state: done", 1)
		_, err := v.Do(ctx, Action{Name: ActEdit, Target: "agents/bob.md", Rev: docstore.Revision(before), Text: text})
		if !errors.Is(err, docstore.ErrRefused) || !errors.Is(err, agents.ErrIllegalTransition) {
			t.Fatalf("illegal state by edit: got %v, want a refusal by the state machine", err)
		}
		if got := must(f.s.ReadFile("agents/bob.md")); string(got) != string(before) {
			t.Fatalf("a refused edit changed the file: %q", got)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		if _, err := v.Do(ctx, Action{Name: "launch"}); !errors.Is(err, ErrUnknownAction) {
			t.Fatalf("got %v, want ErrUnknownAction", err)
		}
	})
	// Every action, done or refused, is journaled with the person.
	var acts []journal.Event
	_, err := journal.Read(f.s.Root(), journal.Filter{Types: []string{EventAction}}, func(e journal.Event, err error) bool {
		if err == nil {
			acts = append(acts, e)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) < 10 {
		t.Fatalf("journaled actions: got %d, want every one", len(acts))
	}
	for _, e := range acts {
		if e.Agent != "pat" || e.Data["face"] != "test" {
			t.Errorf("action event without the person or face: %+v", e)
		}
		// The outcome in full, which a face may show shortened.
		if _, isErr := e.Data["error"]; !isErr && e.Data["message"] == nil {
			t.Errorf("a done action journaled without its message: %+v", e)
		}
	}
	// The answer's document change is journaled with the person too.
	var answered bool
	_, _ = journal.Read(f.s.Root(), journal.Filter{Path: agents.QuestionPath(f.question), Types: []string{journal.TypeUpdated}}, func(e journal.Event, err error) bool {
		answered = answered || e.Agent == "pat"
		return true
	})
	if !answered {
		t.Error("the answer's doc.updated event does not name the person")
	}
}

// TestNeedsHook checks the hook for kinds of waiting the view does not
// know: an extra NeedsSource and its action handler.
func TestNeedsHook(t *testing.T) {
	s := newStore(t)
	approved := ""
	v := must(Open(s, Options{Person: "pat",
		Needs: []NeedsSource{func(*Snapshot) []Need {
			return []Need{{Key: "signoff:release", Kind: "signoff", What: "release sign-off", Why: "awaiting approval", Do: "approve it",
				Actions: []Action{{Name: "sign-off", Target: "release"}}}}
		}},
		Actions: map[string]ActionFunc{"sign-off": func(_ context.Context, v *View, a Action) (string, error) {
			approved = a.Target + " by " + v.Person()
			return "approved", nil
		}},
	}))
	defer v.Close()
	snap := must(v.Snapshot())
	if _, ok := findNeed(snap.Needs, "signoff:release"); !ok {
		t.Fatalf("gate not listed: %v", needKeys(snap.Needs))
	}
	must(v.Do(context.Background(), Action{Name: "sign-off", Target: "release"}))
	if approved != "release by pat" {
		t.Errorf("got %q", approved)
	}
}

// TestNeedsDeadHolder: a liveness claim whose holder is gone (its Broker
// closed: the flock is dropped as if the process died) is a dead holder
// until reaped, and the reap action returns the item.
func TestNeedsDeadHolder(t *testing.T) {
	s := newStore(t)
	b := must(queues.Open(s, queues.Options{}))
	must(b.CreateQueue("q", queues.QueueOptions{}))
	must(b.Add("q", queues.AddOptions{Title: "work"}))
	c := must(b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "w1", Liveness: queues.HoldLock}))
	v := must(Open(s, Options{Person: "pat"}))
	defer v.Close()
	key := "dead-holder:q/" + c.ID
	if _, ok := findNeed(must(v.build()).Needs, key); ok {
		t.Fatal("a live holder is listed as dead")
	}
	b.Close()
	n, ok := findNeed(must(v.build()).Needs, key)
	if !ok {
		t.Fatalf("no dead-holder need after the holder went away: %v", needKeys(must(v.build()).Needs))
	}
	if len(n.Actions) != 1 || n.Actions[0].Name != ActReap || n.Actions[0].Target != "q" {
		t.Fatalf("actions: %+v", n.Actions)
	}
	must(v.Do(context.Background(), n.Actions[0]))
	b2 := must(queues.Open(s, queues.Options{}))
	defer b2.Close()
	if it := must(b2.Get(c.ID)); it.State != queues.Pending {
		t.Errorf("after reap: got %s, want pending", it.State)
	}
}

// TestNeedsGate: a human gate waiting for a person is listed, approving
// it passes the gate (with an approval record naming the person), and a
// rejection needs a reason and sends the item to dead/.
func TestNeedsGate(t *testing.T) {
	s := newStore(t)
	b := must(queues.Open(s, queues.Options{}))
	defer b.Close()
	must(b.CreateQueue("ship", queues.QueueOptions{}))
	one := must(b.Add("ship", queues.AddOptions{Title: "release notes", Gate: "human"}))
	two := must(b.Add("ship", queues.AddOptions{Title: "deploy"}))
	must(b.AddGate(two.ID, queues.GateOptions{Reason: "prod", Stage: "claim"}))
	v := must(Open(s, Options{Person: "pat"}))
	defer v.Close()
	snap := must(v.build())
	var gates []Need
	for _, n := range snap.Needs {
		if n.Kind == NeedGate {
			gates = append(gates, n)
		}
	}
	if len(gates) != 2 {
		t.Fatalf("gate needs: got %v", needKeys(snap.Needs))
	}
	var approve, reject Action
	for _, n := range gates {
		if strings.Contains(n.What, "release notes") {
			approve = n.Actions[0]
		} else {
			reject = n.Actions[1]
			if !strings.Contains(n.Why, "prod") {
				t.Errorf("why: %q", n.Why)
			}
		}
	}
	if approve.Name != ActApprove || reject.Name != ActReject || reject.Input == "" {
		t.Fatalf("actions: %+v %+v", approve, reject)
	}
	ctx := context.Background()
	must(v.Do(ctx, approve))
	if _, err := v.Do(ctx, reject); !errors.Is(err, ErrNoInput) {
		t.Fatalf("reject without a reason: got %v", err)
	}
	reject.Text = "not this week"
	must(v.Do(ctx, reject))
	if it := must(b.Get(two.ID)); it.State != queues.Dead {
		t.Errorf("rejected item: %s", it.State)
	}
	left := 0
	for _, n := range must(v.build()).Needs {
		if n.Kind == NeedGate {
			left++
		}
	}
	if left != 0 {
		t.Errorf("gates still waiting after the decisions: %d", left)
	}
	_ = one
}

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain — ünïcode\tand\nlines", "plain — ünïcode\tand\nlines"},
		{"a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`},
		{"\x1b[2Jx\ry\x7f", `\x1b[2Jx\x0dy\x7f`},
		{"c1 \u009b1m", `c1 \u009b1m`},
		{"bad \x9b byte", `bad \x9b byte`},
		{"ok\u202egnp.exe", `ok\u202egnp.exe`},
		{"a\u2066b\u2069c\u200fd", `a\u2066b\u2069c\u200fd`},
		{"zero\u200bwidth space stays", "zero\u200bwidth space stays"},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// An action's error names the action and its target once, even where the
// library's error already names them (a gate's "reject X: ...").
func TestActionErrorSaysOpOnce(t *testing.T) {
	f := newFixture(t)
	v := must(Open(f.s, Options{Person: "pat", Face: "test"}))
	defer v.Close()
	ctx := context.Background()
	for _, a := range []Action{
		{Name: ActReject, Target: "g-nope", Text: "no"},
		{Name: ActApprove, Target: "g-nope"},
		{Name: ActRetry, Target: "p00-nope"},
		{Name: ActRelease, Target: "p00-nope"},
		{Name: ActRespawn, Target: "alice"},
		{Name: ActRespawn, Target: "nobody"},
		{Name: ActReap, Target: "nope"},
		{Name: ActSend, Target: "@nobody", Text: "hi"},
		{Name: ActAnswer, Target: "q-nope", Text: "hi"},
		{Name: ActEdit, Target: "agents/nope.md", Rev: "x", Text: "hi"},
	} {
		_, err := v.Do(ctx, a)
		if err == nil {
			t.Errorf("%s %s: no error", a.Name, a.Target)
			continue
		}
		prefix := a.Name + " " + a.Target
		if got := strings.Count(err.Error(), prefix); got != 1 {
			t.Errorf("%s %s: %q names %q %d times, want once", a.Name, a.Target, err, prefix, got)
		}
	}
}
