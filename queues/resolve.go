package queues

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Event types of resolve.go.
const (
	EventCancelled = "item.cancelled" // pending or dead -> dead, cancelled: true
	EventAnnotated = "item.annotated" // fields recorded by a workflow step (worktree, branch, escalation...)
)

// ResolveOptions say how a pending or dead item is finished by hand.
type ResolveOptions struct {
	// Cancel moves the item to dead/ with cancelled: true instead of
	// completing it.
	Cancel bool
	// Reason is the result (completion) or the cancel reason.
	Reason string
	// By is who resolved it (a person, "plans/NAME.md").
	By string
	// External marks a change a person made outside the engine (a box
	// ticked by hand): the event says so.
	External bool
}

// Resolve completes (or, with Cancel, cancels) an item that nobody holds:
// a pending or dead item goes to done/ (or dead/ with cancelled: true)
// under its item lock. A claimed item is refused with ErrState: its
// holder decides. A done item stays done (completing it again is a no-op;
// cancelling it is ErrState). Completing by hand respects the item's
// gates: a complete-stage gate that has not passed gives ErrGated.
func (b *Broker) Resolve(id string, opt ResolveOptions) (*Item, error) {
	var out *Item
	err := b.editItem("resolve", id, func(l *docstore.Lock, it *Item) error {
		switch it.State {
		case Claimed:
			return &ItemError{Op: "resolve", ID: id, Path: it.Path, Err: fmt.Errorf("%w: claimed by %s (attempt %d)", ErrState, it.ClaimedBy, it.ClaimAttempt)}
		case Done:
			if opt.Cancel {
				return &ItemError{Op: "cancel", ID: id, Path: it.Path, Err: fmt.Errorf("%w: the item is done", ErrState)}
			}
			out = it
			return nil
		case Dead:
			if opt.Cancel && it.Cancelled {
				out = it
				return nil
			}
		}
		now := b.now()
		data := map[string]any{"from": it.State}
		if opt.By != "" {
			data["by"] = opt.By
		}
		if opt.External {
			data["external"] = true
		}
		if opt.Reason != "" {
			data["reason"] = opt.Reason
		}
		if opt.Cancel {
			why := "cancelled"
			if opt.Reason != "" {
				why += ": " + opt.Reason
			}
			if err := b.coordSettle(it, "dead", why); err != nil { // several machines (coord.go)
				return err
			}
			d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Dead, id), func(d *docstore.Doc) error {
				f := []docstore.Field{{Key: "cancelled", Value: true}, {Key: "dead_reason", Value: why}, {Key: "updated", Value: now}}
				if opt.By != "" {
					f = append(f, docstore.Field{Key: "resolved_by", Value: opt.By})
				}
				return d.Edit(f, "not_before")
			})
			if err != nil {
				return err
			}
			if out, err = itemFromDoc(d); err != nil {
				return err
			}
			_ = b.journal(EventCancelled, out, "", data)
			return nil
		}
		if err := b.completeGate(it); err != nil {
			return &ItemError{Op: "resolve", ID: id, Path: it.Path, Err: err}
		}
		if err := b.coordSettle(it, "done", opt.Reason); err != nil { // several machines (coord.go)
			return err
		}
		d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Done, id), func(d *docstore.Doc) error {
			summary, _ := resultText(opt.Reason)
			f := []docstore.Field{{Key: "completed", Value: now}, {Key: "updated", Value: now}}
			if summary != "" {
				f = append(f, docstore.Field{Key: "result", Value: summary})
			}
			if opt.By != "" {
				f = append(f, docstore.Field{Key: "resolved_by", Value: opt.By})
			}
			return d.Edit(f, "not_before", "dead_reason")
		})
		if err != nil {
			return err
		}
		if out, err = itemFromDoc(d); err != nil {
			return err
		}
		_ = b.journal(EventCompleted, out, "", data)
		return nil
	})
	return out, err
}

// Annotate sets fields of item id in whatever state it is in, under its
// item lock, and journals item.annotated (workflow steps record the
// worktree, branch, merge commit or escalation this way). Fields the
// engine owns (claims, attempts, states) are refused.
func (b *Broker) Annotate(id string, fields []docstore.Field, del ...string) (*Item, error) {
	for _, f := range fields {
		if engineField(f.Key) {
			return nil, &ItemError{Op: "annotate", ID: id, Err: fmt.Errorf("%w: %s is the engine's", ErrBadOption, f.Key)}
		}
	}
	for _, k := range del {
		if engineField(k) {
			return nil, &ItemError{Op: "annotate", ID: id, Err: fmt.Errorf("%w: %s is the engine's", ErrBadOption, k)}
		}
	}
	var out *Item
	err := b.editItem("annotate", id, func(l *docstore.Lock, it *Item) error {
		now := b.now()
		d, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
			return d.Edit(append(append([]docstore.Field(nil), fields...), docstore.Field{Key: "updated", Value: now}), del...)
		})
		if err != nil {
			return err
		}
		if out, err = itemFromDoc(d); err != nil {
			return err
		}
		var keys []string
		for _, f := range fields {
			keys = append(keys, f.Key)
		}
		_ = b.journal(EventAnnotated, out, "", map[string]any{"fields": strings.Join(append(keys, del...), ",")})
		return nil
	})
	return out, err
}

func engineField(k string) bool {
	switch k {
	case "id", "queue", "attempts", "claimed_by", "claim_attempt", "claim_kind", "liveness_lock", "lease_until", "hung_since",
		"started", "completed", "work_done", "work_result", schema.VersionField:
		return true
	}
	return false
}

// AddDependency makes pending item id depend on dep too (plans: a box
// added by hand under an open parent). Cycles are refused (ErrCycle).
func (b *Broker) AddDependency(id, dep string) (*Item, error) {
	var out *Item
	err := b.editItem("depend", id, func(l *docstore.Lock, it *Item) error {
		if it.State != Pending {
			return &ItemError{Op: "depend", ID: id, Path: it.Path, Err: fmt.Errorf("%w: the item is %s", ErrState, it.State)}
		}
		if slices.Contains(it.DependsOn, dep) {
			out = it
			return nil
		}
		if dep == id {
			return &ItemError{Op: "depend", ID: id, Path: it.Path, Err: fmt.Errorf("%w: %s -> %s", ErrCycle, id, id)}
		}
		if err := b.checkDeps([]string{dep}); err != nil {
			return &ItemError{Op: "depend", ID: id, Path: it.Path, Err: err}
		}
		// dep must not (transitively) depend on id.
		if b.reaches(dep, id, map[string]bool{}) {
			return &ItemError{Op: "depend", ID: id, Path: it.Path, Err: fmt.Errorf("%w: %s already depends on %s", ErrCycle, dep, id)}
		}
		var err error
		out, err = b.setDeps(l, it, append(append([]string(nil), it.DependsOn...), dep))
		return err
	})
	return out, err
}

// RemoveDependency makes pending item id stop waiting for dep (plans: a
// task cancelled in its plan is not waited for). One it does not have is
// a no-op.
func (b *Broker) RemoveDependency(id, dep string) (*Item, error) {
	var out *Item
	err := b.editItem("undepend", id, func(l *docstore.Lock, it *Item) error {
		if it.State != Pending {
			return &ItemError{Op: "undepend", ID: id, Path: it.Path, Err: fmt.Errorf("%w: the item is %s", ErrState, it.State)}
		}
		deps := slices.DeleteFunc(slices.Clone(it.DependsOn), func(d string) bool { return d == dep })
		if len(deps) == len(it.DependsOn) {
			out = it
			return nil
		}
		var err error
		out, err = b.setDeps(l, it, deps)
		return err
	})
	return out, err
}

// setDeps writes deps as item it's depends_on (none: the field goes);
// the caller holds the item lock l.
func (b *Broker) setDeps(l *docstore.Lock, it *Item, deps []string) (*Item, error) {
	d, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
		if len(deps) == 0 {
			return d.Edit([]docstore.Field{{Key: "updated", Value: b.now()}}, "depends_on")
		}
		return d.SetMany([]docstore.Field{{Key: "depends_on", Value: deps}, {Key: "updated", Value: b.now()}})
	})
	if err != nil {
		return nil, err
	}
	return itemFromDoc(d)
}

// reaches reports whether from depends (transitively) on to.
func (b *Broker) reaches(from, to string, seen map[string]bool) bool {
	if seen[from] {
		return false
	}
	seen[from] = true
	it, err := b.Get(from)
	if err != nil {
		return false
	}
	for _, d := range it.DependsOn {
		if d == to || b.reaches(d, to, seen) {
			return true
		}
	}
	return false
}

// reopenGates puts the rejected human gates of it back to pending (a
// retried item needs a new decision). Called with the item lock held.
func (b *Broker) reopenGates(it *Item) {
	for _, g := range b.ItemGates(it) {
		if g.Status != GateRejected || g.Implicit || g.Doc == nil {
			continue
		}
		now := b.now()
		// UpdateHeld: Update would take the item lock (LockerItem),
		// which this caller holds.
		if _, err := b.s.UpdateHeld(nil, g.Path, func(d *docstore.Doc) error {
			return d.Edit([]docstore.Field{{Key: "status", Value: GatePending}, {Key: "updated", Value: now}},
				"decided_by", "decided_at", "decision_reason", "approval")
		}); err == nil {
			_ = b.gateEvent(EventGateReopened, g, "", map[string]any{"gate": g.ID, "was": g.Status})
		}
	}
}
