package agents

import (
	"errors"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// A state that is no state is refused with a *StateError that says which
// agent (Op, Path) and what it most likely meant, and matches both
// ErrUnknownState (a bad value) and ErrIllegalTransition; nothing is written.
func TestTransitionUnknownStateError(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "alice", Role: "coder"})
	before, err := m.GetAgent("alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		to   string
		near []string
	}{
		{"wroking", []string{Working}},
		{"WORKING", []string{Working}},
		{"zzzzzz", nil},
	} {
		_, err := m.Transition("alice", tt.to, TransitionOptions{Force: true})
		wantErr(t, err, ErrUnknownState)
		wantErr(t, err, ErrIllegalTransition)
		var se *StateError
		if !errors.As(err, &se) {
			t.Fatalf("Transition(%q) = %#v, want a *StateError", tt.to, err)
		}
		if got, want := se.Op, "transition"; got != want {
			t.Errorf("Op = %q, want %q", got, want)
		}
		if got, want := se.Path, "agents/alice.md"; got != want {
			t.Errorf("Path = %q, want %q", got, want)
		}
		if got, want := se.State, tt.to; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if !slices.Equal(se.Near, tt.near) {
			t.Errorf("Near = %q, want %q", se.Near, tt.near)
		}
	}
	after, err := m.GetAgent("alice")
	if err != nil {
		t.Fatal(err)
	}
	if after.State != before.State || after.Rev != before.Rev {
		t.Errorf("agent changed: %s/%s, was %s/%s", after.State, after.Rev, before.State, before.Rev)
	}
}

// The JSON error object of the CLI names the agent's document.
func TestStateErrorPosition(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "alice", Role: "coder"})
	_, err := m.Transition("alice", "wroking", TransitionOptions{})
	if got, _, _ := docstore.Position(err); got != "agents/alice.md" {
		t.Errorf("Position = %q, want agents/alice.md", got)
	}
}
