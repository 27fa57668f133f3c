package queues_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// human is a Caller with no agent anywhere in its ancestry.
func human() *queues.Caller {
	return &queues.Caller{User: "ann", UID: 1000, PID: 4242, Host: "h", Env: map[string]string{},
		Ancestry: []queues.Proc{{PID: 4242, Command: "tavern approve"}, {PID: 4000, Command: "bash"}}}
}

func TestGateHumanBlocksCompletionUntilApproved(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy", Gate: "human"})
	c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}})
	if err != nil {
		t.Fatalf("a complete-stage gate must not block the claim: %v", err)
	}
	if _, err := c.Complete("shipped"); !errors.Is(err, queues.ErrGated) {
		t.Fatalf("complete at a pending gate: got %v, want ErrGated", err)
	}
	if got := stateOf(t, b, it.ID); got != queues.Claimed {
		t.Fatalf("after a refused completion the item is %s, want claimed", got)
	}
	// Add wrote the gate's document, so the cheap listing has it too.
	for name, list := range map[string]func() ([]*queues.Gate, []error){"PendingGates": b.PendingGates, "GateDocs": func() ([]*queues.Gate, []error) { return b.GateDocs(true) }} {
		if pend, _ := list(); len(pend) != 1 || pend[0].ID != it.ID || pend[0].Implicit {
			t.Fatalf("%s = %+v, want the gate of %s, with its document", name, pend, it.ID)
		}
	}
	g, err := b.Approve(it.ID, queues.Decision{Reason: "looks good", Caller: human()})
	if err != nil {
		t.Fatal(err)
	}
	if g.State != queues.GateStatePassed || g.DecidedBy != "ann" || g.Approval == "" {
		t.Fatalf("approved gate: %+v", g)
	}
	rec, err := s.Get(queues.ApprovalPath(g.Approval))
	if err != nil {
		t.Fatalf("approval record: %v", err)
	}
	if got, want := rec.String("decision"), "approved"; got != want {
		t.Errorf("record decision %q, want %q", got, want)
	}
	if anc := rec.Strings("ancestry"); len(anc) != 2 || !strings.Contains(anc[1], "bash") {
		t.Errorf("record ancestry %q", anc)
	}
	if _, err := c.Complete("shipped"); err != nil {
		t.Fatalf("complete after approval: %v", err)
	}
	// The same decision again is a no-op; the other one a conflict.
	again, err := b.Approve(it.ID, queues.Decision{By: "bob", Caller: human()})
	if err != nil || !again.AlreadyDecided || again.DecidedBy != "ann" || again.Approval != g.Approval {
		t.Fatalf("a second approval: %+v, %v; want the first one, already decided", again, err)
	}
	if _, err := b.Reject(it.ID, queues.Decision{Reason: "no", Caller: human()}); !errors.Is(err, queues.ErrDecided) {
		t.Fatalf("a rejection of an approved gate: %v, want ErrDecided", err)
	}
	if pend, _ := b.PendingGates(); len(pend) != 0 {
		t.Fatalf("pending gates after approval: %+v", pend)
	}
}

// A gate: human typed into an item by hand has no document: Gates finds
// it (implied) and a decision writes it; GateDocs, which reads no items,
// does not.
func TestGateTypedByHandIsImplied(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy"})
	rel := queues.ItemPath("q", queues.Pending, it.ID)
	data, err := os.ReadFile(filepath.Join(s.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "attempts: 0\n", "attempts: 0\ngate: human\n", 1)
	if err := os.WriteFile(filepath.Join(s.Root(), rel), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	pend, _ := b.PendingGates()
	if len(pend) != 1 || pend[0].ID != it.ID || !pend[0].Implicit {
		t.Fatalf("pending gates = %+v, want the implied gate of %s", pend, it.ID)
	}
	if docs, _ := b.GateDocs(true); len(docs) != 0 {
		t.Fatalf("GateDocs = %+v, want none before the gate has a document", docs)
	}
	if _, err := b.Approve(it.ID, queues.Decision{Reason: "ok", Caller: human()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), queues.GatePath(it.ID))); err != nil {
		t.Fatalf("deciding an implied gate wrote no document: %v", err)
	}
}

func TestGateAgentsCannotDecide(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "x", Gate: "human"})
	gateDoc, err := os.ReadFile(filepath.Join(s.Root(), queues.GatePath(it.ID)))
	if err != nil {
		t.Fatalf("Add wrote no gate document: %v", err)
	}
	cases := []struct {
		name   string
		caller *queues.Caller
	}{
		{"TAVERN_AGENT set", &queues.Caller{Env: map[string]string{"TAVERN_AGENT": "drone-1"}}},
		{"TAVERN_INSTANCE set", &queues.Caller{Env: map[string]string{"TAVERN_INSTANCE": "i-1"}}},
		{"parent is an agent", &queues.Caller{Env: map[string]string{}, Ancestry: []queues.Proc{{PID: 9, Command: "tavern approve"}, {PID: 8, Command: "sh", Agent: "drone-1"}}}},
		{"inside a spawn wrapper", &queues.Caller{Env: map[string]string{}, Ancestry: []queues.Proc{{PID: 9, Command: "tavern approve"}, {PID: 8, Command: "sh"}, {PID: 7, Command: "tavern spawn --name d", Wrapper: true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.Approve(it.ID, queues.Decision{Caller: tc.caller}); !errors.Is(err, queues.ErrNotHuman) {
				t.Fatalf("approve: got %v, want ErrNotHuman", err)
			}
			if _, err := b.Reject(it.ID, queues.Decision{Reason: "no", Caller: tc.caller}); !errors.Is(err, queues.ErrNotHuman) {
				t.Fatalf("reject: got %v, want ErrNotHuman", err)
			}
		})
	}
	if got, err := os.ReadFile(filepath.Join(s.Root(), queues.GatePath(it.ID))); err != nil || string(got) != string(gateDoc) {
		t.Fatalf("a refused decision changed the gate document (%v):\n%s", err, got)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.Root(), "approvals")); len(ents) != 0 {
		t.Fatalf("a refused decision wrote %d approval records", len(ents))
	}
}

func TestGateHandEditedApprovalIsIgnored(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "x"})
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "review", Stage: queues.StageClaim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); !isEmpty(err) || !strings.Contains(err.Error(), "1 waiting at gates") {
		t.Fatalf("take at a claim-stage gate: %v", err)
	}
	// A hand edit: status approved, no record (and then a record id that
	// does not exist, and a record of another decision).
	path := filepath.Join(s.Root(), g.Path)
	data, _ := os.ReadFile(path)
	for _, forged := range []string{"status: approved\n", "status: approved\napproval: 0000-nope\n"} {
		os.WriteFile(path, []byte(strings.Replace(string(data), "status: pending\n", forged, 1)), 0o644)
		if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); !isEmpty(err) {
			t.Fatalf("forged %q: the engine claimed the item (%v)", forged, err)
		}
		d, _ := s.Get(g.Path)
		if err := queues.CheckGate(s, d); !errors.Is(err, queues.ErrForged) || !strings.Contains(err.Error(), g.Path+":") {
			t.Fatalf("forged %q: CheckGate = %v, want ErrForged with the path", forged, err)
		}
	}
	// A real approval still works over the forged file and passes check.
	os.WriteFile(path, data, 0o644)
	if _, err := b.Approve(g.ID, queues.Decision{Caller: human()}); err != nil {
		t.Fatal(err)
	}
	d, _ := s.Get(g.Path)
	if err := queues.CheckGate(s, d); err != nil {
		t.Fatalf("check of a real approval: %v", err)
	}
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); err != nil {
		t.Fatalf("take after approval: %v", err)
	}
}

func TestGateRejectDeadLettersAndRetryReopens(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "x", Gate: "human"})
	if _, err := b.Reject(it.ID, queues.Decision{Caller: human()}); !errors.Is(err, queues.ErrBadOption) {
		t.Fatalf("reject without a reason: %v", err)
	}
	if _, err := b.Reject(it.ID, queues.Decision{Reason: "wrong approach", Caller: human()}); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Get(it.ID)
	if got.State != queues.Dead || !strings.Contains(got.DeadReason, "wrong approach") {
		t.Fatalf("rejected item: state %s, dead_reason %q", got.State, got.DeadReason)
	}
	if _, err := b.Retry("q", it.ID); err != nil {
		t.Fatal(err)
	}
	gs := b.ItemGates(mustGet(t, b, it.ID))
	if len(gs) != 1 || gs[0].State != queues.GateStatePending || gs[0].Status != queues.GatePending {
		t.Fatalf("after retry the gate is %+v, want pending again", gs)
	}
}

func TestGateTimer(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "later"})
	if _, err := b.AddGate(it.ID, queues.GateOptions{Until: clk.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var ee *queues.EmptyError
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); !errors.As(err, &ee) || ee.Diag.Wake.IsZero() {
		t.Fatalf("take before the timer: %v (want empty with a wake time)", err)
	}
	if _, err := b.Approve(it.ID, queues.Decision{Caller: human()}); err == nil {
		t.Fatal("a timer gate was approved by hand")
	}
	clk.Advance(2 * time.Hour)
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); err != nil {
		t.Fatalf("take after the timer: %v", err)
	}
}

func TestResolveAndAnnotate(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	bb := mustAdd(t, b, "q", queues.AddOptions{Title: "b"})
	c := mustAdd(t, b, "q", queues.AddOptions{Title: "c"})
	g := mustAdd(t, b, "q", queues.AddOptions{Title: "gated", Gate: "human"})
	if got, err := b.Resolve(a.ID, queues.ResolveOptions{Reason: "done by hand", By: "plans/p.md", External: true}); err != nil || got.State != queues.Done {
		t.Fatalf("resolve: %v %+v", err, got)
	}
	if got, err := b.Resolve(bb.ID, queues.ResolveOptions{Cancel: true, Reason: "removed"}); err != nil || got.State != queues.Dead || !got.Cancelled {
		t.Fatalf("cancel: %v %+v", err, got)
	}
	if _, err := b.Resolve(g.ID, queues.ResolveOptions{}); !errors.Is(err, queues.ErrGated) {
		t.Fatalf("resolving a gated item by hand: %v, want ErrGated", err)
	}
	cl, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resolve(cl.ID, queues.ResolveOptions{}); !errors.Is(err, queues.ErrState) {
		t.Fatalf("resolve of a claimed item: %v, want ErrState", err)
	}
	if cl.ID != c.ID {
		t.Fatalf("took %s, want %s", cl.ID, c.ID)
	}
	if _, err := b.Annotate(c.ID, []docstore.Field{{Key: "claimed_by", Value: "me"}}); !errors.Is(err, queues.ErrBadOption) {
		t.Fatalf("annotate an engine field: %v", err)
	}
	got, err := b.Annotate(cl.ID, []docstore.Field{{Key: "worktree", Value: "/tmp/w"}, {Key: "branch", Value: "tavern/c"}})
	if err != nil || got.Worktree != "/tmp/w" || got.Branch != "tavern/c" || got.State != queues.Claimed {
		t.Fatalf("annotate: %v %+v", err, got)
	}
	// The annotated claim still completes with its attempt.
	if _, err := cl.Complete("ok"); err != nil {
		t.Fatalf("complete after annotate: %v", err)
	}
}

// RemoveDependency: the item stops waiting for that dependency (every
// copy of it), keeps the others, loses the field with the last one, and
// is claimable once what it still waits for is done; a claimed item is
// its holder's (ErrState).
func TestRemoveDependency(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	cancelled := mustAdd(t, b, "q", queues.AddOptions{Title: "won't do"})
	other := mustAdd(t, b, "q", queues.AddOptions{Title: "other"})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "waits", DependsOn: []string{cancelled.ID, other.ID}})
	if _, err := b.Resolve(cancelled.ID, queues.ResolveOptions{Cancel: true}); err != nil {
		t.Fatal(err)
	}
	got, err := b.RemoveDependency(it.ID, cancelled.ID)
	if err != nil || !slices.Equal(got.DependsOn, []string{other.ID}) {
		t.Fatalf("remove: %v, depends_on %v, want [%s]", err, got.DependsOn, other.ID)
	}
	if got, err := b.RemoveDependency(it.ID, cancelled.ID); err != nil || len(got.DependsOn) != 1 {
		t.Fatalf("removing it again: %v %v, want a no-op", err, got.DependsOn)
	}
	if got, err := b.RemoveDependency(it.ID, other.ID); err != nil || len(got.DependsOn) != 0 || got.Doc.Has("depends_on") {
		t.Fatalf("removing the last: %v, depends_on %v (field kept: %v)", err, got.DependsOn, got.Doc.Has("depends_on"))
	}
	cl := mustTake(t, b, take1("q")) // other, then waits: nothing holds it back
	if cl.ID != other.ID {
		t.Fatalf("took %s, want %s", cl.ID, other.ID)
	}
	if cl := mustTake(t, b, take1("q")); cl.ID != it.ID {
		t.Fatalf("took %s, want %s", cl.ID, it.ID)
	}
	if _, err := b.RemoveDependency(it.ID, other.ID); !errors.Is(err, queues.ErrState) {
		t.Fatalf("remove from a claimed item: %v, want ErrState", err)
	}
}

func mustGet(tb testing.TB, b *queues.Broker, id string) *queues.Item {
	tb.Helper()
	it, err := b.Get(id)
	if err != nil {
		tb.Fatal(err)
	}
	return it
}

func stateOf(tb testing.TB, b *queues.Broker, id string) string {
	return mustGet(tb, b, id).State
}

func TestCurrentCallerSeesAgentParent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	c := queues.CurrentCaller()
	if len(c.Ancestry) == 0 || c.Ancestry[0].PID != os.Getpid() {
		t.Fatalf("ancestry %+v does not start with this process", c.Ancestry)
	}
	if os.Getenv("TAVERN_AGENT") == "" && c.Agent() != "" && !strings.Contains(c.Agent(), "inside") {
		t.Fatalf("the test process counts as an agent: %s", c.Agent())
	}
}

// TestAddGateTwice: the same gate added twice is the one the item has
// (Existing, nothing written); a different until is a new gate.
func TestAddGateTwice(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "later"})
	until := clk.Now().Add(time.Hour)
	g1, err := b.AddGate(it.ID, queues.GateOptions{Until: until})
	if err != nil {
		t.Fatal(err)
	}
	g2, err := b.AddGate(it.ID, queues.GateOptions{Until: until})
	if err != nil {
		t.Fatal(err)
	}
	if g2.ID != g1.ID || !g2.Existing || g1.Existing {
		t.Fatalf("second add: %s existing=%v; want %s existing (first existing=%v)", g2.ID, g2.Existing, g1.ID, g1.Existing)
	}
	if got := len(mustGet(t, b, it.ID).Gates); got != 1 {
		t.Fatalf("item has %d gates, want 1", got)
	}
	g3, err := b.AddGate(it.ID, queues.GateOptions{Until: until.Add(time.Minute)})
	if err != nil || g3.ID == g1.ID || g3.Existing {
		t.Fatalf("a later until: %+v, %v; want a new gate", g3, err)
	}
}

// TestDeleteItemTakesItsGates: removing an item (the store's Delete, as
// `tavern rm` does) moves its gates to the trash with it, so no gate is
// left naming an item that is gone; restoring the item brings them back.
// A crash leftover's removal, while another copy lives, keeps them.
func TestDeleteItemTakesItsGates(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy"})
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "review"})
	if err != nil {
		t.Fatal(err)
	}
	rel := queues.ItemPath("q", queues.Pending, it.ID)
	got, err := s.DeleteAll(rel)
	if want := []string{rel, g.Path}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("DeleteAll(%s) = %v, %v; want %v", rel, got, err, want)
	}
	if _, err := s.Stat(g.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the gate of a removed item: Stat = %v, want not exist", err)
	}
	got, err = s.RestoreTrashAll(rel)
	if want := []string{rel, g.Path}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("RestoreTrashAll(%s) = %v, %v; want %v", rel, got, err, want)
	}

	// A second copy in claimed/ (a crash between the writes of a move):
	// removing it leaves the gate to the pending copy.
	data, err := os.ReadFile(filepath.Join(s.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	dup := queues.ItemPath("q", queues.Claimed, it.ID)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(s.Root(), dup)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), dup), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := s.DeleteAll(dup); err != nil || len(got) != 1 {
		t.Fatalf("DeleteAll of a leftover copy = %v, %v; want it alone", got, err)
	}
	if _, err := s.Stat(g.Path); err != nil {
		t.Fatalf("the gate of the item's live copy: %v", err)
	}
}

// TestAddGateBlankReason: a person's gate shows its reason to the person
// who decides; a blank one asks nothing and is refused, nothing written.
func TestAddGateBlankReason(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy"})
	if _, err := b.AddGate(it.ID, queues.GateOptions{Reason: " \n "}); !errors.Is(err, queues.ErrBadOption) {
		t.Fatalf("AddGate with a blank reason: got %v, want ErrBadOption", err)
	}
	if got, _ := b.GateDocs(false); len(got) != 0 {
		t.Fatalf("gates after a refused AddGate: %+v, want none", got)
	}
}

// MarkWorkDone survives the ends of a claim that leave the work done (a
// release: the wrapper interrupted at the gate) and goes with the ends
// that say it must be done again: a failure (a failed merge), a
// rejection (dead), the completion.
func TestWorkDoneKeptByReleaseOnly(t *testing.T) {
	s := newStore(t, true)
	clk := &clock{}
	b := newBroker(t, s, clk)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 5})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy", Gate: "human"})
	markAndTake := func() *queues.Claim {
		t.Helper()
		c := mustTake(t, b, take1("q"))
		if _, err := c.MarkWorkDone("built"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	workDone := func() (time.Time, string) {
		t.Helper()
		got, err := b.Get(it.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.WorkDone, got.WorkResult
	}
	c := markAndTake()
	if _, err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if when, res := workDone(); when.IsZero() || res != "built" {
		t.Fatalf("after a release: work_done %v, work_result %q; want both kept", when, res)
	}
	again := mustTake(t, b, take1("q"))
	if again.WorkDone.IsZero() {
		t.Fatal("the next claim does not see the work done")
	}
	if _, err := again.Fail("merge conflict"); err != nil {
		t.Fatal(err)
	}
	if when, res := workDone(); !when.IsZero() || res != "" {
		t.Fatalf("after a failure: work_done %v, work_result %q; want none", when, res)
	}
	clk.Advance(time.Hour) // past the backoff
	markAndTake()
	if _, err := b.Reject(it.ID, queues.Decision{Reason: "no", Caller: human()}); err != nil {
		t.Fatal(err)
	}
	if when, res := workDone(); !when.IsZero() || res != "" {
		t.Fatalf("after a rejection: work_done %v, work_result %q; want none", when, res)
	}
	if _, err := c.MarkWorkDone("late"); !errors.Is(err, queues.ErrStale) {
		t.Fatalf("MarkWorkDone of an ended claim: %v, want ErrStale", err)
	}
}
