package agents

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// gateRecheck is how often a wrapper waiting at a gate looks again
// without a file event (a missed event, another machine's write).
const gateRecheck = 2 * time.Second

// awaitGates holds a wrapper whose child succeeded until its item's
// complete-stage gates pass: the agent goes to waiting (its reason names
// the gate) and back to working once a person approved. A rejection (the
// item is dead then) or the item leaving this claim ends the wait with
// an error, which fails the run. A signal on interrupts, or ctx done, ends
// it with an *interruptedError: the run is interrupted, not failed.
// Claims that are not queue claims have no gates.
//
// Before it waits, the item records that its work is done (result: the
// run's; queues.Claim.MarkWorkDone): a wait that ends before a person decides
// (a signal, the pool gone, the wrapper killed) gives the item back with
// its work done, and the next claim waits at the gate again instead of
// running the command a second time (spawnRun.resume).
func (m *Manager) awaitGates(ctx context.Context, name string, claim WorkClaim, result string, interrupts <-chan os.Signal) error {
	qc, ok := claim.(*queueClaim)
	if !ok {
		return nil
	}
	b := qc.b
	waiting := false
	var w *watcher.FSWatcher
	wake := make(chan struct{}, 1)
	defer func() {
		if w != nil {
			w.Close()
		}
		if waiting {
			_, _ = m.Transition(name, Working, TransitionOptions{By: "spawn", Reason: "gate decided"})
		}
	}()
	for {
		it, err := b.Get(claim.ItemID())
		if err != nil {
			return err
		}
		// Gates first: a rejection also moves the item to dead/, and the
		// rejection is the reason to report.
		var open []*queues.Gate
		for _, g := range b.ItemGates(it) {
			if g.Stage != queues.StageComplete {
				continue
			}
			switch g.State {
			case queues.GateStateRejected:
				return fmt.Errorf("%w: %s by %s: %s", queues.ErrRejected, g.ID, g.DecidedBy, g.DecisionReason)
			case queues.GateStatePending:
				open = append(open, g)
			}
		}
		if qc.doneBy(it) {
			return nil // the child completed it itself, past its gates
		}
		if it.State != queues.Claimed || it.ClaimAttempt != claim.Attempt() {
			why := it.State
			if it.DeadReason != "" {
				why += ": " + it.DeadReason
			}
			return fmt.Errorf("%w: while waiting at its gate the item became %s", queues.ErrStale, why)
		}
		if len(open) == 0 {
			return nil
		}
		if !waiting {
			if it.WorkDone.IsZero() {
				if _, err := qc.c.MarkWorkDone(result); err != nil {
					return err
				}
			}
			var ids []string
			for _, g := range open {
				ids = append(ids, g.ID)
			}
			reason := "waiting at gate " + strings.Join(ids, ", ") + " (tavern approve)"
			if _, err := m.Transition(name, Waiting, TransitionOptions{By: "spawn", Reason: reason}); err != nil {
				return err
			}
			waiting = true
			_ = m.event(journal.Event{Type: "agent.gated", Kind: "agent", Path: AgentPath(name), Agent: name, Item: it.ID, Queue: it.Queue,
				Data: map[string]any{"gates": ids}})
			dir := filepath.Join(m.Store.Root(), "gates")
			if err := os.MkdirAll(dir, 0o755); err == nil {
				w, _ = watcher.WatchFS(dir, watcher.FSOptions{Reconcile: -1, OnChange: func([]watcher.Change) {
					select {
					case wake <- struct{}{}:
					default:
					}
				}})
			}
			continue // look again now that the watch is on
		}
		t := time.NewTimer(gateRecheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return &interruptedError{sig: syscall.SIGTERM}
		case sig := <-interrupts:
			t.Stop()
			return &interruptedError{sig: sig}
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// interruptedError ends a wait at a gate that a signal (or the caller's
// context) interrupted: the wrapper settles its item as interrupted runs
// do (released, not failed). A cancelled context counts as SIGTERM, as it
// does while the child runs.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string {
	return "interrupted by " + e.sig.String() + " while waiting at a gate"
}
