package agents

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher/journal"
)

func TestLegalTable(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{Idle, Working, true},
		{Idle, Done, false},
		{Idle, Verifying, false},
		{Working, Waiting, true},
		{Waiting, Working, true},
		{Working, Verifying, true},
		{Verifying, Working, true},
		{Verifying, Done, true},
		{Verifying, Idle, false},
		{Done, Idle, true},
		{Done, Working, false},
		{Failed, Idle, true},
		{Failed, Working, false},
		{Waiting, Verifying, false},
		{Working, Failed, true},
		{Idle, Idle, true},
		{"bogus", Idle, false},
	}
	for _, tt := range tests {
		if got := Legal(tt.from, tt.to); got != tt.want {
			t.Errorf("Legal(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	// Every state can fail except failed itself (which only respawns).
	for from := range Transitions {
		if from != Failed && !Legal(from, Failed) {
			t.Errorf("%s cannot go to failed", from)
		}
	}
}

func TestTransitionsJournaledAndIllegalRefused(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "alice", Role: "coder", Assignment: "write the parser"})
	for _, to := range []string{Working, Waiting, Working, Verifying, Working, Done} {
		if _, err := m.Transition("alice", to, TransitionOptions{By: "test"}); err != nil {
			t.Fatalf("-> %s: %v", to, err)
		}
	}
	_, err := m.Transition("alice", Working, TransitionOptions{})
	wantErr(t, err, ErrIllegalTransition)
	var te *TransitionError
	if !errors.As(err, &te) || te.From != Done || te.To != Working {
		t.Fatalf("err = %#v, want TransitionError done->working", err)
	}
	a, _ := m.GetAgent("alice")
	if a.State != Done || a.AppliedState != Done {
		t.Fatalf("state = %s/%s, want done/done", a.State, a.AppliedState)
	}
	evs := events(t, m, "agent.state")
	if got, want := len(evs), 6; got != want {
		t.Fatalf("journaled %d transitions, want %d", got, want)
	}
	if evs[5].Data["from"] != Working || evs[5].Data["to"] != Done {
		t.Errorf("last event = %v", evs[5].Data)
	}
	// Same state: nothing written, nothing journaled.
	if _, err := m.Transition("alice", Done, TransitionOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := len(events(t, m, "agent.state")); got != 6 {
		t.Errorf("no-op transition journaled: %d events", got)
	}
	// The body survived every write.
	d, _ := m.GetAgentDoc("alice")
	if s, _ := Section(d.Body(), SectionAssignment); s != "write the parser" {
		t.Errorf("assignment = %q", s)
	}
}

func TestDoneRefusedWithUnpassedCommitments(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "bob"})
	if _, err := m.AddCommitment("bob", "tests pass", "true", 0); err != nil {
		t.Fatal(err)
	}
	m.Transition("bob", Working, TransitionOptions{})
	_, err := m.Transition("bob", Done, TransitionOptions{By: "bob"})
	wantErr(t, err, ErrUnverified)
	if _, err := m.Transition("bob", Verifying, TransitionOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A person edits state by hand: a legal edit is accepted (and journaled as
// by hand), an illegal one is reported and not acted on.
func TestHandEdits(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "carol"})
	m.Transition("carol", Working, TransitionOptions{})
	m.Transition("carol", Done, TransitionOptions{})
	handSet(t, m, "carol", "working") // done -> working is illegal

	a, _ := m.GetAgent("carol")
	if !a.IllegalEdit() || a.Effective() != Done {
		t.Fatalf("illegal edit not detected: state %s applied %s effective %s", a.State, a.AppliedState, a.Effective())
	}
	probs, _, err := m.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Agent != "carol" || !errors.Is(probs[0], ErrIllegalEdit) {
		t.Fatalf("audit = %v", probs)
	}
	d, _ := m.GetAgentDoc("carol")
	wantErr(t, CheckAgentDoc(d), ErrIllegalEdit)
	// The engine refuses to act on it.
	_, err = m.Transition("carol", Idle, TransitionOptions{})
	wantErr(t, err, ErrIllegalEdit)
	// A person can force a state; it is journaled as forced.
	if _, err := m.Transition("carol", Idle, TransitionOptions{Force: true, By: "user"}); err != nil {
		t.Fatal(err)
	}
	evs := events(t, m, "agent.state")
	if last := evs[len(evs)-1]; last.Data["forced"] != true || last.Data["to"] != Idle {
		t.Errorf("forced event = %v", last.Data)
	}

	// A legal hand edit (idle -> working) is applied by the audit.
	handSet(t, m, "carol", "working")
	if probs, _, err := m.Audit(); err != nil || len(probs) != 0 {
		t.Fatalf("audit of a legal edit: %v %v", probs, err)
	}
	a, _ = m.GetAgent("carol")
	if a.AppliedState != Working {
		t.Errorf("applied_state = %s, want working", a.AppliedState)
	}
	evs = events(t, m, "agent.state")
	if last := evs[len(evs)-1]; last.Data["by"] != "hand" || last.Data["from"] != Idle || last.Data["to"] != Working {
		t.Errorf("hand event = %v", last.Data)
	}
}

// handSet rewrites the state line of an agent file the way an editor would.
func handSet(tb testing.TB, m *Manager, name, state string) {
	tb.Helper()
	p, _ := m.Store.Abs(AgentPath(name))
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "state: ") {
			l = "state: " + state
		}
		out = append(out, l)
	}
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestThemedNamesUniqueUnderConcurrency(t *testing.T) {
	m := newManager(t)
	const n = 64
	var wg sync.WaitGroup
	names := make([]string, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a, err := m.CreateAgent(AgentSpec{})
			if err == nil {
				names[i] = a.Name
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, nm := range names {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[nm] {
			t.Fatalf("name %s given twice", nm)
		}
		seen[nm] = true
		if err := ValidAgentName(nm); err != nil {
			t.Errorf("generated name: %v", err)
		}
	}
	agents, errs2 := m.ListAgents()
	if len(agents) != n || len(errs2) != 0 {
		t.Fatalf("%d agents on disk (%v), want %d", len(agents), errs2, n)
	}
}

func TestAgentNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"alice", true}, {"drone-7", true}, {"a.b_c", true}, {"Alice", false}, {"-x", false}, {"@user", false}, {"a/b", false}, {"", false}, {strings.Repeat("a", 65), false}} {
		err := ValidAgentName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidAgentName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	m := newManager(t)
	_, err := m.CreateAgent(AgentSpec{Name: "Bad Name"})
	wantErr(t, err, ErrBadAgentName)
	mustAgent(t, m, AgentSpec{Name: "dup"})
	_, err = m.CreateAgent(AgentSpec{Name: "dup"})
	wantErr(t, err, docstore.ErrExist)
}

func TestConstitutionRecordedAndChangeRefused(t *testing.T) {
	m := newManager(t)
	sha1, err := m.WriteConstitution("reviewer", "Be kind. Be precise.", ConstitutionOptions{Description: "reviews code"})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, m, AgentSpec{Name: "rev", Role: "reviewer"})
	if a.Constitution != sha1 || len(sha1) != 64 {
		t.Fatalf("recorded %q, want %q", a.Constitution, sha1)
	}
	if _, _, err := m.checkConstitution(a, false); err != nil {
		t.Fatalf("unchanged constitution refused: %v", err)
	}
	sha2, err := m.WriteConstitution("reviewer", "Be kind. Be precise. Approve everything.", ConstitutionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sha2 == sha1 {
		t.Fatal("sha did not change")
	}
	_, _, err = m.checkConstitution(a, false)
	wantErr(t, err, ErrConstitutionChanged)
	var ce *ConstitutionError
	if !errors.As(err, &ce) || ce.Recorded != sha1 || ce.Current != sha2 {
		t.Fatalf("err = %v", err)
	}
	got, accepted, err := m.checkConstitution(a, true)
	if err != nil || !accepted || got != sha2 {
		t.Fatalf("accept = %s %v %v", got, accepted, err)
	}
}

func TestNotesAppend(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "dee"})
	for i := 1; i <= 3; i++ {
		if _, err := m.AddNote("dee", fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := m.GetAgentDoc("dee")
	got, _ := Section(d.Body(), SectionNotes)
	if want := "note 1\n\nnote 2\n\nnote 3"; got != want {
		t.Errorf("notes = %q, want %q", got, want)
	}
	if s, ok := Section(d.Body(), SectionMessages); !ok || s != "" {
		t.Errorf("recent messages section = %q %v", s, ok)
	}
}

// Every write through the store obeys the state machine, not only
// Transition: a raw field write (what `tavern set` does) of an illegal
// state is refused and names what is allowed.
func TestStateRuleOnRawWrites(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "raw"})
	set := func(opt docstore.UpdateOptions, kv ...docstore.Field) error {
		_, err := m.Store.UpdateWith(AgentPath("raw"), opt, func(d *docstore.Doc) error { return d.SetMany(kv) })
		return err
	}
	err := set(docstore.UpdateOptions{}, docstore.Field{Key: "state", Value: Done})
	var te *TransitionError
	if !errors.As(err, &te) || !errors.Is(err, docstore.ErrRefused) || te.From != Idle || te.To != Done ||
		!strings.Contains(err.Error(), "allowed from idle: working, failed") {
		t.Fatalf("idle -> done by a raw write: %v", err)
	}
	// applied_state is the engine's record: it only follows state.
	err = set(docstore.UpdateOptions{}, docstore.Field{Key: "state", Value: Working}, docstore.Field{Key: "applied_state", Value: Done})
	wantErr(t, err, ErrIllegalTransition)
	// Legal: a transition as Transition makes it. applied_state follows,
	// so the next write is checked from the state just written and the
	// document stays valid; the journal of the store's mutations gets the
	// agent.state events.
	journal.RecordMutations(m.Store, m.Journal, "", func(err error) { t.Error(err) })
	for _, to := range []string{Working, Verifying, Working} {
		if err := set(docstore.UpdateOptions{}, docstore.Field{Key: "state", Value: to}); err != nil {
			t.Fatal(err)
		}
		a, _ := m.GetAgent("raw")
		if got, want := a.AppliedState, to; got != want {
			t.Fatalf("applied_state after a write of state %s = %q, want %q", to, got, want)
		}
		if p := CheckAgent(a); p != nil {
			t.Fatal(p)
		}
	}
	var got []string
	for _, e := range events(t, m, "agent.state") {
		got = append(got, fmt.Sprint(e.Data["from"], "->", e.Data["to"], " by ", e.Data["by"]))
	}
	if want := []string{"idle->working by user", "working->verifying by user", "verifying->working by user"}; !slices.Equal(got, want) {
		t.Errorf("agent.state events = %q, want %q", got, want)
	}
	// Done needs every commitment passed, also by a raw write.
	if _, err := m.AddCommitment("raw", "x", "true", 0); err != nil {
		t.Fatal(err)
	}
	wantErr(t, set(docstore.UpdateOptions{}, docstore.Field{Key: "state", Value: Done}), ErrUnverified)
	// Unrelated fields of an agent are not the state machine's business.
	if err := set(docstore.UpdateOptions{}, docstore.Field{Key: "role", Value: "dev"}); err != nil {
		t.Fatal(err)
	}
	// Force overrides (the escape hatch of `agent state --force`).
	if err := set(docstore.UpdateOptions{Force: true}, docstore.Field{Key: "state", Value: Done}); err != nil {
		t.Fatal(err)
	}
	if a, _ := m.GetAgent("raw"); a.State != Done {
		t.Fatalf("state %s", a.State)
	}
}

// Agent files that do not parse are reported one by one (path:line:col)
// and skipped: the audit, the reaper and the doctor do the rest and
// return no error for them.
func TestBadAgentFilesSkipped(t *testing.T) {
	m := newManager(t)
	for _, n := range []string{"ann", "ben", "cat"} {
		mustAgent(t, m, AgentSpec{Name: n})
	}
	handSet(t, m, "ann", "[idle")
	handSet(t, m, "ben", "{idle")
	handSet(t, m, "cat", "working") // a legal hand edit, for the audit to accept

	probs, invalid, err := m.Audit()
	if err != nil || len(probs) != 0 {
		t.Fatalf("audit: problems %v, err %v", probs, err)
	}
	wantBad := func(what string, invalid []error) {
		t.Helper()
		var got []string
		for _, e := range invalid {
			p, line, col := docstore.Position(e)
			got = append(got, fmt.Sprintf("%s:%d:%d", p, line, col))
		}
		if want := []string{"agents/ann.md:5:1", "agents/ben.md:5:1"}; !slices.Equal(got, want) {
			t.Errorf("%s: invalid = %q, want %q", what, got, want)
		}
	}
	wantBad("audit", invalid)
	if a, _ := m.GetAgent("cat"); a.AppliedState != Working {
		t.Errorf("cat's legal hand edit not accepted: applied_state %s", a.AppliedState)
	}
	_, invalid, err = m.ReapAgents()
	if err != nil {
		t.Fatal(err)
	}
	wantBad("ReapAgents", invalid)
	fs, err := m.agentFindings()
	if err != nil {
		t.Fatal(err)
	}
	var bad []error
	for _, f := range fs {
		if f.Kind == docstore.FindingInvalid && f.Repair == nil && strings.HasPrefix(f.Detail, "5:1: ") {
			bad = append(bad, &docstore.ParseError{Path: f.Path, Line: 5, Col: 1})
		}
	}
	wantBad("doctor", bad)
}

// A write that changes an agent's role to a typo of a role that has a
// constitution is refused, as CreateAgent refuses it for a new agent, on
// every path: Store.Update, EditAgent. The role meant and a role an
// agent already has are written.
func TestRoleChangeNearRole(t *testing.T) {
	m := newManager(t)
	if _, err := m.WriteConstitution("worker", "Work.", ConstitutionOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateAgent(AgentSpec{Name: "alice", Role: "worker"}); err != nil {
		t.Fatal(err)
	}
	setRole := func(role string) func(*docstore.Doc) error {
		return func(d *docstore.Doc) error { return d.Set("role", role) }
	}
	for name, write := range map[string]func() error{
		"Store.Update": func() error { _, err := m.Store.Update(AgentPath("alice"), setRole("wroker")); return err },
		"EditAgent":    func() error { _, err := m.EditAgent("alice", setRole("wroker")); return err },
	} {
		err := write()
		var re *RoleError
		if !errors.As(err, &re) || !errors.Is(err, ErrNearRole) || re.Role != "wroker" || len(re.Near) != 1 || re.Near[0] != "worker" {
			t.Errorf("%s: got %v, want a *RoleError near worker", name, err)
		}
	}
	if a, _ := m.GetAgent("alice"); a.Role != "worker" {
		t.Errorf("role after refused writes: %q", a.Role)
	}
	if _, err := m.CreateAgent(AgentSpec{Name: "bob", Role: "builder"}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"worker", "builder"} {
		if _, err := m.EditAgent("alice", setRole(role)); err != nil {
			t.Errorf("role %s: %v", role, err)
		}
	}
}

// From fences a move even when the agent is already in the target state:
// a respawn (failed -> idle) of an agent that is idle did nothing, and
// must not say it did.
func TestTransitionFromAlreadyThere(t *testing.T) {
	m := newManager(t)
	if _, err := m.CreateAgent(AgentSpec{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Transition("alice", Idle, TransitionOptions{By: "pat", From: Failed})
	if !errors.Is(err, ErrStateChanged) {
		t.Fatalf("got %v, want ErrStateChanged", err)
	}
	// Without From, staying in the same state is still a quiet no-op.
	if _, err := m.Transition("alice", Idle, TransitionOptions{By: "pat"}); err != nil {
		t.Fatalf("no-op transition: %v", err)
	}
}
