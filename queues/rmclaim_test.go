package queues_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// trashed lists the document paths in .trash/ under prefix.
func trashed(tb testing.TB, s *docstore.Store, prefix string) []string {
	tb.Helper()
	ents, err := s.Trash()
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Path, prefix) {
			out = append(out, e.Path)
		}
	}
	return out
}

// oneItemTwoStores makes a queue q with one pending item, and a second
// Store and Broker on the same directory (another process's view), for a
// taker that races this Store's writes.
func oneItemTwoStores(tb testing.TB) (s *docstore.Store, it *queues.Item, rel string, b2 *queues.Broker) {
	tb.Helper()
	s = newStore(tb, true)
	b := newBroker(tb, s, nil)
	mustQueue(tb, b, "q", queues.QueueOptions{})
	it = mustAdd(tb, b, "q", queues.AddOptions{Title: "a"})
	s2, err := docstore.Open(s.Root())
	if err != nil {
		tb.Fatal(err)
	}
	return s, it, queues.ItemPath("q", queues.Pending, it.ID), newBroker(tb, s2, nil)
}

// A taker (another process: its own Store) claims the item between rm's
// checks and its rename (the test's rule runs there, as rm's delete
// checks its rules). rm used the document lock, not the item lock the
// taker holds, so the claim went through under it and rm's rename found
// no pending copy (or, between the claim's two steps, moved the pending
// copy to the trash beside the claimed one). rm of an item serialises
// with the queue's item lock: the taker, trying it, skips the item, and
// rm removes it whole; had the claim won, rm is refused (claimed).
func TestRmItemSerialisesWithTake(t *testing.T) {
	s, it, rel, b2 := oneItemTwoStores(t)
	if err := s.CheckDelete(rel); err != nil { // rm's check, before the claim
		t.Fatal(err)
	}
	var claim *queues.Claim
	var takeErr error
	armed := true
	s.AddRule("test/taker", func(w docstore.Write) error {
		if armed && w.Op == "delete" && w.Path == rel {
			armed = false
			claim, takeErr = b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"})
		}
		return nil
	})
	_, rmErr := s.DeleteAll(rel)
	if takeErr != nil && !errors.Is(takeErr, queues.ErrEmpty) {
		t.Fatalf("take: %v", takeErr)
	}
	claimedRel := queues.ItemPath("q", queues.Claimed, it.ID)
	_, claimedErr := os.Stat(filepath.Join(s.Root(), claimedRel))
	inTrash := trashed(t, s, "queues/q/")
	if claim != nil {
		// The claim won: rm must be refused as a claimed item is, and
		// leave the claimed copy alone with nothing in the trash.
		if !errors.Is(rmErr, queues.ErrState) {
			t.Errorf("rm after the claim: got %v, want ErrState (claimed)", rmErr)
		}
		if claimedErr != nil || len(inTrash) != 0 {
			t.Errorf("claimed copy: %v, trash %v; want the claimed copy and no trash", claimedErr, inTrash)
		}
		return
	}
	if rmErr != nil {
		t.Fatalf("rm: %v", rmErr)
	}
	if !errors.Is(claimedErr, fs.ErrNotExist) {
		t.Errorf("claimed copy: %v, want none (the item was removed)", claimedErr)
	}
	if len(inTrash) != 1 || inTrash[0] != rel {
		t.Errorf("trash = %v, want [%s]", inTrash, rel)
	}
}

// rm checked the item while it was pending; a claim moved it to claimed/
// before rm removed it: rm is refused as rm of a claimed item is (exit
// 4), not "no such file", and removes nothing.
func TestRmItemClaimedSinceCheck(t *testing.T) {
	s, _, rel, b2 := oneItemTwoStores(t)
	if err := s.CheckDelete(rel); err != nil {
		t.Fatal(err)
	}
	if c, err := b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"}); err != nil || c == nil {
		t.Fatalf("take: %v %v", c, err)
	}
	_, err := s.DeleteAll(rel)
	if !errors.Is(err, queues.ErrState) {
		t.Errorf("rm: got %v, want ErrState (claimed by taker)", err)
	}
	if got := trashed(t, s, "queues/q/"); len(got) != 0 {
		t.Errorf("trash = %v, want none", got)
	}
}

// rm of a gate alone is allowed while its item is dead, refused while the
// item waits on it (pending or claimed). A retry (dead to pending) that
// falls between rm's check and its rename left the item pending on a
// gate in the trash, never passed. rm of a gate holds its item's lock:
// the retry waits for it (here, trying it, finds it held).
func TestRmGateSerialisesWithRetry(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 1})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Approve(g.ID, queues.Decision{Caller: human()}); err != nil {
		t.Fatal(err)
	}
	c := mustTake(t, b, take1("q"))
	if _, err := c.Fail("boom"); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, b, it.ID); got != queues.Dead {
		t.Fatalf("item is %s, want dead", got)
	}
	if err := s.CheckDelete(g.Path); err != nil { // rm's check: the item is dead
		t.Fatal(err)
	}
	s2, err := docstore.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	b2 := newBroker(t, s2, nil)
	retried := false
	armed := true
	s.AddRule("test/retry", func(w docstore.Write) error {
		if !armed || w.Op != "delete" || w.Path != g.Path {
			return nil
		}
		armed = false
		// Another process's retry takes the item lock; one that waits
		// would wait for rm here, so try it.
		l, ok, err := s2.TryLock(queues.ItemLockKey("q", it.ID))
		if err != nil || !ok {
			return err
		}
		l.Unlock()
		if _, err := b2.Retry("q", it.ID); err != nil {
			t.Errorf("retry: %v", err)
		}
		retried = true
		return nil
	})
	_, rmErr := s.DeleteAll(g.Path)
	_, gateErr := os.Stat(filepath.Join(s.Root(), g.Path))
	st := stateOf(t, b, it.ID)
	if errors.Is(gateErr, fs.ErrNotExist) && (st == queues.Pending || st == queues.Claimed) {
		t.Fatalf("gate removed (rm: %v, retried %v) while its item is %s and waits on it", rmErr, retried, st)
	}
}
