package queues_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/queues"
)

// A Broker's pending index must see what others do to pending/ between
// its takes: items added by another Broker (a higher priority one must
// come first), items another Broker took, items dropped in by hand, and
// items put back (release) that sort before ones already listed.
func TestTakeSeesOtherWritersBetweenTakes(t *testing.T) {
	s := newStore(t, true)
	a := newBroker(t, s, nil)
	other := newBroker(t, s, nil)
	mustQueue(t, a, "q", queues.QueueOptions{})
	low1 := mustAdd(t, a, "q", queues.AddOptions{Priority: 50, Title: "low1"})
	low2 := mustAdd(t, a, "q", queues.AddOptions{Priority: 50, Title: "low2"})
	low3 := mustAdd(t, a, "q", queues.AddOptions{Priority: 50, Title: "low3"})
	low4 := mustAdd(t, a, "q", queues.AddOptions{Priority: 50, Title: "low4"})

	if c := mustTake(t, a, take1("q")); c.ID != low1.ID { // builds a's index
		t.Fatalf("first take = %s, want %s", c.Title, low1.Title)
	}
	high := mustAdd(t, other, "q", queues.AddOptions{Priority: 0, Title: "high"})
	if c := mustTake(t, a, take1("q")); c.ID != high.ID {
		t.Fatalf("take after another broker added a priority-0 item = %s, want high", c.Title)
	}
	if c := mustTake(t, other, take1("q")); c.ID != low2.ID {
		t.Fatalf("other broker's take = %s, want low2", c.Title)
	}
	c3 := mustTake(t, a, take1("q"))
	if c3.ID != low3.ID {
		t.Fatalf("take after another broker took low2 = %s, want low3", c3.Title)
	}
	// Put low3 back: it sorts before low4, which a's index lists.
	if _, err := other.Release(c3.ID, c3.Attempt); err != nil {
		t.Fatal(err)
	}
	if c := mustTake(t, a, take1("q")); c.ID != low3.ID {
		t.Fatalf("take after release = %s, want low3 again", c.Title)
	}
	// An item file dropped in by hand (a copy of low4 under an id that
	// sorts first).
	data, err := os.ReadFile(filepath.Join(s.Root(), queues.ItemPath("q", queues.Pending, low4.ID)))
	if err != nil {
		t.Fatal(err)
	}
	handID := "p00-000-by-hand"
	data = []byte(strings.ReplaceAll(string(data), low4.ID, handID))
	if err := os.WriteFile(filepath.Join(s.Root(), queues.ItemPath("q", queues.Pending, handID)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := mustTake(t, a, take1("q")); c.ID != handID {
		t.Fatalf("take after a hand-made item = %s, want %s", c.ID, handID)
	}
	if c := mustTake(t, a, take1("q")); c.ID != low4.ID {
		t.Fatalf("last take = %s, want low4", c.Title)
	}
	if _, err := a.Take(t.Context(), take1("q")); !isEmpty(err) {
		t.Fatalf("take from an empty queue: %v, want ErrEmpty", err)
	}
}
