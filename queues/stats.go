package queues

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tavernhq/tavern/schema"
)

// Stats is a queue's depth per state and what its pending and claimed
// items are doing. It is a snapshot read without locks.
type Stats struct {
	Queue    string
	Priority int
	Steal    bool
	OnEmpty  string

	Pending, Claimed, Done, Dead int

	Ready   int       // pending items claimable now
	Backoff int       // pending items waiting for not_before
	Waiting int       // pending items waiting for dependencies to finish, or at a claim-stage gate
	Blocked []Blocked // pending items whose dependency is dead or missing

	OldestPending time.Time      // created time of the oldest pending item
	Owners        map[string]int // claimed_by -> number of claims
	DeadOwners    map[string]int // claimed_by -> claims whose holder is dead (its liveness lock is free) and that no reaper has returned yet
	Hung          int            // claims past their lease
	Invalid       []error        // item files that do not parse or validate

	// Elsewhere counts, per machine, the items whose copy here is pending
	// and that the coordination engine says that machine holds (claimed
	// there, not synced yet): StatsWithEngine counts them as claimed (by
	// their holder, in Owners), not pending. Empty without an engine.
	Elsewhere map[string]int
	// DoneElsewhere and DeadElsewhere count, per machine, the items whose
	// copy here is pending and that the engine says that machine finished
	// (done, dead; not synced yet): StatsWithEngine counts them in Done
	// and Dead, not pending. Empty without an engine.
	DoneElsewhere, DeadElsewhere map[string]int
}

// Stats reads the state of one queue. Pending and claimed items are
// parsed (done and dead are only counted).
func (b *Broker) Stats(queue string) (*Stats, error) {
	return b.stats(queue, nil, nil)
}

// StatsWithEngine is Stats of each of names that, with coordination etcd
// or git, also asks the engine which items other machines hold or
// finished: their copies here stay in pending/ until the next sync, yet a
// take here passes them over (and `item done` names their holder), so
// they are counted as claimed, by their holder, in Elsewhere, or as done
// or dead, in DoneElsewhere and DeadElsewhere. The engine is asked once
// for all of names (etcd: two round trips and one per 100 pending items;
// git: one fetch), which is why Stats, which pools call at every tick,
// does not ask it. An engine out of reach leaves the counts as Stats's
// and is returned as view (*EngineViewError), a warning; err is a
// failure.
func (b *Broker) StatsWithEngine(names []string) (stats []*Stats, view, err error) {
	return b.StatsWithEngineWithin(names, 0)
}

// StatsWithEngineWithin is StatsWithEngine for a listing that accepts the
// engine's view up to maxAge old (git: the claim refs an earlier command
// fetched, without a fetch; 0: ask), as ElsewhereWithin; a view that old
// is said in view, an *EngineViewAgeError.
func (b *Broker) StatsWithEngineWithin(names []string, maxAge time.Duration) (stats []*Stats, view, err error) {
	prefix, path := "items/", "queues"
	if len(names) == 1 {
		prefix, path = ItemKey(names[0], ""), "queues/"+names[0]
	}
	var va *ViewAge
	if maxAge > 0 {
		va = &ViewAge{MaxAge: maxAge}
	}
	var held, finished map[string]ClaimState
	if len(names) > 0 {
		held, view = b.heldElsewhere(prefix, path, va)
	}
	if len(names) > 0 && view == nil {
		finished, view = b.finishedElsewhere(names, prefix, path, held, va)
	}
	if view == nil && va != nil && !va.At.IsZero() {
		view = &EngineViewAgeError{Op: "list", Path: path, At: va.At, Now: time.Now(), MaxAge: maxAge}
	}
	for _, n := range names {
		st, err := b.stats(n, held, finished)
		if err != nil {
			return nil, view, err
		}
		stats = append(stats, st)
	}
	return stats, view, nil
}

// stats is Stats counting the pending items in held (item key -> the
// engine's claim on another machine) as claimed there, and those in
// finished (item key -> the engine's record) as done or dead there.
func (b *Broker) stats(queue string, held, finished map[string]ClaimState) (*Stats, error) {
	q, err := b.Queue(queue)
	if err != nil {
		return nil, err
	}
	st := &Stats{Queue: q.Name, Priority: q.Priority, Steal: q.Steal, OnEmpty: q.OnEmpty, Owners: map[string]int{}, DeadOwners: map[string]int{}, Elsewhere: map[string]int{},
		DoneElsewhere: map[string]int{}, DeadElsewhere: map[string]int{}}
	now := b.now()
	counts := map[string]*int{Pending: &st.Pending, Claimed: &st.Claimed, Done: &st.Done, Dead: &st.Dead}
	// An item claimed while the directories are read (a claim creates
	// claimed/ID before it removes pending/ID) is listed in pending/ and
	// then in claimed/: it is counted once, as claimed. Counted ready as
	// well, a pool over one item started a second drone for it.
	pendingAs := map[string]*int{} // pending id -> the counter it went to (nil: none)
	for _, state := range schema.ItemStates {
		ids, err := b.listDir(q.Name, state)
		if err != nil {
			return nil, err
		}
		*counts[state] += len(ids) // +=: Claimed already counts pending copies held elsewhere
		if state != Pending && state != Claimed {
			continue
		}
		for _, id := range ids {
			if state == Pending {
				pendingAs[id] = nil
			} else if c, ok := pendingAs[id]; ok {
				st.Pending--
				if c != nil {
					*c--
				}
				st.Blocked = slices.DeleteFunc(st.Blocked, func(bl Blocked) bool { return bl.ID == id })
			}
			it, err := b.readItem(ItemPath(q.Name, state, id))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if badFile(err) {
					st.Invalid = append(st.Invalid, err)
					continue
				}
				return nil, err
			}
			if state == Claimed {
				st.Owners[it.ClaimedBy]++
				if b.holderDead(it) {
					st.DeadOwners[it.ClaimedBy]++
				}
				if !it.LeaseUntil.IsZero() && now.After(it.LeaseUntil) {
					st.Hung++
				}
				continue
			}
			if h, ok := held[ItemKey(q.Name, id)]; ok {
				delete(pendingAs, id) // counted as claimed already
				st.Pending--
				st.Claimed++
				st.Owners[h.Holder]++
				st.Elsewhere[h.Machine]++
				continue
			}
			if f, ok := finished[ItemKey(q.Name, id)]; ok {
				delete(pendingAs, id) // counted as done or dead already
				st.Pending--
				if f.Finished == "dead" {
					st.Dead++
					st.DeadElsewhere[f.Machine]++
				} else {
					st.Done++
					st.DoneElsewhere[f.Machine]++
				}
				continue
			}
			created := it.Created
			if created.IsZero() {
				created = idTime(id)
			}
			if !created.IsZero() && (st.OldestPending.IsZero() || created.Before(st.OldestPending)) {
				st.OldestPending = created
			}
			switch {
			case it.NotBefore.After(now):
				st.Backoff++
				pendingAs[id] = &st.Backoff
			default:
				ready := true
			deps:
				for _, dep := range it.DependsOn {
					switch s := b.itemState(q.Name, dep); s {
					case Done:
						continue
					case Dead, "":
						if s == "" {
							s = "missing"
						}
						st.Blocked = append(st.Blocked, Blocked{ID: id, Queue: q.Name, Path: it.Path, Dep: dep, DepState: s})
					default:
						st.Waiting++
						pendingAs[id] = &st.Waiting
					}
					ready = false
					break deps
				}
				switch {
				case ready && b.claimGated(it, &Diagnostics{}):
					// Take passes it over until a person or a timer
					// opens its gate: a pool must not start a drone
					// for it (one a second, finding nothing).
					st.Waiting++
					pendingAs[id] = &st.Waiting
				case ready:
					st.Ready++
					pendingAs[id] = &st.Ready
				}
			}
		}
	}
	return st, nil
}

// Elsewhere is what a listing of the items of names asks the
// coordination engine, as StatsWithEngine does: the item keys another
// machine holds or finished, whose copies here stay in pending/ until the
// next sync and which a take here passes over (nil without an engine). An
// engine out of reach is returned as view (*EngineViewError), a warning:
// the listing shows this machine's state.
func (b *Broker) Elsewhere(names []string) (keys map[string]ClaimState, view error) {
	return b.ElsewhereWithin(names, nil)
}

// ElsewhereWithin is Elsewhere for a listing that accepts the engine's
// view up to va.MaxAge old (git: the claim refs an earlier command
// fetched, without a fetch), and learns in va.At when that view was
// fetched (zero: asked now). A claim is never decided on it: take always
// asks.
func (b *Broker) ElsewhereWithin(names []string, va *ViewAge) (keys map[string]ClaimState, view error) {
	prefix, path := "items/", "queues"
	if len(names) == 1 {
		prefix, path = ItemKey(names[0], ""), "queues/"+names[0]
	}
	held, view := b.heldElsewhere(prefix, path, va)
	if view != nil {
		return nil, view
	}
	finished, view := b.finishedElsewhere(names, prefix, path, held, va)
	if view != nil {
		return held, view
	}
	for k, st := range finished {
		if held == nil {
			held = map[string]ClaimState{}
		}
		held[k] = st
	}
	return held, nil
}

// listingCtx is ctx for a read-only listing (ForListing) that accepts
// the view va allows, if any.
func listingCtx(ctx context.Context, va *ViewAge) context.Context {
	ctx = ForListing(ctx)
	if va != nil {
		ctx = WithViewAge(ctx, va)
	}
	return ctx
}

// heldElsewhere returns the item keys under prefix that the engine says
// another machine holds; nil without an engine (or one that cannot list).
// path names what is listed, in the error.
func (b *Broker) heldElsewhere(prefix, path string, va *ViewAge) (map[string]ClaimState, error) {
	l, ok := b.coord.(Lister)
	if b.coord == nil || !ok {
		return nil, nil
	}
	ctx, cancel := b.coordCtx()
	defer cancel()
	all, err := l.List(listingCtx(ctx, va), prefix)
	if err != nil {
		return nil, &EngineViewError{Op: "list", Path: path, Err: err}
	}
	held := map[string]ClaimState{}
	for k, st := range all {
		if st.Held && st.Machine != b.coord.Machine() {
			held[k] = st
		}
	}
	return held, nil
}

// finishedElsewhere returns the items of names whose copy here is pending
// (and not in held) that the engine says another machine finished; nil
// without an engine (or one that cannot say). prefix and path are
// heldElsewhere's.
func (b *Broker) finishedElsewhere(names []string, prefix, path string, held map[string]ClaimState, va *ViewAge) (map[string]ClaimState, error) {
	fl, ok := b.coord.(FinishedLister)
	if b.coord == nil || !ok {
		return nil, nil
	}
	var keys []string
	for _, n := range names {
		ids, err := b.listDir(n, Pending)
		if err != nil {
			continue // stats reports it
		}
		for _, id := range ids {
			if k := ItemKey(n, id); !isHeld(held, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	ctx, cancel := b.coordCtx()
	defer cancel()
	all, err := fl.Finished(listingCtx(ctx, va), prefix, keys)
	if err != nil {
		return nil, &EngineViewError{Op: "list", Path: path, Err: err}
	}
	out := map[string]ClaimState{}
	for k, st := range all {
		if st.Finished != "" && st.Machine != b.coord.Machine() {
			out[k] = st
		}
	}
	return out, nil
}

// idTime is the creation time embedded in an id made by NewItemID.
func idTime(id string) time.Time {
	if len(id) < 5 {
		return time.Time{}
	}
	u, err := uuid.Parse(id[4:])
	if err != nil || u.Version() != 7 {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec)
}

// holderDead reports whether a liveness claim's holder is known dead: its
// liveness lock can be taken (and is let go at once). Lease claims have no
// holder to ask (their expiry is Hung).
func (b *Broker) holderDead(it *Item) bool {
	if it.ClaimKind != "liveness" || it.LivenessLock == "" {
		return false
	}
	free, err := b.s.LockFree(it.LivenessLock)
	return err == nil && free
}

func isHeld(held map[string]ClaimState, key string) bool {
	_, ok := held[key]
	return ok
}
