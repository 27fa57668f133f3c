package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Findings reports what a crash can leave in the queues (for `tavern
// doctor`), changing nothing:
//
//   - duplicate-copy: an item in two state directories (a crash between
//     writing the new copy and removing the old one). Readers already
//     resolve it (the later state wins; a pending and a claimed copy by
//     their updated stamps); Repair moves the losing copy to .trash/.
//   - dead-claim: a claimed item whose holder is dead (its liveness lock
//     is free) or whose lease ran out past the grace; Repair reaps the
//     queue.
//   - journal-gap: an item in done/ with no item.completed event, or in
//     dead/ with neither item.dead nor item.cancelled, in this machine's
//     journal or another's (git sync): the process was killed between
//     the move and its journal append. The directories are the truth;
//     Repair appends the missing event (item.cancelled for a cancelled
//     item), marked "recovered": true.
//   - stale-lock: item lock stripes of a queue that no longer exists,
//     and holder locks of dead Brokers; Repair removes the lock file.
//   - dangling-gate: a pending or claimed item whose gates: names a gate
//     with no document (a crash inside AddGate, which lists the gate
//     before it writes its document): the gate is never passed, so the
//     item is never done. Repair takes the id out of the list, as it was
//     before that AddGate, and journals gate.dropped ("recovered": true).
func (b *Broker) Findings() ([]docstore.Finding, error) {
	names, err := b.QueueNames()
	if err != nil {
		return nil, err
	}
	var out []docstore.Finding
	for _, q := range names {
		fs, err := b.queueFindings(q)
		if err != nil {
			return out, err
		}
		out = append(out, fs...)
	}
	gaps, err := b.journalGaps(names)
	if err != nil {
		return out, err
	}
	out = append(out, gaps...)
	dangling, err := b.danglingGates(names)
	if err != nil {
		return out, err
	}
	out = append(out, dangling...)
	locks, err := b.lockFindings(names)
	return append(out, locks...), err
}

func (b *Broker) queueFindings(queue string) ([]docstore.Finding, error) {
	q, err := b.Queue(queue)
	if err != nil {
		return nil, err
	}
	where := map[string][]string{}
	var ids []string
	for _, st := range schema.ItemStates {
		list, err := b.listDir(queue, st)
		if err != nil {
			return nil, err
		}
		for _, id := range list {
			if len(where[id]) == 0 {
				ids = append(ids, id)
			}
			where[id] = append(where[id], st)
		}
	}
	var out []docstore.Finding
	now := b.now()
	for _, id := range ids {
		states := where[id]
		if len(states) > 1 {
			id := id
			out = append(out, docstore.Finding{Kind: docstore.FindingDuplicate, Path: ItemPath(queue, states[0], id),
				Detail: fmt.Sprintf("item %s is in %s", id, strings.Join(states, " and ")),
				Repair: func() error { return b.resolveCopies(queue, id) }})
			continue
		}
		if states[0] != Claimed {
			continue
		}
		it, err := b.readItem(ItemPath(queue, Claimed, id))
		if err != nil {
			continue // reported by check and Stats
		}
		why := ""
		switch {
		case it.ClaimKind == "liveness" && it.LivenessLock != "":
			if free, err := b.s.LockFree(it.LivenessLock); err == nil && free {
				why = "its holder " + it.ClaimedBy + " is dead (liveness lock " + it.LivenessLock + " is free)"
			}
		case !it.LeaseUntil.IsZero() && now.After(it.LeaseUntil.Add(q.LeaseGrace)):
			why = "its lease ran out at " + schema.FormatTime(it.LeaseUntil)
		}
		if why == "" {
			continue
		}
		out = append(out, docstore.Finding{Kind: docstore.FindingDeadClaim, Path: it.Path, Detail: why,
			Repair: func() error { _, err := b.Reap(queue); return err }})
	}
	return out, nil
}

// resolveCopies keeps the copy of an item that readers already prefer and
// moves the others to .trash/, under the item lock.
func (b *Broker) resolveCopies(queue, id string) error {
	l, err := b.s.Lock(ItemLockKey(queue, id))
	if err != nil {
		return err
	}
	defer l.Unlock()
	type copy struct {
		state   string
		updated time.Time
	}
	var copies []copy
	for _, st := range schema.ItemStates {
		d, err := b.s.Get(ItemPath(queue, st, id))
		if err != nil {
			if errors.Is(err, docstore.ErrNotExist) {
				continue
			}
			return fmt.Errorf("%s: %w (resolve by hand)", ItemPath(queue, st, id), err)
		}
		u, _ := d.Time("updated")
		copies = append(copies, copy{st, u})
	}
	if len(copies) < 2 {
		return nil
	}
	// The later state wins (locate); between pending, claimed and dead
	// copies without a final done one, the newer write wins (resolveDup,
	// staleCopy): a claim, a release or a retry may be the later.
	win := copies[0]
	for _, c := range copies[1:] {
		switch {
		case c.state == Done || win.state == Done:
			if c.state == Done {
				win = c
			}
		case c.updated.After(win.updated):
			win = c
		}
	}
	for _, c := range copies {
		if c != win {
			if err := b.s.DeleteHeld(l, ItemPath(queue, c.state, id)); err != nil {
				return err
			}
		}
	}
	return nil
}

// finalEvents are the events that legitimately put an item in done/ or
// dead/: a completion (by its holder or by hand), a death (failed, reaped
// or rejected at a gate) and a cancel (by hand or by a plan: a [-] box, a
// removed box).
var finalEvents = map[string][]string{
	Done: {EventCompleted},
	Dead: {EventDead, EventCancelled},
}

// journalGaps finds final items whose final event is missing. The events
// of items finished on other machines arrive with the git sync in those
// machines' journals (events/<machine>/), read here too.
func (b *Broker) journalGaps(queues []string) ([]docstore.Finding, error) {
	seen := map[string]bool{} // type + " " + item id
	f := journal.Filter{Types: []string{EventCompleted, EventDead, EventCancelled}}
	_, err := journal.Read(b.s.Root(), f, func(e journal.Event, err error) bool {
		if err == nil {
			seen[e.Type+" "+e.Item] = true
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if err := journal.ReadOthers(b.s.Root(), f, func(_ string, e journal.Event, err error) bool {
		if err == nil {
			seen[e.Type+" "+e.Item] = true
		}
		return true
	}); err != nil {
		return nil, err
	}
	var out []docstore.Finding
	for _, q := range queues {
		for _, st := range []string{Done, Dead} {
			ids, err := b.listDir(q, st)
			if err != nil {
				return out, err
			}
			for _, id := range ids {
				if slices.ContainsFunc(finalEvents[st], func(typ string) bool { return seen[typ+" "+id] }) {
					continue
				}
				rel := ItemPath(q, st, id)
				// The event it lacks: a cancelled item's is item.cancelled.
				typ := finalEvents[st][0]
				if it, err := b.readItem(rel); err == nil && st == Dead && it.Cancelled {
					typ = EventCancelled
				}
				out = append(out, docstore.Finding{Kind: docstore.FindingJournalGap, Path: rel,
					Detail: fmt.Sprintf("item %s is %s but the journal has no %s", id, st, typ),
					Repair: func() error {
						it, err := b.readItem(rel)
						if err != nil {
							return err
						}
						data := map[string]any{"attempt": it.ClaimAttempt, "recovered": true}
						if typ == EventCancelled {
							data = map[string]any{"recovered": true}
							if it.DeadReason != "" {
								data["reason"] = it.DeadReason
							}
						}
						return b.journal(typ, it, it.ClaimedBy, data)
					}})
			}
		}
	}
	return out, nil
}

// lockFindings finds item lock stripes of removed queues and free holder
// locks (their Broker is gone: no holder lock is ever taken twice).
func (b *Broker) lockFindings(queues []string) ([]docstore.Finding, error) {
	keys, err := b.s.LockKeys()
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, q := range queues {
		exists[q] = true
	}
	var out []docstore.Finding
	for _, key := range keys {
		why := ""
		switch {
		case strings.HasPrefix(key, "items/"):
			q, _, _ := strings.Cut(strings.TrimPrefix(key, "items/"), "/")
			if !exists[q] {
				why = "queue " + q + " no longer exists"
			}
		case strings.HasPrefix(key, "holders/"):
			why = "its Broker is gone"
		}
		if why == "" {
			continue
		}
		if free, err := b.s.LockFree(key); err != nil || !free {
			continue
		}
		key := key
		out = append(out, docstore.Finding{Kind: docstore.FindingStaleLock, Path: ".locks/" + key + ".lock", Detail: why,
			Repair: func() error { _, err := b.s.RemoveLock(key); return err }})
	}
	return out, nil
}

// danglingGates finds the items still to do whose gates: list names a
// gate that has no document (AddGate interrupted between its writes).
func (b *Broker) danglingGates(queues []string) ([]docstore.Finding, error) {
	var out []docstore.Finding
	for _, q := range queues {
		for _, st := range []string{Pending, Claimed} {
			// Only items that say gates: are parsed.
			docs, _ := b.s.Grep("queues/"+q+"/"+st, "gates")
			for _, d := range docs {
				it, err := itemFromDoc(d)
				if err != nil {
					continue // reported by check
				}
				lost := b.lostGates(it)
				if len(lost) == 0 {
					continue
				}
				queue, id, rel := q, it.ID, d.Path
				out = append(out, docstore.Finding{Kind: docstore.FindingDanglingGate, Path: rel,
					Detail: fmt.Sprintf("item %s waits on gate %s, which has no document (a gate add was interrupted): it is never passed, so the item is never done",
						id, strings.Join(lost, ", ")),
					Repair: func() error { return b.dropLostGates(queue, id) }})
			}
		}
	}
	return out, nil
}

// lostGates lists the ids of it's gates: list that have no document. An
// item's own id (gate: human) has none until it is decided: not lost.
func (b *Broker) lostGates(it *Item) []string {
	var lost []string
	for _, g := range it.Gates {
		if g == it.ID || schema.ValidName(g) != nil { // a bad name: check reports it
			continue
		}
		if _, err := b.s.Stat(GatePath(g)); errors.Is(err, fs.ErrNotExist) {
			lost = append(lost, g)
		}
	}
	return lost
}

// dropLostGates takes the gates with no document out of item id's gates:
// under its lock, which AddGate holds across both its writes (so a gate
// add in progress is never taken for a crashed one).
func (b *Broker) dropLostGates(queue, id string) error {
	l, err := b.s.Lock(ItemLockKey(queue, id))
	if err != nil {
		return err
	}
	defer l.Unlock()
	loc, err := b.locate(id)
	if err != nil {
		return err
	}
	it, err := b.readItem(loc.path)
	if err != nil {
		return err
	}
	lost := b.lostGates(it)
	if len(lost) == 0 || (it.State != Pending && it.State != Claimed) {
		return nil // repaired (or finished) since it was found
	}
	keep := slices.DeleteFunc(slices.Clone(it.Gates), func(g string) bool { return slices.Contains(lost, g) })
	d, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
		if len(keep) == 0 {
			return d.Edit(nil, "gates")
		}
		return d.SetMany([]docstore.Field{{Key: "gates", Value: keep}})
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range lost {
		_, err := b.j.Append(journal.Event{Type: EventGateDropped, Kind: "item", Path: d.Path, Item: id, Queue: queue, Rev: d.Rev,
			Data: map[string]any{"gate": g, "recovered": true, "why": "no gate document (a gate add was interrupted)"}})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
