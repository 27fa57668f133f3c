package agents

import "strings"

// The agent states (schema.AgentStates).
const (
	Idle      = "idle"
	Working   = "working"
	Waiting   = "waiting"
	Verifying = "verifying"
	Done      = "done"
	Failed    = "failed"
)

// Transitions is the legal state machine: Transitions[from] lists the
// states that may follow from. Staying in the same state is always allowed
// and is not a transition (nothing is written or journaled). doc.go
// explains each edge.
var Transitions = map[string][]string{
	Idle:      {Working, Failed},
	Working:   {Waiting, Verifying, Done, Idle, Failed},
	Waiting:   {Working, Idle, Failed},
	Verifying: {Done, Working, Failed},
	Done:      {Idle, Failed},
	Failed:    {Idle},
}

// Legal reports whether an agent may go from one state to another.
func Legal(from, to string) bool {
	if from == to {
		_, ok := Transitions[from]
		return ok
	}
	for _, s := range Transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ValidState reports whether s is an agent state.
func ValidState(s string) bool {
	_, ok := Transitions[s]
	return ok
}

func allowedList(from string) string {
	if l, ok := Transitions[from]; ok {
		return strings.Join(l, ", ")
	}
	return "(unknown state)"
}

// running states are held by a live wrapper process.
func running(state string) bool { return state == Working || state == Waiting }
