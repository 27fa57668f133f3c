package view

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
)

// ActionError leaves out its "op target:" only where the error it wraps
// is one that names the same operation and target itself (a gate's
// *queues.GateError, an *agents.AgentError, an *fs.PathError); a message
// that merely begins like it (a quoted text, a wrapper's words) keeps it.
func TestActionErrorPrefix(t *testing.T) {
	cause := errors.New("it broke")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"gate error of the action", &queues.GateError{Op: "reject", Gate: "g-1", Err: cause}, "reject g-1: it broke"},
		{"gate error of another path", &queues.GateError{Op: "reject", Gate: "g-1", Path: "queues/q/pending/x.md", Err: cause},
			"reject g-1: reject queues/q/pending/x.md: it broke"},
		{"gate error of another op", &queues.GateError{Op: "check", Gate: "g-1", Err: cause}, "reject g-1: check g-1: it broke"},
		{"agent error of the action", &agents.AgentError{Op: "reject", Path: "g-1", Err: cause}, "reject g-1: it broke"},
		{"path error of the action", &fs.PathError{Op: "reject", Path: "g-1", Err: cause}, "reject g-1: it broke"},
		{"text that looks like it", errors.New("reject g-1: says someone"), "reject g-1: reject g-1: says someone"},
		{"a wrapped gate error", fmt.Errorf("reject g-1: %w", &queues.GateError{Op: "approve", Gate: "g-2", Err: cause}),
			"reject g-1: reject g-1: approve g-2: it broke"},
		{"plain", cause, "reject g-1: it broke"},
	}
	for _, tt := range tests {
		err := &ActionError{Op: "reject", Path: "g-1", Err: tt.err}
		if got := err.Error(); got != tt.want {
			t.Errorf("%s: Error() = %q, want %q", tt.name, got, tt.want)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: errors.Is(err, its cause) = false", tt.name)
		}
	}
}
