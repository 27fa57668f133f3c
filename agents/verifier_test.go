package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func TestVerifyPassFailTimeout(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "ann"})
	// The assertion runs in the project directory (parent of .tavern).
	if err := os.WriteFile(filepath.Join(m.ProjectDir(), "marker"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	pass, _ := m.AddCommitment("ann", "marker exists", "test -f marker && echo found", 0)
	fail, _ := m.AddCommitment("ann", "impossible", "echo boom >&2; exit 3", 0)
	// The shell's child keeps sleeping after the shell is killed unless
	// the whole group goes: the timeout must not wait for it.
	slow, _ := m.AddCommitment("ann", "slow", "sleep 30 & sleep 30; echo never", 300*time.Millisecond)

	start := time.Now()
	res, err := m.Verify(context.Background(), "ann", "verifier")
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("verify took %s: the timed-out group was not killed", el)
	}
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	byID := map[string]Result{}
	for _, r := range res {
		byID[r.Commitment.ID] = r
	}
	if r := byID[pass.ID]; !r.Passed || r.ExitCode != 0 || r.Output != "found" {
		t.Errorf("pass: %+v", r)
	}
	if r := byID[fail.ID]; r.Passed || r.ExitCode != 3 || !strings.Contains(r.Output, "boom") {
		t.Errorf("fail: %+v", r)
	}
	if r := byID[slow.ID]; r.Passed || !r.TimedOut || !strings.Contains(r.Output, "timed out") {
		t.Errorf("timeout: %+v", r)
	}
	// Written into the commitment documents.
	cs, _ := m.Commitments("ann")
	got := map[string]string{}
	for _, c := range cs {
		got[c.ID] = c.Status
		if c.VerifiedBy != "verifier" || c.VerifiedAt.IsZero() || c.ExitCode == nil {
			t.Errorf("%s: verified_by %q at %v exit %v", c.ID, c.VerifiedBy, c.VerifiedAt, c.ExitCode)
		}
	}
	if got[pass.ID] != StatusPassed || got[fail.ID] != StatusFailed || got[slow.ID] != StatusFailed {
		t.Errorf("statuses = %v", got)
	}
	if n := len(events(t, m, "commitment.verified")); n != 3 {
		t.Errorf("%d commitment.verified events, want 3", n)
	}
}

func TestSelfVerificationRefused(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "sly"})
	c, _ := m.AddCommitment("sly", "all good", "false", 0)
	_, err := m.Verify(context.Background(), "sly", "sly")
	wantErr(t, err, ErrSelfVerify)
	// Writes through the store obey the commitment rule for the writing
	// agent: sly may not write its own result or assertion, but may edit
	// the description; a person and another agent may write the status.
	write := func(actor, key string, v any) error {
		InstallRules(m.Store, actor)
		_, err := m.Store.Update(c.Path, func(d *docstore.Doc) error { return d.Set(key, v) })
		return err
	}
	tests := []struct {
		actor, key string
		v          any
		want       error
	}{
		{"sly", "status", StatusPassed, ErrSelfVerify},
		{"sly", "exit_code", 0, ErrSelfVerify},
		{"sly", "assertion", "true", ErrOwnAssertion},
		{"sly", "description", "still good", nil},
		{"", "status", StatusFailed, nil},
		{"boss", "status", StatusPending, nil},
	}
	for _, tt := range tests {
		err := write(tt.actor, tt.key, tt.v)
		if tt.want == nil && err != nil || tt.want != nil && (!errors.Is(err, tt.want) || !errors.Is(err, docstore.ErrRefused)) {
			t.Errorf("%q writes %s: err = %v, want %v", tt.actor, tt.key, err, tt.want)
		}
	}
	cs, _ := m.Commitments("sly")
	if cs[0].Status != StatusPending || cs[0].Assertion != "false" || cs[0].Description != "still good" {
		t.Errorf("commitment = %+v", cs[0])
	}
	// Nor remove it (the way to done past a failing one); a person or
	// another agent may.
	InstallRules(m.Store, "sly")
	wantErr(t, m.Store.Delete(c.Path), ErrOwnCommitment)
	if _, err := m.Store.Get(c.Path); err != nil {
		t.Fatalf("after a refused delete: %v", err)
	}
	InstallRules(m.Store, "boss")
	if err := m.Store.Delete(c.Path); err != nil {
		t.Fatalf("another agent removes sly's commitment: %v", err)
	}
	// Nor may sly make a commitment that already carries a result.
	InstallRules(m.Store, "sly")
	d, _ := docstore.NewDoc(schema.Commitment, docstore.Template{Fields: []docstore.Field{
		{Key: "agent", Value: "sly"}, {Key: "description", Value: "x"}, {Key: "assertion", Value: "true"}, {Key: "status", Value: StatusPassed}}})
	wantErr(t, m.Store.Create("commitments/sly/"+docstore.NewID()+".md", d), ErrSelfVerify)
}

// An assertion changed after the commitment was made is never run, and
// check reports it.
func TestTamperedAssertionNotRun(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "tam"})
	ok, _ := m.AddCommitment("tam", "kept", "true", 0)
	bad, _ := m.AddCommitment("tam", "changed", "test -f never", 0)
	handID := docstore.NewID()
	hand, _ := docstore.NewDoc(schema.Commitment, docstore.Template{ID: handID, Fields: []docstore.Field{
		{Key: "agent", Value: "tam"}, {Key: "description", Value: "by hand"}, {Key: "assertion", Value: "touch ran-hand"}}})
	handPath := "commitments/tam/" + handID + ".md"
	if err := m.Store.Create(handPath, hand); err != nil {
		t.Fatal(err)
	}
	// The file edited behind the engine's back, as sed would.
	p, _ := m.Store.Abs(bad.Path)
	data, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(data), "assertion: test -f never", "assertion: touch ran-bad", 1)), 0o644)

	rep, err := m.Store.Check([]string{"commitments"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for _, pr := range rep.Problems {
		flagged = append(flagged, pr.Path)
		if !strings.Contains(pr.Message, "never run") {
			t.Errorf("problem %q", pr.Message)
		}
	}
	slices.Sort(flagged)
	if want := []string{bad.Path, handPath}; !slices.Equal(flagged, sortedCopy(want)) {
		t.Errorf("check flagged %v, want %v", flagged, want)
	}
	tampered, err := m.Tampered()
	if err != nil || len(tampered) != 2 {
		t.Fatalf("Tampered = %v, %v", tampered, err)
	}

	res, err := m.Verify(context.Background(), "tam", "verifier")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		want := r.Commitment.ID == ok.ID
		if r.Passed != want || r.Tampered == want {
			t.Errorf("%s: passed %v tampered %v", r.Commitment.Description, r.Passed, r.Tampered)
		}
	}
	for _, f := range []string{"ran-bad", "ran-hand"} {
		if _, err := os.Stat(filepath.Join(m.ProjectDir(), f)); err == nil {
			t.Errorf("a tampered assertion ran (%s exists)", f)
		}
	}
	cs, _ := m.Commitments("tam")
	for _, c := range cs {
		if c.ID != ok.ID && (c.Status != StatusFailed || !strings.Contains(c.Output, "not run")) {
			t.Errorf("%s: status %s output %q", c.Description, c.Status, c.Output)
		}
	}
	if evs := events(t, m, "commitment.added"); len(evs) != 2 || evs[0].Data["assertion_sha256"] != AssertionHash("true") {
		t.Errorf("commitment.added events = %v", evs)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func TestVerifyAgentMovesState(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "vic"})
	flag := filepath.Join(m.ProjectDir(), "flag")
	m.AddCommitment("vic", "flag set", "test -f flag", 0)
	m.Transition("vic", Working, TransitionOptions{})
	m.Transition("vic", Verifying, TransitionOptions{})

	st, _, err := m.VerifyAgent(context.Background(), "vic", "", 2)
	if err != nil || st != Working {
		t.Fatalf("state %s err %v, want working", st, err)
	}
	d, _ := m.GetAgentDoc("vic")
	notes, _ := Section(d.Body(), SectionNotes)
	if !strings.Contains(notes, "Verification 1 failed") || !strings.Contains(notes, "test -f flag") {
		t.Errorf("notes = %q", notes)
	}
	a, _ := m.GetAgent("vic")
	if a.VerifyAttempts != 1 {
		t.Errorf("verify_attempts = %d", a.VerifyAttempts)
	}

	os.WriteFile(flag, nil, 0o644)
	m.Transition("vic", Verifying, TransitionOptions{})
	st, res, err := m.VerifyAgent(context.Background(), "vic", "", 2)
	if err != nil || st != Done || len(res) != 1 || !res[0].Passed {
		t.Fatalf("state %s res %v err %v, want done", st, res, err)
	}

	// Failing past max attempts: failed.
	mustAgent(t, m, AgentSpec{Name: "wes"})
	m.AddCommitment("wes", "never", "false", 0)
	m.Transition("wes", Working, TransitionOptions{})
	for i := 1; i <= 2; i++ {
		m.Transition("wes", Verifying, TransitionOptions{})
		st, _, err = m.VerifyAgent(context.Background(), "wes", "", 2)
		if err != nil {
			t.Fatal(err)
		}
	}
	if st != Failed {
		t.Errorf("after 2 failed verifications: %s, want failed", st)
	}
}

// The daemon is woken by the watcher when an agent enters verifying.
func TestVerifierDaemonEventDriven(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "eve"})
	m.AddCommitment("eve", "true", "true", 0)
	m.Transition("eve", Working, TransitionOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	verified := make(chan string, 4)
	done := make(chan error, 1)
	go func() {
		done <- m.RunVerifier(ctx, VerifierOptions{Reconcile: time.Hour, BubbleAfter: -1,
			OnVerified: func(agent, state string, _ []Result) { verified <- agent + ":" + state },
			OnError:    func(err error) { t.Errorf("verifier: %v", err) }})
	}()
	// A second Manager (as another process would) moves it to verifying.
	m2, err := NewManager(m.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	// The reconcile interval is an hour, so only a watcher event can wake
	// the daemon: transition until it reports (the first transition may
	// land before its watch exists; the initial pass covers that).
	if _, err := m2.Transition("eve", Verifying, TransitionOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-verified:
		if got != "eve:done" {
			t.Fatalf("verified %s", got)
		}
	case <-ctx.Done():
		t.Fatal("verifier never woke")
	}
	// And again, now certainly through an event.
	mustAgent(t, m2, AgentSpec{Name: "fay"})
	m2.Transition("fay", Working, TransitionOptions{})
	m2.Transition("fay", Verifying, TransitionOptions{})
	select {
	case got := <-verified:
		if got != "fay:done" {
			t.Fatalf("verified %s", got)
		}
	case <-ctx.Done():
		t.Fatal("verifier never woke for fay")
	}
	cancel()
	<-done
}

// An agent whose child exited (the spawn wrapper cleared its pid) and
// whose verification fails has nobody to work on it: the verifier moves
// it to failed, which agent ls flags as needing attention, instead of
// back to working with no process, forever.
func TestFailedVerificationWithoutProcessFails(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustItem(t, b, "q", "x", "x")
	mustAgent(t, m, AgentSpec{Name: "ned"})
	if _, err := m.AddCommitment("ned", "never", "false", 0); err != nil {
		t.Fatal(err)
	}
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "ned", Queues: []string{"q"}, Work: QueueWork(b), Command: []string{"true"}})
	if err != nil || res.State != Verifying {
		t.Fatalf("spawn: %+v %v, want verifying", res, err)
	}
	if err := m.RunVerifier(context.Background(), VerifierOptions{Once: true, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetAgent("ned")
	if got := a.Effective(); got != Failed {
		t.Fatalf("after a failed verification with no process: %s, want failed", got)
	}
	if a.Attention() == "" {
		t.Error("a failed agent does not ask for attention")
	}
	// A respawn resumes it.
	res, err = m.Spawn(context.Background(), SpawnOptions{Name: "ned", Command: []string{"true"}})
	if err != nil || res.State != Verifying {
		t.Fatalf("respawn: %+v %v, want verifying again", res, err)
	}
}
