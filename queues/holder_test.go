package queues_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/queues"
)

// A caller that names who it acts as, without the attempt, changes only
// its own claim: another's is refused with a *HolderError naming the
// holder and the attempt, and nothing changes. The attempt given is a
// takeover; nobody named is fenced by the attempt only.
func TestChangeAsNotHolder(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "one"})
	c := mustTake(t, b, queues.TakeOptions{Queues: []string{"q"}, As: "alice"})
	before, err := os.ReadFile(filepath.Join(s.Root(), c.Path))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"complete": func() error { _, err := b.CompleteAs(it.ID, 0, "bob", "mine"); return err },
		"fail":     func() error { _, err := b.FailAs(it.ID, 0, "bob", "no"); return err },
		"renew":    func() error { _, err := b.RenewAs(it.ID, 0, "bob"); return err },
		"release":  func() error { _, err := b.ReleaseAs(it.ID, 0, "bob"); return err },
	} {
		err := f()
		var he *queues.HolderError
		if !errors.As(err, &he) || !errors.Is(err, queues.ErrNotHolder) {
			t.Fatalf("%s as bob: got %v, want a HolderError", name, err)
		}
		if got, want := *he, (queues.HolderError{Holder: "alice", Attempt: 1, As: "bob"}); got != want {
			t.Errorf("%s as bob: got %+v, want %+v", name, got, want)
		}
	}
	after, _ := os.ReadFile(filepath.Join(s.Root(), c.Path))
	if string(before) != string(after) {
		t.Errorf("refused calls changed the item:\n%s\n---\n%s", before, after)
	}
	if _, err := b.RenewAs(it.ID, 0, "alice"); err != nil {
		t.Errorf("renew by its holder: %v", err)
	}
	if _, err := b.CompleteAs(it.ID, 2, "bob", "late"); !errors.Is(err, queues.ErrStale) {
		t.Errorf("complete as bob at a stale attempt: got %v, want ErrStale", err)
	}
	done, err := b.CompleteAs(it.ID, 1, "bob", "taken over")
	if err != nil || done.State != queues.Done {
		t.Fatalf("takeover at the current attempt: %v, %+v", err, done)
	}

	it2 := mustAdd(t, b, "q", queues.AddOptions{Title: "two"})
	mustTake(t, b, queues.TakeOptions{Queues: []string{"q"}, As: "alice"})
	if _, err := b.ReleaseAs(it2.ID, 0, ""); err != nil {
		t.Errorf("release with nobody named: %v", err)
	}
}
