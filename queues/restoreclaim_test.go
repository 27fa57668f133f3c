package queues_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// `tavern trash restore` of an item brings back its claim gate after the
// item. A taker (another process: its own Store) tries to claim between
// the two (the test's observer runs there, as the restore journals the
// item's creation). The restore took only the document lock, not the
// item lock takers hold, so the taker claimed the item while its claim
// gate was still in the trash: a person's gate skipped. A restore of an
// item now holds its item lock until its gates are back: the taker skips
// the item, and afterwards finds it waiting at its gate.
func TestRestoreItemSerialisesWithTake(t *testing.T) {
	s, it, rel, b2, g := gatedItemInTrash(t)
	var claim *queues.Claim
	var takeErr error
	armed := true
	s.Observe(func(m docstore.Mutation) {
		if armed && m.Op == "create" && m.Path == rel {
			armed = false
			claim, takeErr = b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"})
		}
	})
	got, err := s.RestoreTrashAll(rel)
	if armed {
		t.Fatal("the restore never journaled the item")
	}
	if claim != nil || !errors.Is(takeErr, queues.ErrEmpty) {
		t.Fatalf("take during the restore: got %v, %v; want nothing claimable (the item is locked)", claim, takeErr)
	}
	if want := []string{rel, g.Path}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("RestoreTrashAll(%s) = %v, %v; want %v", rel, got, err, want)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), queues.ItemPath("q", queues.Claimed, it.ID))); err == nil {
		t.Error("the item was claimed past its claim gate")
	}
	if c, err := b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"}); c != nil || !errors.Is(err, queues.ErrEmpty) {
		t.Errorf("take after the restore: got %v, %v; want nothing (waiting at the gate)", c, err)
	}
}

// Several processes restore the same item at once (`tavern trash restore`
// run twice): exactly one brings it back with its gate, the others are
// refused, and nothing is left in the trash or restored twice.
func TestRestoreItemRacing(t *testing.T) {
	s, _, rel, _, g := gatedItemInTrash(t)
	const n = 4
	type result struct {
		got []string
		err error
	}
	results := make(chan result, n)
	start := make(chan struct{})
	for range n {
		s2, err := docstore.Open(s.Root())
		if err != nil {
			t.Fatal(err)
		}
		newBroker(t, s2, nil) // the queue's rules: its lockers and owners
		go func() {
			<-start
			got, err := s2.RestoreTrashAll(rel)
			results <- result{got, err}
		}()
	}
	close(start)
	wins := 0
	for range n {
		r := <-results
		switch {
		case r.err == nil:
			wins++
			if want := []string{rel, g.Path}; !slices.Equal(r.got, want) {
				t.Errorf("restored %v, want %v", r.got, want)
			}
		case !errors.Is(r.err, docstore.ErrNotExist) && !errors.Is(r.err, docstore.ErrExist):
			t.Errorf("a losing restore: %v, want not in the trash or there again", r.err)
		}
	}
	if wins != 1 {
		t.Errorf("%d restores succeeded, want 1", wins)
	}
	if left := trashed(t, s, ""); len(left) != 0 {
		t.Errorf("left in the trash: %v", left)
	}
}

// `tavern trash restore gates/G.md` of a gate alone (its item is not in
// the trash with it) holds the gate's item lock while it brings the gate
// back, as rm, set and edit of a gate do (LockerItem): claims, reaps and
// completions of the item, which hold that lock for each state change,
// see the gate there or not, never arriving between their check of the
// item's gates and their move. The Locker read the gate to learn its
// item, and a gate in the trash cannot be read at its path: the restore
// took no item lock (a taker from another process, mid-restore, found
// the item lock free). It is read from the trashed file now.
func TestRestoreGateAloneHoldsItemLock(t *testing.T) {
	// The item and its gate go to the trash; the item alone comes back.
	s, it, rel, b2, g := gatedItemInTrash(t)
	if _, err := s.RestoreTrash(rel); err != nil {
		t.Fatal(err)
	}
	s2, err := docstore.Open(s.Root()) // another process's view
	if err != nil {
		t.Fatal(err)
	}
	key := queues.ItemLockKey("q", it.ID)
	var free bool
	var freeErr, takeErr error
	var claim *queues.Claim
	armed := true
	s.Observe(func(m docstore.Mutation) {
		if armed && m.Op == "create" && m.Path == g.Path {
			armed = false
			free, freeErr = s2.LockFree(key)
			claim, takeErr = b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"})
		}
	})
	if got, err := s.RestoreTrash(g.Path); err != nil || got != g.Path {
		t.Fatalf("RestoreTrash(%s) = %q, %v", g.Path, got, err)
	}
	if armed {
		t.Fatal("the restore never journaled the gate")
	}
	if freeErr != nil || free {
		t.Errorf("item lock %s free during the gate's restore: %v, %v; want held", key, free, freeErr)
	}
	if claim != nil || !errors.Is(takeErr, queues.ErrEmpty) {
		t.Errorf("take during the restore: got %v, %v; want nothing claimable", claim, takeErr)
	}
	if c, err := b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, As: "taker"}); c != nil || !errors.Is(err, queues.ErrEmpty) {
		t.Errorf("take after the restore: got %v, %v; want nothing (waiting at the gate)", c, err)
	}
}

// gatedItemInTrash is oneItemTwoStores with a claim gate on the item,
// both then removed to the trash (`tavern rm` of the item).
func gatedItemInTrash(tb testing.TB) (s *docstore.Store, it *queues.Item, rel string, b2 *queues.Broker, g *queues.Gate) {
	tb.Helper()
	s, it, rel, b2 = oneItemTwoStores(tb)
	g, err := newBroker(tb, s, nil).AddGate(it.ID, queues.GateOptions{Reason: "review", Stage: queues.StageClaim})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.DeleteAll(rel); err != nil {
		tb.Fatal(err)
	}
	return s, it, rel, b2, g
}
