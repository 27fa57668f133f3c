package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// PoolDrain is what DrainPool found and did.
type PoolDrain struct {
	Name string `json:"name"`
	// Was is the pool's state when asked: running, paused, draining
	// (drained already: by a Ctrl-C or an earlier drain) or stopped; or
	// starting: a run held the pool while its document did not say so
	// yet (a run starting, which drains from its first write, or one
	// ending).
	Was string `json:"was"`
	// State is its state now: draining, or stopped (not running, or
	// WaitPoolStopped saw its run return).
	State string `json:"state"`
	// Running says a run held the pool when asked; false for a pool that
	// is not running (stopped, or its runner died: tavern doctor).
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
	Host    string `json:"host,omitempty"`
}

// DrainPool does what the first Ctrl-C to a pool's run does, from any
// process: the pool's document says state: draining (written under the
// document's lock, and only while a run holds the pool's liveness lock),
// so its drones claim nothing more at once; the run sees the state in its
// document (a file event, or its next tick, which keeps the state rather
// than overwrite it), launches no more drones, interrupts the drones that
// wait for an item and returns once those with an item have finished. No
// signal is sent: a pid read from the document may be another process's
// by now, and a run that drained already would take a SIGINT as its
// second Ctrl-C (SIGTERM to its drones). A pool drained already is left
// as it is; one that is not running is reported (Running false), not an
// error: nothing of it claims. An unknown pool is a *schema.UnknownError
// with the pools near its name.
//
// A drain is never lost to a run that starts: one that took the pool's
// liveness lock but has not written its document yet (which still says
// what an earlier run left: stopped, or running or draining by a runner
// that died) is still drained. Every drain made while a run holds the
// lock counts in the document's drain_requests, under the document's
// lock, and a run's first write drains it when the count grew since it
// read it, before it took the lock (RunPool). A run ending at that
// instant may leave the count to the next run, which then drains: a
// drain asked as one run ends and the next starts drains the next.
func (m *Manager) DrainPool(name string) (*PoolDrain, error) {
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	rel := PoolPath(name)
	key := schema.PoolLockKey(name)
	d, err := m.Store.Get(rel)
	if errors.Is(err, docstore.ErrNotExist) {
		// A pool's first run between its lock and its first write.
		if d, err = m.drainFirstRun(name); d == nil && err == nil {
			return nil, &AgentError{Op: "pool drain", Path: rel, Err: &schema.UnknownError{What: "pool", Name: name, Near: schema.Near(name, m.poolNames()), Err: docstore.ErrNotExist}}
		}
	}
	if err != nil {
		return nil, err
	}
	out := &PoolDrain{Name: name, Was: d.String("state"), State: d.String("state"), PID: docInt(d, "pid"), Host: d.String("host")}
	if out.Host != "" && out.Host != m.Host && poolLive(out.Was) {
		// Its liveness lock is another machine's: this one cannot tell
		// whether it runs, and its runner writes the document.
		return nil, &AgentError{Op: "pool drain", Path: rel, Err: fmt.Errorf("%w: it runs on machine %s: drain it there", ErrPoolElsewhere, out.Host)}
	}
	asked := false
	if _, err := m.Store.Update(rel, func(d *docstore.Doc) error {
		// What the document says now, and whether a run holds the pool,
		// under the document's lock: the run may have drained or stopped
		// since it was read, or be starting (RunPool reads drain_requests
		// before it takes the pool's lock, and writes under this one).
		out.Was, out.State, out.PID, out.Running, asked = d.String("state"), d.String("state"), docInt(d, "pid"), false, false
		free, err := m.Store.LockFree(key)
		if err != nil {
			return err
		}
		if free {
			if poolLive(out.Was) {
				out.State = "stopped" // its runner died (tavern doctor: dead-pool): nothing claims
			}
			return nil
		}
		out.Running = true
		fields := []docstore.Field{{Key: "drain_requests", Value: docInt(d, "drain_requests") + 1}, {Key: "updated", Value: m.now()}}
		switch out.Was {
		case "running", "paused":
			out.State, asked = "draining", true
			fields = append(fields, docstore.Field{Key: "state", Value: "draining"})
		case "draining":
			// Drained already, or left so by a runner that died while a
			// new run starts: counted, that run drains too.
		default:
			// Held, yet the document does not say so: a run starting
			// (its first write drains it) or one ending.
			out.Was, out.State, out.PID, asked = "starting", "draining", 0, true
		}
		return d.SetMany(fields)
	}); err != nil {
		return nil, err
	}
	if asked {
		if err := m.event(journal.Event{Type: "pool.drain_requested", Kind: "pool", Path: rel, Data: map[string]any{"state": out.Was, "pid": out.PID}}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// drainFirstRun is DrainPool of a pool with no document: if a run holds
// its lock (its first run, before its first write), the document is made
// with the drain counted (drain_requests 1), which that run's first write
// honours; it returns nil, nil when nothing holds the pool (an unknown
// pool).
func (m *Manager) drainFirstRun(name string) (*docstore.Doc, error) {
	free, err := m.Store.LockFree(schema.PoolLockKey(name))
	if err != nil || free {
		return nil, err
	}
	d, err := docstore.New(schema.Pool, []docstore.Field{{Key: schema.VersionField, Value: schema.Pool.Version}, {Key: "id", Value: docstore.NewID()}, {Key: "created", Value: m.now()}}, nil)
	if err != nil {
		return nil, err
	}
	// Not forced: the pool name rule (a typo of another pool's name)
	// holds for this create as for the run's first write; a refusal is
	// returned: the drain is refused, not lost.
	if err := m.Store.Create(PoolPath(name), d); err != nil && !errors.Is(err, docstore.ErrExist) {
		return nil, err
	}
	return m.Store.Get(PoolPath(name))
}

// WaitPoolStopped waits until pool's run has returned: nobody holds its
// liveness lock (looked at every 100ms; a flock released is no file
// event). It returns ctx's error if ctx ends first.
func (m *Manager) WaitPoolStopped(ctx context.Context, name string) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		free, err := m.Store.LockFree(schema.PoolLockKey(name))
		if err != nil {
			return err
		}
		if free {
			return nil
		}
		select {
		case <-ctx.Done():
			return &AgentError{Op: "pool drain", Path: PoolPath(name), Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// poolNames lists the pools that have a document.
func (m *Manager) poolNames() []string {
	files, _ := m.Store.Names("pools")
	var out []string
	for _, f := range files {
		if n, ok := strings.CutSuffix(f, ".md"); ok && schema.ValidName(n) == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
