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
	// (drained already: by a Ctrl-C or an earlier drain) or stopped.
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
func (m *Manager) DrainPool(name string) (*PoolDrain, error) {
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	rel := PoolPath(name)
	d, err := m.Store.Get(rel)
	if errors.Is(err, docstore.ErrNotExist) {
		return nil, &AgentError{Op: "pool drain", Path: rel, Err: &schema.UnknownError{What: "pool", Name: name, Near: schema.Near(name, m.poolNames()), Err: err}}
	}
	if err != nil {
		return nil, err
	}
	out := &PoolDrain{Name: name, Was: d.String("state"), State: d.String("state"), PID: docInt(d, "pid"), Host: d.String("host")}
	if !poolLive(out.Was) {
		return out, nil
	}
	if out.Host != "" && out.Host != m.Host {
		// Its liveness lock is another machine's: this one cannot tell
		// whether it runs, and its runner writes the document.
		return nil, &AgentError{Op: "pool drain", Path: rel, Err: fmt.Errorf("%w: it runs on machine %s: drain it there", ErrPoolElsewhere, out.Host)}
	}
	free, err := m.Store.LockFree(schema.PoolLockKey(name))
	if err != nil {
		return nil, err
	}
	if free {
		// Its runner died (tavern doctor: dead-pool): nothing claims.
		out.State = "stopped"
		return out, nil
	}
	out.Running = true
	asked := false
	if _, err := m.Store.Update(rel, func(d *docstore.Doc) error {
		// What the document says now, under its lock: the run may have
		// drained or stopped since it was read.
		out.Was, out.State, asked = d.String("state"), d.String("state"), false
		if out.Was != "running" && out.Was != "paused" {
			return nil
		}
		out.State, asked = "draining", true
		return d.SetMany([]docstore.Field{{Key: "state", Value: "draining"}, {Key: "updated", Value: m.now()}})
	}); err != nil {
		return nil, err
	}
	if out.State == "stopped" {
		out.Running = false
	}
	if asked {
		if err := m.event(journal.Event{Type: "pool.drain_requested", Kind: "pool", Path: rel, Data: map[string]any{"state": out.Was, "pid": out.PID}}); err != nil {
			return out, err
		}
	}
	return out, nil
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
