package agents

import (
	"errors"
	"os"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

// Each way a spawn's claim to its pool's admission can fail is
// ErrNotAdmitted; the live run's token presented by its child passes.
func TestCheckPoolAdmission(t *testing.T) {
	m := newManager(t)
	s := m.Store
	if err := CheckPoolAdmission(s, "bees", "x", os.Getpid()); !errors.Is(err, ErrNotAdmitted) {
		t.Errorf("no run: got %v, want ErrNotAdmitted", err)
	}
	lk, ok, err := s.TryLock(schema.PoolLockKey("bees"))
	if err != nil || !ok {
		t.Fatalf("pool lock: %v %v", ok, err)
	}
	defer lk.Unlock()
	tok, err := newAdmission(lk)
	if err != nil {
		t.Fatal(err)
	}
	// This process holds the lock: it stands for the pool run, the
	// parent of its drones.
	run := os.Getpid()
	if err := CheckPoolAdmission(s, "bees", tok, run); err != nil {
		t.Errorf("the run's own drone: %v", err)
	}
	for name, c := range map[string]struct {
		pool, tok string
		parent    int
	}{
		"no pool":      {"", tok, run},
		"no token":     {"bees", "", run},
		"wrong token":  {"bees", tok[1:] + "0", run},
		"other parent": {"bees", tok, os.Getppid()},
	} {
		if err := CheckPoolAdmission(s, c.pool, c.tok, c.parent); !errors.Is(err, ErrNotAdmitted) {
			t.Errorf("%s: got %v, want ErrNotAdmitted", name, err)
		}
	}
	if err := CheckPoolAdmission(s, "../x", tok, run); err == nil || errors.Is(err, ErrNotAdmitted) {
		t.Errorf("bad pool name: got %v, want the name error", err)
	}
}
