package trace

import (
	"testing"

	"github.com/tavernhq/tavern/watcher/journal"
)

// TestSummarize: a timeline line says what happened in words: hand edits
// by their operation and changed fields, a plan event's message as a
// sentence (never "<nil>", never the message's key).
func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		e    journal.Event
		want string
	}{
		{journal.Event{Type: journal.TypeExternal, Path: "agents/bob.md", Data: map[string]any{"op": journal.TypeCreated}},
			"created by hand: agents/bob.md"},
		{journal.Event{Type: journal.TypeExternal, Path: "agents/bob.md", Data: map[string]any{"op": journal.TypeRemoved}},
			"removed by hand: agents/bob.md"},
		{journal.Event{Type: journal.TypeExternal, Path: "agents/bob.md", Data: map[string]any{"op": journal.TypeUpdated, "changed": []any{"state", "note"}}},
			"hand edit of agents/bob.md (state, note)"},
		{journal.Event{Type: journal.TypeExternal, Path: "agents/bob.md", Data: map[string]any{"op": journal.TypeUpdated}},
			"hand edit of agents/bob.md"},
		{journal.Event{Type: "plan.ticked", Path: "plans/p.md", Data: map[string]any{"message": "its box is ticked in plans/p.md"}},
			"its box is ticked in plans/p.md"},
		{journal.Event{Type: "gate.approved", Data: map[string]any{"gate": "review", "by": "pat"}},
			"gate review, by pat"},
	} {
		if got := summarize(tc.e); got != tc.want {
			t.Errorf("summarize(%s %v): got %q, want %q", tc.e.Type, tc.e.Data, got, tc.want)
		}
	}
}
