package tuples

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// TokenType is the tuple type of resource token slots: a token NAME with
// count N is N tuples tuples/token/<id>.md with token: NAME and slot: i.
// A free slot is a live tuple; a held slot sits in tuples/token/.taken/
// with its holder recorded in the file.
const TokenType = "token"

// How a held slot is kept alive, recorded as hold: in the slot file.
const (
	// HoldProcess: held for as long as the acquiring process holds the
	// slot's lock (the library API in a long-running process). The kernel
	// drops the lock when the process dies; the slot then comes back.
	HoldProcess = "process"
	// HoldAgent: held for as long as the agent's liveness lock is held
	// (by its spawn wrapper); the slot comes back when the agent's process
	// dies, or when its lease (if one was given) runs out.
	HoldAgent = "agent"
	// HoldLease: held until lease_until, for one-shot holders that nothing
	// alive stands for (a CLI acquire without a live --as agent).
	HoldLease = "lease"
)

var holdFields = []string{"hold", "held_by", "liveness_lock", "lease_until", "acquired", "holder"}

func tokenInitKey(name string) string { return "tokens/" + name }

// Token is one held slot of a resource token.
type Token struct {
	Name       string
	ID         string // the slot's tuple id
	Slot       int64
	Epoch      int64 // incremented by every acquisition: the fencing token
	Hold       string
	HeldBy     string
	LeaseUntil time.Time // zero: no lease

	sp   *Space
	lock *docstore.Lock
}

// Handle is what a holder needs to release the slot: "ID:EPOCH". A
// release with a stale epoch is refused, so a holder whose slot was
// reclaimed cannot free someone else's.
func (t *Token) Handle() string { return t.ID + ":" + strconv.FormatInt(t.Epoch, 10) }

// AcquireOptions say who holds a token and what keeps it held.
type AcquireOptions struct {
	// As is the agent the slot is held for. If the agent's liveness lock
	// is held (its spawn wrapper is running), the slot is tied to it;
	// otherwise TTL is required and the hold is a lease.
	As string
	// TTL, when > 0, bounds the hold: the slot comes back at
	// acquired+TTL even if its holder is alive. With neither As nor TTL
	// the hold is the calling process's lifetime (HoldProcess).
	TTL time.Duration
}

// InitToken makes token name have exactly count slots: it adds slots, or
// archives free ones; it refuses (ErrTokenCount) to drop held slots. It
// returns how many slots it added (negative: removed).
func (sp *Space) InitToken(name string, count int) (int, error) {
	if err := schema.ValidName(name); err != nil {
		return 0, fmt.Errorf("token name: %w", err)
	}
	if count < 0 {
		return 0, fmt.Errorf("%w: negative count %d", ErrBadTuple, count)
	}
	l, err := sp.store.Lock(tokenInitKey(name))
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	_, _ = sp.reapTaken(TokenType)
	free, held, err := sp.slots(name)
	if err != nil {
		return 0, err
	}
	total := len(free) + len(held)
	var maxSlot int64 = -1
	for _, d := range append(append([]*docstore.Doc{}, free...), held...) {
		if n, ok := d.Int("slot"); ok && n > maxSlot {
			maxSlot = n
		}
	}
	switch {
	case count > total:
		for i := 0; i < count-total; i++ {
			maxSlot++
			if _, err := sp.Out(TokenType, []docstore.Field{{Key: "token", Value: name}, {Key: "slot", Value: maxSlot}, {Key: "epoch", Value: 0}}, OutOptions{}); err != nil {
				return i, err
			}
		}
	case count < total:
		drop := total - count
		if drop > len(free) {
			return 0, fmt.Errorf("%w: %s has %d slots, %d held; release some first", ErrTokenCount, name, total, len(held))
		}
		// Drop the highest slots first so numbering stays compact.
		sort.Slice(free, func(i, j int) bool { a, _ := free[i].Int("slot"); b, _ := free[j].Int("slot"); return a > b })
		removed := 0
		for _, d := range free {
			if removed == drop {
				break
			}
			ok, err := sp.discard(TokenType, d.String("id"), nil)
			if err != nil {
				return -removed, err
			}
			if ok {
				removed++
			}
		}
		if removed < drop {
			return -removed, fmt.Errorf("%w: %s: slots were acquired while shrinking; %d of %d removed", ErrTokenCount, name, removed, drop)
		}
	}
	sp.event("token.init", journal.Event{Data: map[string]any{"token": name, "count": count, "was": total}})
	return count - total, nil
}

// slots returns the free and held slot documents of token name.
func (sp *Space) slots(name string) (free, held []*docstore.Doc, err error) {
	p := Pattern{{Cond: docstore.Cond{Field: "token", Op: docstore.OpEq, Value: name}}}
	err = sp.scan(TokenType, p, nil, func(d *docstore.Doc, _ map[string]any) bool {
		free = append(free, d)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	held, err = sp.heldSlots(name)
	return free, held, err
}

func (sp *Space) heldSlots(name string) ([]*docstore.Doc, error) {
	all, err := sp.allHeld()
	if err != nil {
		return nil, err
	}
	var out []*docstore.Doc
	for _, d := range all {
		if d.String("token") == name {
			out = append(out, d)
		}
	}
	return out, nil
}

// TryAcquire takes a free slot of token name, first returning slots whose
// holders are gone. It fails at once with ErrTokenBusy when every slot is
// held, ErrUnknownToken when the token has no slots.
//
// The returned Token holds the slot's lock: for HoldProcess that lock is
// the hold. Call Release when done, or Detach to leave an agent or lease
// hold in place after this process exits.
func (sp *Space) TryAcquire(name string, opt AcquireOptions) (*Token, error) {
	if err := schema.ValidName(name); err != nil {
		return nil, fmt.Errorf("token name: %w", err)
	}
	if opt.As != "" {
		if err := schema.ValidName(opt.As); err != nil {
			return nil, fmt.Errorf("agent name: %w", err)
		}
	}
	if opt.TTL < 0 {
		return nil, fmt.Errorf("%w: negative TTL %s", ErrBadTuple, opt.TTL)
	}
	hold, lockKey := HoldProcess, ""
	switch {
	case opt.As != "" && sp.lockHeld(schema.AgentLockKey(opt.As)):
		hold, lockKey = HoldAgent, schema.AgentLockKey(opt.As)
	case opt.As != "" && opt.TTL == 0:
		return nil, fmt.Errorf("%w: %s (lock %s is free); run it under `tavern spawn` or give a --ttl", ErrHolderNotAlive, opt.As, schema.AgentLockKey(opt.As))
	case opt.TTL > 0:
		hold = HoldLease
	}
	_, _ = sp.reapTaken(TokenType)
	p := Pattern{{Cond: docstore.Cond{Field: "token", Op: docstore.OpEq, Value: name}}}
	var got *Token
	var ferr error
	err := sp.scan(TokenType, p, nil, func(d *docstore.Doc, _ map[string]any) bool {
		got, ferr = sp.acquireSlot(name, d.String("id"), hold, lockKey, opt)
		return got == nil && ferr == nil
	})
	if err == nil {
		err = ferr
	}
	if err != nil || got != nil {
		return got, err
	}
	held, err := sp.heldSlots(name)
	if err != nil {
		return nil, err
	}
	if len(held) == 0 {
		if free, _, _ := sp.slots(name); len(free) > 0 {
			// Free here, held on other machines (coord.go).
			return nil, fmt.Errorf("%s: %w (held on other machines)", name, ErrTokenBusy)
		}
		return nil, fmt.Errorf("%s: %w", name, ErrUnknownToken)
	}
	return nil, fmt.Errorf("%s: %w (%d held)", name, ErrTokenBusy, len(held))
}

func (sp *Space) acquireSlot(name, id, hold, lockKey string, opt AcquireOptions) (*Token, error) {
	from, to := tuplePath(TokenType, id), takenPath(TokenType, id)
	l, err := sp.store.Claim(tupleLockKey(TokenType, id), from, to)
	if err != nil {
		if errors.Is(err, docstore.ErrLost) {
			return nil, nil
		}
		return nil, err
	}
	putBack := func(err error) (*Token, error) {
		_ = sp.store.Rename(to, from)
		l.Unlock()
		return nil, err
	}
	d, err := sp.store.Get(to)
	if err != nil || d.String("token") != name {
		return putBack(nil) // changed by hand since we read it
	}
	now := sp.now()
	epoch, _ := d.Int("epoch")
	epoch++
	slot, _ := d.Int("slot")
	heldBy := opt.As
	if heldBy == "" {
		host, _ := os.Hostname()
		heldBy = fmt.Sprintf("pid %d on %s", os.Getpid(), host)
	}
	fence, err := sp.coordAcquire(name, id, heldBy, hold, opt) // several machines (coord.go)
	if err != nil {
		if errors.Is(err, errSlotElsewhere) {
			return putBack(nil)
		}
		return putBack(err)
	}
	t := &Token{Name: name, ID: id, Slot: slot, Epoch: epoch, Hold: hold, HeldBy: heldBy, sp: sp, lock: l}
	set := []docstore.Field{{Key: "epoch", Value: epoch}, {Key: "hold", Value: hold}, {Key: "held_by", Value: heldBy}, {Key: "acquired", Value: now}}
	if fence > 0 {
		set = append(set, docstore.Field{Key: "claim_fence", Value: fence})
	}
	if lockKey != "" {
		set = append(set, docstore.Field{Key: "liveness_lock", Value: lockKey})
	}
	if opt.TTL > 0 {
		t.LeaseUntil = now.Add(opt.TTL)
		set = append(set, docstore.Field{Key: "lease_until", Value: t.LeaseUntil})
	}
	if err := d.SetMany(set); err != nil {
		return putBack(err)
	}
	if err := sp.store.WriteFile(to, d.Bytes()); err != nil {
		return putBack(err)
	}
	sp.event("token.acquired", journal.Event{Path: to, Agent: opt.As, Data: map[string]any{
		"token": name, "id": id, "slot": slot, "epoch": epoch, "hold": hold, "held_by": heldBy}})
	return t, nil
}

// Acquire is TryAcquire that waits while every slot is held, until ctx
// is done (ErrTokenBusy after its deadline). It wakes when a slot file
// reappears, and every LivenessPoll to notice dead holders and expired
// leases, which make no filesystem event.
func (sp *Space) Acquire(ctx context.Context, name string, opt AcquireOptions) (*Token, error) {
	w, err := sp.watchDir(typeDir(TokenType))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	for {
		t, err := sp.TryAcquire(name, opt)
		if !errors.Is(err, ErrTokenBusy) {
			return t, err
		}
		if werr := w.Wait(ctx, sp.poll); werr != nil {
			if errors.Is(werr, context.DeadlineExceeded) {
				if t, err2 := sp.TryAcquire(name, opt); !errors.Is(err2, ErrTokenBusy) {
					return t, err2
				}
				return nil, err
			}
			return nil, werr
		}
	}
}

// Release frees the slot. The Token must still hold its lock (it was not
// Detached); a slot edited or reclaimed meanwhile gives ErrNotHolder.
func (t *Token) Release() error {
	if t.lock == nil || !t.lock.Held() {
		return t.sp.ReleaseToken(t.Name, t.Handle(), "")
	}
	defer t.lock.Unlock()
	d, err := t.sp.store.Get(takenPath(TokenType, t.ID))
	if err != nil {
		return fmt.Errorf("%s %s: %w (%w)", t.Name, t.ID, ErrNotHolder, err)
	}
	if e, _ := d.Int("epoch"); e != t.Epoch {
		return fmt.Errorf("%s %s: %w: epoch is %d, not %d", t.Name, t.ID, ErrNotHolder, e, t.Epoch)
	}
	return t.sp.freeSlot(t.lock, TokenType, t.ID, d, "token.released", "released")
}

// Detach lets go of the slot's lock without releasing the slot. An agent
// or lease hold stays; a process hold becomes reclaimable at once.
func (t *Token) Detach() {
	t.lock.Unlock()
}

// ReleaseToken frees a slot of token name by handle ("ID:EPOCH", or a bare
// ID to release whatever holding is current). With agent set, the slot
// must be held by that agent. A slot whose lock a live process holds
// (HoldProcess via the library) can only be released by that process.
func (sp *Space) ReleaseToken(name, handle, agent string) error {
	id, epochText, fenced := strings.Cut(handle, ":")
	if err := schema.ValidName(id); err != nil {
		return fmt.Errorf("token id: %w", err)
	}
	var epoch int64
	if fenced {
		var err error
		if epoch, err = strconv.ParseInt(epochText, 10, 64); err != nil {
			return fmt.Errorf("%w: token handle %q: want ID or ID:EPOCH", ErrBadTuple, handle)
		}
	}
	l, ok, err := sp.store.TryLock(tupleLockKey(TokenType, id))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s %s: %w: a live process holds it and must release it itself", name, id, ErrNotHolder)
	}
	defer l.Unlock()
	d, err := sp.store.Get(takenPath(TokenType, id))
	if err != nil {
		if errors.Is(err, docstore.ErrNotExist) {
			return fmt.Errorf("%s %s: %w: not held", name, id, ErrNotHolder)
		}
		return err
	}
	switch e, _ := d.Int("epoch"); {
	case d.String("token") != name:
		return fmt.Errorf("%s %s: %w: it is a slot of %q", name, id, ErrNotHolder, d.String("token"))
	case fenced && e != epoch:
		return fmt.Errorf("%s %s: %w: stale epoch %d (now %d)", name, id, ErrNotHolder, epoch, e)
	case agent != "" && d.String("held_by") != agent:
		return fmt.Errorf("%s %s: %w: held by %s, not %s", name, id, ErrNotHolder, d.String("held_by"), agent)
	}
	return sp.freeSlot(l, TokenType, id, d, "token.released", "released")
}

// ReleaseAgentTokens frees every slot of token name held by agent and
// returns how many; none held gives ErrNotHolder.
func (sp *Space) ReleaseAgentTokens(name, agent string) (int, error) {
	held, err := sp.heldSlots(name)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, d := range held {
		if d.String("held_by") != agent {
			continue
		}
		if err := sp.ReleaseToken(name, d.String("id"), agent); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n == 0 && len(errs) == 0 {
		return 0, fmt.Errorf("%s: %w: %s holds no slot", name, ErrNotHolder, agent)
	}
	return n, errors.Join(errs...)
}

// freeSlot clears the holder fields of a held slot and renames it back
// among the live tuples. The caller holds the slot's lock.
func (sp *Space) freeSlot(_ *docstore.Lock, typ, id string, d *docstore.Doc, ev, why string) error {
	taken := takenPath(typ, id)
	heldBy := d.String("held_by")
	sp.coordRelease(d) // several machines (coord.go)
	for _, f := range holdFields {
		if err := d.Delete(f); err != nil {
			return err
		}
	}
	if err := sp.store.WriteFile(taken, d.Bytes()); err != nil {
		return err
	}
	if err := sp.store.Rename(taken, tuplePath(typ, id)); err != nil {
		return err
	}
	epoch, _ := d.Int("epoch")
	sp.event(ev, journal.Event{Path: tuplePath(typ, id), Agent: heldBy, Data: map[string]any{
		"token": d.String("token"), "id": id, "epoch": epoch, "held_by": heldBy, "reason": why}})
	return nil
}

// releasable decides whether a claimed tuple whose lock is free (its
// claimer's process is gone or let go) goes back, and says why.
func (sp *Space) releasable(d *docstore.Doc) (string, bool) {
	lease, hasLease := d.Time("lease_until")
	expired := hasLease && !sp.now().Before(lease)
	switch d.String("hold") {
	case HoldAgent:
		if expired {
			return "lease expired", true
		}
		key := d.String("liveness_lock")
		if key == "" {
			key = schema.AgentLockKey(d.String("held_by"))
		}
		if !sp.lockHeld(key) {
			return "agent " + d.String("held_by") + " is not alive", true
		}
		return "", false
	case HoldLease:
		if expired || !hasLease {
			return "lease expired", true
		}
		return "", false
	case HoldProcess:
		return "holder process died", true
	}
	return "claimer died before finishing", true
}

// lockHeld reports whether some live process holds the lock key. Probing
// takes the lock for an instant when it is free.
func (sp *Space) lockHeld(key string) bool {
	l, ok, err := sp.store.TryLock(key)
	if err != nil {
		return false
	}
	if ok {
		l.Unlock()
		return false
	}
	return true
}

// TokenSlot is one slot of a token, free or held, as TokenSlots reports.
type TokenSlot struct {
	Name       string    `json:"token"`
	ID         string    `json:"id"`
	Slot       int64     `json:"slot"`
	Epoch      int64     `json:"epoch"`
	Free       bool      `json:"free"`
	Hold       string    `json:"hold,omitempty"`
	HeldBy     string    `json:"held_by,omitempty"`
	Acquired   time.Time `json:"acquired,omitzero"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	Path       string    `json:"path"`
}

// TokenSlots returns the slots of token name (of every token if name is
// empty), sorted by token and slot, after returning those of dead holders.
func (sp *Space) TokenSlots(name string) ([]TokenSlot, error) {
	_, _ = sp.reapTaken(TokenType)
	var p Pattern
	if name != "" {
		p = Pattern{{Cond: docstore.Cond{Field: "token", Op: docstore.OpEq, Value: name}}}
	}
	var docs []*docstore.Doc
	err := sp.scan(TokenType, p, nil, func(d *docstore.Doc, _ map[string]any) bool {
		docs = append(docs, d)
		return true
	})
	if err != nil {
		return nil, err
	}
	var held []*docstore.Doc
	if name != "" {
		held, err = sp.heldSlots(name)
	} else {
		held, err = sp.allHeld()
	}
	if err != nil {
		return nil, err
	}
	var out []TokenSlot
	for i, d := range append(docs, held...) {
		s := TokenSlot{Name: d.String("token"), ID: d.String("id"), Free: i < len(docs), Path: d.Path,
			Hold: d.String("hold"), HeldBy: d.String("held_by")}
		s.Slot, _ = d.Int("slot")
		s.Epoch, _ = d.Int("epoch")
		s.Acquired, _ = d.Time("acquired")
		s.LeaseUntil, _ = d.Time("lease_until")
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Slot < out[j].Slot
	})
	return out, nil
}

func (sp *Space) allHeld() ([]*docstore.Doc, error) {
	dir, err := sp.store.Abs(typeDir(TokenType) + "/" + stagingDir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []*docstore.Doc
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".md"); ok && schema.ValidName(id) == nil {
			if d, err := sp.store.Get(takenPath(TokenType, id)); err == nil && d.Has("token") {
				out = append(out, d)
			}
		}
	}
	return out, nil
}
