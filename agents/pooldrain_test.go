package agents

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// DrainPool of a pool that does not run says so (no error: nothing of it
// claims); of a name no pool has, an unknown pool with the names near it.
// The drain of a running pool is pool_drain_command.txtar's (the binary).
func TestDrainPoolNotRunning(t *testing.T) {
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{OnEmpty: "terminate"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.RunPool(ctx, PoolOptions{Name: "builders", Queues: []string{"work"}, Broker: b,
		Drone: func(string, time.Duration) *exec.Cmd { return exec.Command("true") }}); err != nil {
		t.Fatal(err)
	}
	got, err := m.DrainPool("builders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Running || got.State != "stopped" || got.Was != "stopped" {
		t.Errorf("DrainPool(stopped pool) = %+v, want not running, stopped", got)
	}
	if err := m.WaitPoolStopped(ctx, "builders"); err != nil {
		t.Errorf("WaitPoolStopped(stopped pool) = %v, want nil", err)
	}

	for _, tt := range []struct {
		name string
		near []string
	}{{"biulders", []string{"builders"}}, {"nope", nil}} {
		_, err := m.DrainPool(tt.name)
		var ue *schema.UnknownError
		if !errors.Is(err, schema.ErrUnknownName) || !errors.As(err, &ue) || !slices.Equal(ue.Near, tt.near) {
			t.Errorf("DrainPool(%q) = %v, want an unknown pool near %q", tt.name, err, tt.near)
		}
	}
	if _, err := m.DrainPool("Bad Name"); !errors.Is(err, schema.ErrBadAgentName) {
		t.Errorf("DrainPool(bad name) = %v, want ErrBadAgentName", err)
	}
}

// A drain asked between a run taking the pool's lock and its first write
// to the document (testHookPoolLocked: exactly there) is not lost,
// whatever the document said before: stopped (an earlier run ended),
// running or draining (left by a runner that died), or no document at all
// (the pool's first run). The run drains at once: with on_empty idle and
// min 0 nothing else ends it before ctx, and nothing claims. It used to
// be lost: DrainPool said "not running" (stopped: the run went on), or
// its state: draining was overwritten by the run's first write.
func TestDrainPoolWhileRunStarts(t *testing.T) {
	for _, before := range []string{"stopped", "running", "draining", "none"} {
		t.Run(before, func(t *testing.T) {
			m := newRelaxedManager(t)
			b := newBroker(t, m)
			mustQueue(t, b, "work", queues.QueueOptions{})
			mustItem(t, b, "work", "an item", "")
			if before != "none" {
				// A document an earlier run left, its lock free.
				if err := m.Store.Create(PoolPath("p"), poolDoc(t, before)); err != nil {
					t.Fatal(err)
				}
			}
			var drained *PoolDrain
			var drainErr error
			testHookPoolLocked = func(name string) { drained, drainErr = m.DrainPool(name) }
			t.Cleanup(func() { testHookPoolLocked = nil })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			mt, err := m.RunPool(ctx, PoolOptions{Name: "p", Queues: []string{"work"}, Min: 0, Max: 1, OnEmpty: EmptyIdle, Broker: b,
				Drone: func(string, time.Duration) *exec.Cmd { return exec.Command("false") }})
			if err != nil {
				t.Fatal(err)
			}
			if drainErr != nil || drained == nil || !drained.Running || drained.State != "draining" {
				t.Fatalf("DrainPool while the run starts = %+v, %v; want running, draining", drained, drainErr)
			}
			if ctx.Err() != nil {
				t.Fatal("the run did not drain: the drain asked before its first write was lost")
			}
			if mt.Spawned != 0 || mt.State != "stopped" {
				t.Errorf("metrics %+v: want no drone started, stopped", mt)
			}
			if st, err := b.Stats("work"); err != nil || st.Pending != 1 {
				t.Errorf("work: %+v, %v: want its item pending", st, err)
			}
			if got := events(t, m, "pool.drain_requested"); before != "draining" && len(got) != 1 {
				t.Errorf("%d pool.drain_requested, want 1", len(got))
			}
		})
	}
}

// A drain asked before a run takes the pool's lock finds no run (not
// running), and the run that starts after it is not drained by it, nor by
// a state: draining a runner that died left in the document.
func TestDrainPoolBeforeRunStarts(t *testing.T) {
	for _, before := range []string{"stopped", "draining"} {
		t.Run(before, func(t *testing.T) {
			m := newRelaxedManager(t)
			b := newBroker(t, m)
			mustQueue(t, b, "work", queues.QueueOptions{})
			if err := m.Store.Create(PoolPath("p"), poolDoc(t, before)); err != nil {
				t.Fatal(err)
			}
			got, err := m.DrainPool("p")
			if err != nil || got.Running {
				t.Fatalf("DrainPool with no run = %+v, %v; want not running", got, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var states []string
			mt, err := m.RunPool(ctx, PoolOptions{Name: "p", Queues: []string{"work"}, Min: 0, Max: 1, OnEmpty: EmptyIdle, Broker: b,
				Drone: func(string, time.Duration) *exec.Cmd { return exec.Command("false") },
				Progress: func(pm PoolMetrics) {
					if len(states) == 0 {
						d, err := m.Store.Get(PoolPath("p"))
						if err != nil {
							t.Error(err)
						}
						states = append(states, pm.State, d.String("state"))
						cancel() // seen running: end it
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(states, []string{"running", "running"}) || mt.State != "stopped" {
				t.Errorf("run states (metrics, document) %q, final %q: want running, running, then stopped", states, mt.State)
			}
		})
	}
}

// poolDoc is a pool document an earlier run left in state.
func poolDoc(tb testing.TB, state string) *docstore.Doc {
	tb.Helper()
	d, err := docstore.New(schema.Pool, []docstore.Field{{Key: schema.VersionField, Value: schema.Pool.Version}, {Key: "id", Value: docstore.NewID()},
		{Key: "queues", Value: []string{"work"}}, {Key: "state", Value: state}, {Key: "pid", Value: 1}, {Key: "host", Value: mustHostname(tb)}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func mustHostname(tb testing.TB) string {
	tb.Helper()
	h, err := os.Hostname()
	if err != nil {
		tb.Fatal(err)
	}
	return h
}
