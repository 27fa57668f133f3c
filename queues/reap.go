package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// ReapReport says what a reap did.
type ReapReport struct {
	Returned []*Item   // owner dead or lease over: back in pending/
	Dead     []*Item   // the owner died on the item's last attempt: moved to dead/
	Hung     []*Item   // lease expired while the holder is alive: returned after lease_grace
	Invalid  []error   // claimed files that do not parse (left in place)
	Next     time.Time // earliest moment a live claim's lease (plus grace) runs out
}

func (r *ReapReport) next(t time.Time) {
	if r.Next.IsZero() || t.Before(r.Next) {
		r.Next = t
	}
}

// Reap returns claimed items whose owner is gone to pending/ (or dead/
// past max_attempts) and reports hung ones. With no names it reaps every
// queue. The rules, per claimed item:
//
//   - claim_kind liveness: the reaper tries the item's liveness_lock. If
//     it can take it, the holder is dead (the kernel dropped its flock):
//     the item goes back at once, whatever its lease says. The attempt was
//     counted when it was claimed.
//   - the holder is alive but lease_until has passed: the item is hung.
//     The first reaper to see it sets hung_since and journals
//     item.lease_expired; once lease_until + the queue's lease_grace has
//     passed the item goes back (the hung holder's later done/fail is
//     refused by the fencing check).
//   - claim_kind lease: nothing but the lease keeps it: it goes back as
//     soon as lease_until has passed.
func (b *Broker) Reap(queues ...string) (*ReapReport, error) {
	rep := &ReapReport{}
	var qs []*Queue
	if len(queues) == 0 {
		all, errs := b.Queues()
		rep.Invalid = append(rep.Invalid, errs...)
		qs = all
	} else {
		for _, n := range queues {
			q, err := b.Queue(n)
			if err != nil {
				return rep, err
			}
			qs = append(qs, q)
		}
	}
	for _, q := range qs {
		if err := b.reapQueue(q, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// maybeReap reaps q inside Take, at most every ReapInterval unless force.
func (b *Broker) maybeReap(q *Queue, force bool, diag *Diagnostics) {
	now := time.Now()
	b.mu.Lock()
	last := b.lastReap[q.Name]
	due := force || last.IsZero() || now.Sub(last) >= b.reapGap
	if due {
		b.lastReap[q.Name] = now
	}
	b.mu.Unlock()
	if !due {
		return
	}
	rep := &ReapReport{}
	if err := b.reapQueue(q, rep); err != nil {
		diag.Invalid = append(diag.Invalid, err)
	}
	diag.Invalid = append(diag.Invalid, rep.Invalid...)
	diag.wakeAt(rep.Next)
}

func (b *Broker) reapQueue(q *Queue, rep *ReapReport) error {
	ids, err := b.listDir(q.Name, Claimed)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := b.reapOne(q, id, rep); err != nil {
			return err
		}
	}
	return nil
}

// leftover reports whether a claimed copy is stale because the item's
// done or dead copy exists (a crash between writing the new copy and
// removing the old).
func (b *Broker) leftover(it *Item) bool {
	for _, st := range []string{Done, Dead} {
		if b.exists(ItemPath(it.Queue, st, it.ID)) {
			return true
		}
	}
	return false
}

func (b *Broker) reapOne(q *Queue, id string, rep *ReapReport) error {
	l, ok, err := b.s.TryLock(ItemLockKey(q.Name, id))
	if err != nil {
		return err
	}
	if !ok {
		return nil // being changed right now; the next reap looks again
	}
	defer l.Unlock()
	rel := ItemPath(q.Name, Claimed, id)
	it, err := b.readItem(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if badFile(err) {
			rep.Invalid = append(rep.Invalid, err)
			return nil
		}
		return err
	}
	if b.leftover(it) {
		return b.s.DeleteHeld(l, rel)
	}
	if b.coord != nil {
		return b.coordReap(l, q, it, rep)
	}
	now := b.now()
	alive := false
	switch {
	case it.ClaimKind == "liveness" && it.LivenessLock != "":
		// A shared probe first: an exclusive try would, for its instant,
		// make this reaper look like the owner to another process's probe.
		free, err := b.s.LockFree(it.LivenessLock)
		if err != nil {
			return err
		}
		alive = !free
		if free && (strings.HasPrefix(it.LivenessLock, "holders/") || strings.HasPrefix(it.LivenessLock, "instances/")) {
			// A dead Broker's or instance's lock: nobody will use it
			// again. An agent's lock is not ours to remove.
			if ll, ok, err := b.s.TryLock(it.LivenessLock); err == nil && ok {
				ll.Remove()
			}
		}
	default:
		alive = it.LeaseUntil.IsZero() || now.Before(it.LeaseUntil)
	}
	if !alive {
		why := "owner died (its liveness lock " + it.LivenessLock + " was free)"
		if it.ClaimKind != "liveness" || it.LivenessLock == "" {
			why = "lease expired at " + schema.FormatTime(it.LeaseUntil)
		}
		return b.giveBack(l, q, it, why, rep)
	}
	if it.LeaseUntil.IsZero() || now.Before(it.LeaseUntil) {
		if !it.LeaseUntil.IsZero() {
			rep.next(it.LeaseUntil)
		}
		return nil
	}
	// Alive but past its lease: hung.
	if now.Before(it.LeaseUntil.Add(q.LeaseGrace)) {
		if it.HungSince.IsZero() {
			d, err := b.s.UpdateHeld(l, rel, func(d *docstore.Doc) error { return d.Set("hung_since", now) })
			if err != nil {
				return err
			}
			if it, err = itemFromDoc(d); err != nil {
				return err
			}
			_ = b.journal(EventLeaseExpired, it, it.ClaimedBy, map[string]any{"attempt": it.ClaimAttempt,
				"lease_until": schema.FormatTime(it.LeaseUntil), "reap_after": schema.FormatTime(it.LeaseUntil.Add(q.LeaseGrace))})
		}
		rep.Hung = append(rep.Hung, it)
		rep.next(it.LeaseUntil.Add(q.LeaseGrace))
		return nil
	}
	why := fmt.Sprintf("lease expired at %s and the holder stayed hung past the %s grace", schema.FormatTime(it.LeaseUntil), q.LeaseGrace)
	if strings.HasPrefix(it.LivenessLock, "instances/") {
		// A spawn instance's tree holds the lock: a stopped wrapper stops
		// renewing while its child may still be executing the item. Kill
		// the tree first, so that the item never runs twice at once.
		if killed, _, err := b.s.KillLockHolders(it.LivenessLock, hungKillGrace); err == nil && len(killed) > 0 {
			why += fmt.Sprintf("; its processes %v were killed", killed)
		}
		if ll, ok, err := b.s.TryLock(it.LivenessLock); err == nil && ok {
			ll.Remove()
		}
	}
	return b.giveBack(l, q, it, why, rep)
}

// hungKillGrace bounds the wait for a hung instance's SIGKILLed processes
// to exit (only an uninterruptible sleep delays them).
const hungKillGrace = 5 * time.Second

// giveBack returns a reaped item to pending/ (its attempt stays counted),
// or to dead/ if that was its last attempt.
func (b *Broker) giveBack(l *docstore.Lock, q *Queue, it *Item, why string, rep *ReapReport) error {
	max := q.MaxAttempts
	if it.MaxAttempts > 0 {
		max = it.MaxAttempts
	}
	if it.Attempts >= max {
		out, err := b.toDead(l, it, "", "reaped: "+why, fmt.Sprintf("reaped after %d of %d attempts: %s", it.Attempts, max, why))
		if err != nil {
			return err
		}
		rep.Dead = append(rep.Dead, out)
		return nil
	}
	now := b.now()
	d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Pending, it.ID), func(d *docstore.Doc) error {
		if err := setFields(d, docstore.Field{Key: "last_error", Value: "reaped: " + why}, docstore.Field{Key: "updated", Value: now}); err != nil {
			return err
		}
		return clearClaim(d)
	})
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // a pending copy exists (crash leftover): keep the newer
			b.resolveDup(l, q.Name, it.ID, &Diagnostics{})
			return nil
		}
		return err
	}
	out, err := itemFromDoc(d)
	if err != nil {
		return err
	}
	_ = b.journal(EventReaped, out, it.ClaimedBy, map[string]any{"attempt": it.ClaimAttempt, "reason": why, "liveness_lock": it.LivenessLock})
	rep.Returned = append(rep.Returned, out)
	return nil
}
