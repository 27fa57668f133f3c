package docstore

import (
	"errors"
	"strings"
	"testing"
)

// A held lock's note is read by others while it is held, cleared with
// nil, and refused once the lock is let go or when it is too large; the
// lock itself is unaffected by it.
func TestLockNote(t *testing.T) {
	s := mustInitStore(t)
	if got, err := s.LockNote("pools/p"); err != nil || got != nil {
		t.Fatalf("note of a lock never taken: %q, %v", got, err)
	}
	l, ok, err := s.TryLock("pools/p")
	if err != nil || !ok {
		t.Fatalf("trylock: %v %v", ok, err)
	}
	if err := l.WriteNote([]byte("digest")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LockNote("pools/p"); err != nil || string(got) != "digest" {
		t.Errorf("note = %q, %v; want digest", got, err)
	}
	if free, err := s.LockFree("pools/p"); err != nil || free {
		t.Errorf("lock free after a note: %v, %v", free, err)
	}
	if err := l.WriteNote([]byte(strings.Repeat("x", 5000))); !errors.Is(err, ErrNoteTooLarge) {
		t.Errorf("large note: got %v, want ErrNoteTooLarge", err)
	}
	if got, _ := s.LockNote("pools/p"); string(got) != "digest" {
		t.Errorf("note after a refused write = %q, want digest", got)
	}
	if err := l.WriteNote(nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LockNote("pools/p"); err != nil || len(got) != 0 {
		t.Errorf("cleared note = %q, %v", got, err)
	}
	l.Unlock()
	if err := l.WriteNote([]byte("late")); !errors.Is(err, ErrLost) {
		t.Errorf("note of a lock let go: got %v, want ErrLost", err)
	}
}
