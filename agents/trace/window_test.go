package trace

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

// TestSentByEndInclusive: a message an agent sent in the millisecond its
// attempt ended (the captured output of a drone is saved as its item is
// completed) belongs to the attempt: times are kept to the millisecond,
// so the window's end is inclusive.
func TestSentByEndInclusive(t *testing.T) {
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := messages.CreateChannel(s, "general", ""); err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Minute)
	if _, err := messages.SendMessage(s, "general", "drone:stdout", "all tests pass"); err != nil {
		t.Fatal(err)
	}
	msgs, err := messages.ReadMessages(s, "general", "", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("messages %v, %v; want one", msgs, err)
	}
	end := msgs[0].Time.Time // the attempt ended in the message's millisecond
	got, errs := sentBy(s, "drone", from, end)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(got) != 1 {
		t.Errorf("sent by drone in [from, %s]: %d messages, want 1", end.Format(time.RFC3339Nano), len(got))
	}
	if got, _ := sentBy(s, "drone", from, end.Add(-time.Millisecond)); len(got) != 0 {
		t.Errorf("a window that ended a millisecond before: %d messages, want 0", len(got))
	}
}
