package messages_test

import (
	"testing"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

// One reader (the same agent name on two machines) reads channel dev on
// one machine and ops on the other between two rounds: after the sync
// both bookmarks are at the newest message of both channels on both
// machines. Before, the bookmark merged field by field and `channels`
// (one field changed on both sides) kept one machine's map: the other
// machine's reads came back as unread, delivered a second time.
func TestBookmarkMergeKeepsBothMachinesReads(t *testing.T) {
	c := newClones(t, nil)
	a, sync := c.a, c.sync
	for _, ch := range []string{"dev", "ops"} {
		if _, err := messages.SendMessage(a, ch, "x", "hello "+ch); err != nil {
			t.Fatal(err)
		}
	}
	// Both machines have read something before (the bookmark exists on
	// both sides with a common base).
	if _, err := messages.Recv(a, "rd", "dev", messages.RecvOptions{}); err != nil {
		t.Fatal(err)
	}
	sync(a)
	b := c.clone("beta")
	for _, ch := range []string{"dev", "ops"} {
		if _, err := messages.SendMessage(a, ch, "x", "second "+ch); err != nil {
			t.Fatal(err)
		}
	}
	sync(a)
	sync(b)
	if m, err := messages.Recv(a, "rd", "dev", messages.RecvOptions{}); err != nil || len(m) != 1 {
		t.Fatalf("a reads dev: %v %v", m, err)
	}
	if m, err := messages.Recv(b, "rd", "ops", messages.RecvOptions{}); err != nil || len(m) != 2 {
		t.Fatalf("b reads ops: %v %v", m, err)
	}
	sync(a)
	sync(b)
	sync(a)
	for name, s := range map[string]*docstore.Store{"a": a, "b": b} {
		for _, ch := range []string{"dev", "ops"} {
			m, err := messages.Recv(s, "rd", ch, messages.RecvOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != 0 {
				t.Errorf("machine %s: %d messages of %s delivered again after the sync: %v", name, len(m), ch, m)
			}
		}
	}
}
