package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// A drone of a pool (SpawnOptions.PoolRun) is interrupted once the pool's
// liveness lock comes free: its child gets SIGTERM and the item is
// released, not failed; a drone whose pool is already
// gone claims nothing (ErrNoWork with ErrPoolGone), and the item stays
// pending.
func TestSpawnPoolRunEndsWithPool(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustItem(t, b, "q", "long", "x")
	lk, ok, err := m.Store.TryLock(schema.PoolLockKey("p"))
	if err != nil || !ok {
		t.Fatalf("pool lock: %v %v", ok, err)
	}
	defer lk.Unlock()
	ready := filepath.Join(t.TempDir(), "ready")
	type out struct {
		res *SpawnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := m.Spawn(context.Background(), SpawnOptions{Name: "p-1", Pool: "p", PoolRun: true, Queues: []string{"q"}, Work: QueueWork(b),
			Command: []string{"/bin/sh", "-c", "touch " + ready + "; exec sleep 60"}})
		done <- out{res, err}
	}()
	waitUntil(t, 10*time.Second, "the drone's child to start", func() bool { _, err := os.Stat(ready); return err == nil })
	lk.Unlock() // the pool dies
	var o out
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the drone ran on 30s after its pool's lock came free")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Outcome != OutcomeReleased || o.res.InterruptedBy != "SIGTERM" || o.res.State != Idle {
		t.Fatalf("result = %+v, want released by SIGTERM, agent idle", o.res)
	}
	item, _ := b.Get(it.ID)
	if item.State != queues.Pending || item.LastError != "" || item.Attempts != 0 {
		t.Fatalf("item = %s %q attempts %d, want pending, released", item.State, item.LastError, item.Attempts)
	}

	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "p-2", Pool: "p", PoolRun: true, Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"true"}})
	if !errors.Is(err, ErrNoWork) || !errors.Is(err, ErrPoolGone) || res == nil || res.Outcome != OutcomeNoWork {
		t.Fatalf("a drone of a dead pool: %+v %v, want no work, pool gone", res, err)
	}
	if item, _ := b.Get(it.ID); item.State != queues.Pending {
		t.Fatalf("item after a drone of a dead pool: %s, want pending", item.State)
	}
}
