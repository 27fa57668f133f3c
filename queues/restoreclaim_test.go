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
	s, it, rel, b2 := oneItemTwoStores(t)
	b := newBroker(t, s, nil)
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "review", Stage: queues.StageClaim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAll(rel); err != nil {
		t.Fatal(err)
	}
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
	s, it, rel, _ := oneItemTwoStores(t)
	b := newBroker(t, s, nil)
	g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "review", Stage: queues.StageClaim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAll(rel); err != nil {
		t.Fatal(err)
	}
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
