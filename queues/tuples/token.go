package tuples

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
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

var holdFields = []string{"hold", "held_by", "liveness_lock", "lease_until", "acquired", "holder", "instance"}

func tokenInitKey(name string) string { return "tokens/" + name }

// Token is one held slot of a resource token.
type Token struct {
	Name       string
	ID         string // the slot's tuple id
	Slot       int64
	Epoch      int64 // incremented by every acquisition: the fencing token
	Hold       string
	HeldBy     string
	Instance   string    // the holding instance ($TAVERN_INSTANCE), or ""
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
	// Instance is the caller's instance of As (a spawned agent's
	// $TAVERN_INSTANCE). It is recorded on the slot, so a release by
	// name from another instance of the same agent is fenced; a dead
	// instance of As (replaced by a newer spawn, or whose spawn wrapper
	// is gone) cannot acquire, not even a lease. Empty
	// with a live As: the instance in As's agent document, if any.
	Instance string
}

// ReleaseOptions say who releases a token slot.
type ReleaseOptions struct {
	// As, if set, must be the agent the slot is held by.
	As string
	// Instance, if set, is the caller's instance: a slot recorded with
	// another instance is not released by name or bare id (FencedError).
	// A full handle ID:EPOCH releases whatever the instance: the epoch
	// is the fence.
	Instance string
}

// InitTokenOptions say how InitToken treats a new token's name.
type InitTokenOptions struct {
	// New: the token is new on purpose, so its name is not refused as a
	// typo of an existing token's (ErrNearToken).
	New bool
}

// InitToken is InitTokenWith without options.
func (sp *Space) InitToken(name string, count int) (int, error) {
	return sp.InitTokenWith(name, count, InitTokenOptions{})
}

// InitTokenWith makes token name have exactly count slots: it adds slots,
// or archives free ones; it refuses (ErrTokenCount) to drop held slots. It
// returns how many slots it added (negative: removed). Count 0 retires a
// token's free slots; for a token with no slots it is ErrUnknownToken
// (nothing to retire, and nothing is created). It creates or changes, so a
// typo of an existing token would create a second one: a new token whose
// name is near an existing one's (schema.NearNew: numbered siblings such
// as gpu-2 next to gpu-1 are not typos) is refused (*NearTokenError,
// ErrNearToken) unless opt.New.
func (sp *Space) InitTokenWith(name string, count int, opt InitTokenOptions) (int, error) {
	if err := schema.ValidName(name); err != nil {
		return 0, fmt.Errorf("token name: %w", err)
	}
	if count < 0 {
		return 0, fmt.Errorf("%w: token %s: count %d: a count cannot be negative", ErrBadTuple, name, count)
	}
	plainErr := schema.ValidPlainName("token", name)
	var near []string
	if count > 0 && !opt.New {
		near = sp.nearTokens(name)
	}
	if count == 0 || plainErr != nil || len(near) > 0 {
		// Refusals that need no lock are made before it: the lock file
		// would be left in .locks/tokens/ under the typo's name.
		if ok, _ := sp.tokenExists(name); !ok {
			switch {
			case count != 0 && plainErr != nil:
				return 0, plainErr
			case count != 0 && (len(sp.engineSlots(name)) > 0 || sp.inTransit(name)):
				// It exists on another machine: a change, not a new token.
			case count != 0:
				return 0, &NearTokenError{Op: "init token", Path: "tuples/" + TokenType, Name: name, Near: near}
			case len(sp.engineSlots(name)) > 0:
				// Held on another machine only (its file is in that
				// machine's .taken/): a token that exists, counted
				// below, whose held slots cannot be dropped.
			default:
				if slot, machine, ok := sp.slotInTransit(name); ok {
					return 0, &SlotInTransitError{Op: "init", Name: name, Slot: slot, Machine: machine}
				}
				return 0, sp.unknownToken(name)
			}
		}
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
	// A slot is its number: two machines that made the token before
	// syncing leave two copies of each number, one slot on the engine.
	// Counted by file, an init with the same count "dropped" the copies
	// and retired their numbers, leaving slots listed free that no
	// acquire could take.
	var maxSlot int64 = -1
	local := map[int64]bool{}
	heldNum := map[int64]bool{}
	unnumbered := 0
	for i, d := range append(append([]*docstore.Doc{}, free...), held...) {
		n, ok := d.Int("slot")
		if !ok {
			unnumbered++
			continue
		}
		local[n] = true
		maxSlot = max(maxSlot, n)
		if i >= len(free) {
			heldNum[n] = true
		}
	}
	total := len(local) + unnumbered
	// Several machines: a slot held elsewhere has no file here (coord.go);
	// making it again would be a second copy of its number.
	elsewhere := 0
	var machines []string
	eng := sp.engineSlots(name)
	for ref, st := range eng {
		if !local[ref.slot] {
			elsewhere++
			maxSlot = max(maxSlot, ref.slot)
			if st.Machine != "" && !slices.Contains(machines, st.Machine) {
				machines = append(machines, st.Machine)
			}
		}
	}
	total += elsewhere
	// And a slot released there (or whose lease ran out there) is free
	// on the engine while its file is still on that machine: a slot too.
	transit := sp.slotsInTransit(name, func(n int64) bool { return local[n] || eng[slotRef{name, n}].Held })
	for _, t := range transit {
		maxSlot = max(maxSlot, t.Slot)
	}
	total += len(transit)
	// What a smaller count can drop: each free slot number with all its
	// copies (none held, here or on the engine), highest first so
	// numbering stays compact.
	type unit struct {
		slot int64 // -1: a slot file without a number
		docs []*docstore.Doc
	}
	var units []unit
	byNum := map[int64]int{}
	for _, d := range free {
		n, ok := d.Int("slot")
		switch {
		case !ok:
			units = append(units, unit{slot: -1, docs: []*docstore.Doc{d}})
		case heldNum[n] || eng[slotRef{name, n}].Held:
		default:
			if i, seen := byNum[n]; seen {
				units[i].docs = append(units[i].docs, d)
				continue
			}
			byNum[n] = len(units)
			units = append(units, unit{slot: n, docs: []*docstore.Doc{d}})
		}
	}
	sort.SliceStable(units, func(i, j int) bool { return units[i].slot > units[j].slot })
	if count == 0 && total == 0 {
		// Zero retires the free slots of a token; of one that has none it
		// would do nothing and say it did: a typo, or a token not made yet.
		return 0, sp.unknownToken(name)
	}
	if total == 0 && count > 0 {
		// A new token: its name follows the plain name rule (one
		// made before the rule keeps its name).
		if err := schema.ValidPlainName("token", name); err != nil {
			return 0, err
		}
	}
	switch {
	case count > total:
		for i := 0; i < count-total; i++ {
			maxSlot++
			if err := sp.coordRevive(name, maxSlot); err != nil {
				return i, err
			}
			if _, err := sp.out(TokenType, []docstore.Field{{Key: "token", Value: name}, {Key: "slot", Value: maxSlot}, {Key: "epoch", Value: 0}}, OutOptions{}); err != nil {
				return i, err
			}
		}
	case count < total:
		drop := total - count
		if drop > len(units) && drop <= len(units)+len(transit) {
			// Free, but not here to drop: it is on its way.
			return 0, &transit[0]
		}
		if drop > len(units) {
			on := ""
			switch {
			case len(machines) > 0:
				sort.Strings(machines)
				on = fmt.Sprintf(" (%d on %s)", elsewhere, strings.Join(machines, ", "))
			case elsewhere > 0:
				on = fmt.Sprintf(" (%d on other machines)", elsewhere)
			}
			return 0, fmt.Errorf("%w: slots of %s: %d, %d held%s; release some first", ErrTokenCount, name, total, total-len(units)-len(transit), on)
		}
		removed := 0
		for _, u := range units {
			if removed == drop {
				break
			}
			all := true
			for _, d := range u.docs {
				ok, err := sp.discard(TokenType, d.String("id"), nil)
				if err != nil {
					return -removed, err
				}
				all = all && ok
			}
			if !all {
				// A copy was acquired meanwhile: the number lives on.
				continue
			}
			removed++
			if u.slot >= 0 {
				sp.coordRetire(name, u.slot)
			}
		}
		if removed < drop {
			return -removed, fmt.Errorf("%w: %s: slots were acquired while shrinking; %d of %d removed", ErrTokenCount, name, removed, drop)
		}
	}
	sp.event("token.init", journal.Event{Data: map[string]any{"token": name, "count": count, "was": total}})
	return count - total, nil
}

// slots returns the free and held slot documents of token name, each
// slot exactly once. A listing of the free slots and one of the held ones
// are two directory reads, not a snapshot: a slot that changes hands (or
// changes hands twice) between them is seen in both or in neither, and
// a count built from them is wrong. So slots are counted by identity:
// the candidates are every id listed as free, as held, or as a lock file
// (a slot that ever moved has one: docstore.Claim creates it before the
// first rename, and it stays as long as the slot does), listed in that
// order, so a slot that moved out of the free directory before it was
// listed is found among the locks. Each candidate is then located (see
// locateSlot) and counted where it is.
func (sp *Space) slots(name string) (free, held []*docstore.Doc, err error) {
	ids, err := sp.slotCandidates()
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		d, isHeld, err := sp.locateSlot(id)
		if err != nil {
			return nil, nil, err
		}
		if d == nil || d.String("token") != name {
			continue
		}
		if isHeld {
			held = append(held, d)
		} else {
			free = append(free, d)
		}
	}
	return free, held, nil
}

// slotCandidates lists every id that may be a token slot: the free slot
// files, then the held ones, then the lock files, without duplicates.
func (sp *Space) slotCandidates() ([]string, error) {
	ids, err := sp.names(TokenType)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	add := func(dir, suffix string) error {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, e := range ents {
			if id, ok := strings.CutSuffix(e.Name(), suffix); ok && !seen[id] && schema.ValidName(id) == nil {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return nil
	}
	takenDir, err := sp.store.Abs(typeDir(TokenType) + "/" + stagingDir)
	if err != nil {
		return nil, err
	}
	if err := add(takenDir, ".md"); err != nil {
		return nil, err
	}
	if err := add(filepath.Join(sp.store.Root(), ".locks", "tuples", TokenType), ".lock"); err != nil {
		return nil, err
	}
	return ids, nil
}

// locateSlotTries bounds the lock-free looks for a slot that keeps moving
// before locateSlot waits for its lock.
const locateSlotTries = 8

// locateSlot finds slot id where it is: held (in .taken/) or free. It
// reads the held place first, then the free one; a slot missed by both
// moved from free to held in between (an acquire), so it looks again,
// and after a few misses it looks under the slot's lock, where nothing
// can move it. A process that holds a slot holds its lock, but such a
// slot sits still in .taken/ and is found without the lock. nil: not a
// slot (gone, never one, or broken: a slot nobody can use is not
// counted).
func (sp *Space) locateSlot(id string) (*docstore.Doc, bool, error) {
	look := func() (*docstore.Doc, bool, bool) {
		for i, rel := range []string{takenPath(TokenType, id), tuplePath(TokenType, id)} {
			d, err := sp.store.Get(rel)
			if err == nil {
				return d, i == 0, true
			}
			if !errors.Is(err, docstore.ErrNotExist) {
				return nil, false, true
			}
		}
		return nil, false, false
	}
	for range locateSlotTries {
		if d, held, found := look(); found {
			return d, held, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	l, err := sp.store.LockContext(ctx, tupleLockKey(TokenType, id))
	cancel()
	if err != nil {
		return nil, false, fmt.Errorf("token slot %s: cannot tell where it is: %w", id, err)
	}
	defer l.Unlock()
	d, held, _ := look()
	return d, held, nil
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
// held, ErrUnknownToken when the token has no slots at all (said only of a
// token that has none: a slot changing hands while we look is not taken
// for a missing one), and a *FencedError when opt.Instance is a dead
// instance of opt.As: replaced by a newer one, or current with its spawn
// wrapper gone (fence).
//
// The returned Token holds the slot's lock: for HoldProcess that lock is
// the hold. Call Release when done, or Detach to leave an agent or lease
// hold in place after this process exits.
func (sp *Space) TryAcquire(name string, opt AcquireOptions) (*Token, error) {
	tok, _, err := sp.tryAcquire(name, opt)
	return tok, err
}

// tryAcquire is TryAcquire that also says, when every slot is held, when
// to look again without a filesystem event: at the next liveness check if
// a holder's life (a lock, which makes no event) keeps a slot held, else
// when the first lease runs out.
func (sp *Space) tryAcquire(name string, opt AcquireOptions) (*Token, time.Time, error) {
	hold, err := sp.holdFor("acquire "+name, opt.As, opt.Instance, opt.TTL)
	if err != nil {
		return nil, time.Time{}, err
	}
	if err := schema.ValidName(name); err != nil {
		return nil, time.Time{}, fmt.Errorf("token name: %w", err)
	}
	_, _ = sp.reapTaken(TokenType)
	p := Pattern{{Cond: docstore.Cond{Field: "token", Op: docstore.OpEq, Value: name}}}
	var got *Token
	var ferr error
	seen := false
	_, err = sp.scan(TokenType, p, nil, func(d *docstore.Doc, _ map[string]any) bool {
		seen = true
		got, ferr = sp.acquireSlot(name, d.String("id"), hold, opt)
		return got == nil && ferr == nil
	})
	if err == nil {
		err = ferr
	}
	if err != nil || got != nil {
		return got, time.Time{}, err
	}
	if afterFreeScan != nil {
		afterFreeScan()
	}
	held, err := sp.heldSlots(name)
	if err != nil {
		return nil, time.Time{}, err
	}
	wake := sp.now().Add(sp.poll)
	if len(held) > 0 {
		wake = sp.nextLook(held)
	}
	// Several machines: slots held elsewhere have no file here, or a free
	// copy the engine refused. They are held slots of a token that exists.
	nHeld := len(held)
	if eng := sp.engineSlots(name); len(eng) > 0 {
		here := map[int64]bool{}
		for _, d := range held {
			n, _ := d.Int("slot")
			here[n] = true
		}
		for ref := range eng {
			if !here[ref.slot] {
				nHeld++
			}
		}
		seen = true
		wake = sp.now().Add(sp.poll) // a release elsewhere makes no event here until it syncs
	}
	if nHeld == 0 && !seen {
		// Neither free nor held: a slot may have changed hands between
		// the two reads. Decide exactly before calling it unknown.
		ok, err := sp.tokenExists(name)
		if err != nil {
			return nil, time.Time{}, err
		}
		if !ok {
			// Several machines: released elsewhere, not synced here yet.
			if slot, machine, ok := sp.slotInTransit(name); ok {
				return nil, sp.now().Add(sp.poll), &SlotInTransitError{Op: "acquire", Name: name, Slot: slot, Machine: machine}
			}
			return nil, time.Time{}, sp.unknownToken(name)
		}
	}
	return nil, wake, fmt.Errorf("%s: %w (%d held)", name, ErrTokenBusy, nHeld)
}

// afterFreeScan, if set (tests), runs between the scan of the free slots
// and the read of the held ones: where a release makes a slot invisible
// to both.
var afterFreeScan func()

// holder is who a token slot or a reservation is held for and what keeps
// it held.
type holder struct {
	hold     string // HoldProcess, HoldAgent, HoldLease
	as       string // agent name, or ""
	lockKey  string // HoldAgent: the agent's liveness lock
	instance string // the holding instance, or ""
}

// holdFor decides what keeps a hold of agent as (or of the calling
// process, as empty) alive, and refuses a dead instance's caller (fence).
func (sp *Space) holdFor(op, as, instance string, ttl time.Duration) (holder, error) {
	h := holder{hold: HoldProcess, as: as, instance: instance}
	if ttl < 0 {
		return h, fmt.Errorf("%w: negative TTL %s", ErrBadTuple, ttl)
	}
	if instance != "" {
		if err := schema.ValidName(instance); err != nil {
			return h, fmt.Errorf("instance: %w", err)
		}
	}
	if as == "" {
		if ttl > 0 {
			h.hold = HoldLease
		}
		return h, nil
	}
	if err := schema.ValidAgentName(as); err != nil {
		return h, err
	}
	cur, err := sp.fence(op, as, instance)
	if err != nil {
		return h, err
	}
	switch key := schema.AgentLockKey(as); {
	case sp.lockHeld(key):
		h.hold, h.lockKey = HoldAgent, key
		if h.instance == "" {
			h.instance = cur // the live instance the hold is tied to
		}
	case ttl == 0:
		return h, fmt.Errorf("%w: %s (lock %s is free); run it under `tavern spawn`, or give a --ttl above 0 (a TTL of 0 holds only while the agent's spawn lives)", ErrHolderNotAlive, as, key)
	default:
		h.hold = HoldLease
	}
	return h, nil
}

// fence refuses a late action of a dead instance of agent, and returns
// the agent's current instance ("" if none is recorded). instance is the
// caller's ($TAVERN_INSTANCE). Dead is replaced (the agent document names
// a newer spawn) or current with its spawn wrapper gone (the agent's
// liveness lock is free: the wrapper holds it for the whole life of its
// child, so what acts is an orphan of a killed wrapper, whose holds have
// already come back or will at the next look). Either is a *FencedError.
// No instance (a person, a session without spawn) or none recorded for
// the agent: nothing to fence. Guard, acquire and reserve all decide by
// this one rule.
func (sp *Space) fence(op, agent, instance string) (string, error) {
	if agent == "" {
		return "", nil
	}
	cur := sp.agentInstance(agent)
	if instance == "" || cur == "" {
		return cur, nil
	}
	if cur != instance {
		return cur, &FencedError{Op: op, Agent: agent, Instance: instance, Holder: cur, Superseded: true}
	}
	if !sp.lockHeld(schema.AgentLockKey(agent)) {
		return cur, &FencedError{Op: op, Agent: agent, Instance: instance, Holder: cur, Dead: true}
	}
	return cur, nil
}

// agentInstance returns the instance recorded in agent's document (its
// current spawn), or "" if none is recorded.
func (sp *Space) agentInstance(agent string) string {
	d, err := sp.store.Get("agents/" + agent + ".md")
	if err != nil {
		return ""
	}
	return d.String("instance")
}

// nextLook is when a waiter should look at held slots again without a
// filesystem event: at the next liveness check if a live process keeps
// one held, else when the first lease runs out.
func (sp *Space) nextLook(held []*docstore.Doc) time.Time {
	var first time.Time
	for _, d := range held {
		lease, ok := d.Time("lease_until")
		if d.String("hold") != HoldLease || !ok {
			return sp.now().Add(sp.poll)
		}
		if first.IsZero() || lease.Before(first) {
			first = lease
		}
	}
	return first
}

// tokenExists decides exactly whether token name has a slot, after a scan
// of the free slots and a read of the held ones saw none: a slot that was
// released between the two reads is seen by neither. slots counts by
// identity and sees it. A slot it cannot locate counts as existing: busy,
// never a false "unknown".
func (sp *Space) tokenExists(name string) (bool, error) {
	free, held, err := sp.slots(name)
	if err != nil {
		return true, nil
	}
	return len(free)+len(held) > 0, nil
}

func (sp *Space) acquireSlot(name, id string, h holder, opt AcquireOptions) (*Token, error) {
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
	fence, err := sp.coordAcquire(name, slot, heldBy, h.hold, opt) // several machines (coord.go)
	if err != nil {
		if errors.Is(err, errSlotElsewhere) {
			return putBack(nil)
		}
		return putBack(err)
	}
	t := &Token{Name: name, ID: id, Slot: slot, Epoch: epoch, Hold: h.hold, HeldBy: heldBy, Instance: h.instance, sp: sp, lock: l}
	set := []docstore.Field{{Key: "epoch", Value: epoch}, {Key: "hold", Value: h.hold}, {Key: "held_by", Value: heldBy}, {Key: "acquired", Value: now}}
	if fence > 0 {
		set = append(set, docstore.Field{Key: "claim_fence", Value: fence})
	}
	if h.lockKey != "" {
		set = append(set, docstore.Field{Key: "liveness_lock", Value: h.lockKey})
	}
	if h.instance != "" {
		set = append(set, docstore.Field{Key: "instance", Value: h.instance})
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
	data := map[string]any{"token": name, "id": id, "slot": slot, "epoch": epoch, "hold": h.hold, "held_by": heldBy}
	if h.instance != "" {
		data["instance"] = h.instance
	}
	sp.event("token.acquired", journal.Event{Path: to, Agent: opt.As, Data: data})
	return t, nil
}

// Acquire is TryAcquire that waits while every slot is held, until ctx
// is done (ErrTokenBusy after its deadline). It is woken by a slot file
// reappearing (a release), by the first lease running out, and every
// LivenessPoll while a live holder (agent or process) holds a slot: a
// death drops a lock, which is no filesystem event. It journals one
// token.waiting when it first has to wait, not every refusal.
func (sp *Space) Acquire(ctx context.Context, name string, opt AcquireOptions) (*Token, error) {
	// A first look before the wait: an unknown token (a typo) fails at
	// once and creates nothing; a busy one has slots, so its directory.
	tok, wake, last := sp.tryAcquire(name, opt)
	if !errors.Is(last, ErrTokenBusy) {
		return tok, last
	}
	dir, err := sp.typeDirAbs(TokenType)
	if err != nil {
		return nil, err
	}
	werr := watcher.WaitDir(ctx, []string{dir}, sp.waitOptions(appeared, func() time.Time { return wake }, func() {
		sp.event("token.waiting", journal.Event{Agent: opt.As, Data: map[string]any{"token": name}})
	}), func() (bool, error) {
		tok, wake, last = sp.tryAcquire(name, opt)
		if errors.Is(last, ErrUnknownToken) && sp.coordinated() {
			// Several machines: a slot released on another machine is
			// free on the engine and has no file here until the sync
			// brings it: in transit, not gone. Keep waiting.
			last = fmt.Errorf("%s: %w (released on another machine, not synced here yet)", name, ErrTokenBusy)
			wake = sp.now().Add(sp.poll)
		}
		if errors.Is(last, ErrTokenBusy) {
			return false, nil
		}
		return true, last
	})
	switch {
	case werr == nil:
		return tok, nil
	case ctx.Err() == nil || !errors.Is(werr, context.DeadlineExceeded):
		return nil, werr
	}
	// One last look: the deadline may have raced a release.
	if tok, err := sp.TryAcquire(name, opt); !errors.Is(err, ErrTokenBusy) {
		return tok, err
	}
	return nil, last
}

// Release frees the slot. The Token must still hold its lock (it was not
// Detached); a slot edited or reclaimed meanwhile gives ErrNotHolder.
func (t *Token) Release() error {
	if t.lock == nil || !t.lock.Held() {
		return t.sp.ReleaseToken(t.Name, t.Handle(), ReleaseOptions{})
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

// releaseWait bounds how long a release waits for a slot's lock, which
// others hold only for moments (an acquirer losing the race for it, a
// reaper looking) unless a library process holds the slot itself.
const releaseWait = 10 * time.Second

// ReleaseToken frees a slot of token name by handle: "ID:EPOCH" releases
// exactly that holding (a stale epoch is refused), a bare ID whatever
// holding is current. With opt.As set, the slot must be held by that
// agent; with opt.Instance set, a bare-ID release of a slot recorded with
// another instance is fenced (*FencedError, nothing changes). A slot held
// by a live process (HoldProcess) can only be released by that process.
func (sp *Space) ReleaseToken(name, handle string, opt ReleaseOptions) error {
	id, epochText, fenced := strings.Cut(handle, ":")
	if err := schema.ValidName(id); err != nil {
		return fmt.Errorf("token id: %w", err)
	}
	if opt.As != "" {
		if err := schema.ValidAgentName(opt.As); err != nil {
			return err
		}
	}
	var epoch int64
	if fenced {
		var err error
		if epoch, err = strconv.ParseInt(epochText, 10, 64); err != nil {
			return fmt.Errorf("%w: token handle %q: want ID or ID:EPOCH", ErrBadTuple, handle)
		}
	}
	taken := takenPath(TokenType, id)
	d, err := sp.store.Get(taken)
	if err != nil {
		if errors.Is(err, docstore.ErrNotExist) {
			if nerr := sp.noSlot(name, id); nerr != nil {
				return sp.notHeld(name, nerr)
			}
			return sp.notHeld(name, fmt.Errorf("%s %s: %w: not held", name, id, ErrNotHolder))
		}
		return err
	}
	var l *docstore.Lock
	if d.String("hold") == HoldProcess {
		// Its holder keeps the lock for as long as it holds the slot.
		var ok bool
		if l, ok, err = sp.store.TryLock(tupleLockKey(TokenType, id)); err == nil && !ok {
			err = fmt.Errorf("%s %s: %w: a live process holds it and must release it itself", name, id, ErrNotHolder)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
		l, err = sp.store.LockContext(ctx, tupleLockKey(TokenType, id))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%s %s: %w: a live process holds its lock and must release it itself", name, id, ErrNotHolder)
		}
	}
	if err != nil {
		return err
	}
	defer l.Unlock()
	// Under the lock: the slot cannot change hands while we decide.
	if d, err = sp.store.Get(taken); err != nil {
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
	case opt.As != "" && d.String("held_by") != opt.As:
		return fmt.Errorf("%s %s: %w: held by %s, not %s", name, id, ErrNotHolder, d.String("held_by"), opt.As)
	case !fenced && opt.Instance != "" && d.String("instance") != "" && d.String("instance") != opt.Instance:
		return &FencedError{Op: "release " + name, Agent: d.String("held_by"), Instance: opt.Instance, Holder: d.String("instance"), Path: taken}
	}
	return sp.freeSlot(l, TokenType, id, d, "token.released", "released")
}

// ReleaseAgentTokens frees every slot of token name held by opt.As and
// returns how many; none held gives ErrNotHolder. Slots recorded with an
// instance other than opt.Instance (when set) are left held and reported
// in a *FencedError.
func (sp *Space) ReleaseAgentTokens(name string, opt ReleaseOptions) (int, error) {
	if err := schema.ValidAgentName(opt.As); err != nil {
		return 0, err
	}
	held, err := sp.heldSlots(name)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, d := range held {
		if d.String("held_by") != opt.As {
			continue
		}
		if err := sp.ReleaseToken(name, d.String("id"), opt); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n == 0 && len(errs) == 0 {
		return 0, sp.notHeld(name, fmt.Errorf("%s: %w: %s holds no slot", name, ErrNotHolder, opt.As))
	}
	return n, errors.Join(errs...)
}

// nearTokens is the existing tokens a new token name may be a typo of.
func (sp *Space) nearTokens(name string) []string {
	slots, err := sp.Slots("")
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range slots {
		names = append(names, s.Name)
	}
	return schema.NearNew(name, names)
}

func (sp *Space) inTransit(name string) bool {
	_, _, ok := sp.slotInTransit(name)
	return ok
}

// unknownToken is the error of a token name that has no slots at all,
// with the names of the tokens that exist near it.
func (sp *Space) unknownToken(name string) error {
	e := &UnknownTokenError{Name: name}
	if slots, err := sp.Slots(""); err == nil {
		var names []string
		for _, s := range slots {
			names = append(names, s.Name)
		}
		e.Near = schema.Near(name, names)
	}
	return e
}

// noSlot returns a *NoSlotError when id, held by no one, names no free
// slot of token name either; nil when it does, or when an engine
// arbitrates: a slot held on another machine has no file here (coord.go),
// so a missing file does not show the ID is wrong.
func (sp *Space) noSlot(name, id string) error {
	if d, err := sp.store.Get(tuplePath(TokenType, id)); err == nil && d.String("token") == name {
		return nil
	}
	if sp.coordinated() {
		return nil
	}
	e := &NoSlotError{Op: "release", Path: tuplePath(TokenType, id), Name: name, ID: id}
	slots, err := sp.Slots(name)
	if err != nil {
		return e
	}
	for _, s := range slots {
		h := s.ID + ":" + strconv.FormatInt(s.Epoch, 10)
		e.Handles = append(e.Handles, h)
		if strconv.FormatInt(s.Slot, 10) == id {
			e.Near = h
		}
	}
	return e
}

// notHeld is the error of a release that found nothing to release:
// ErrUnknownToken when the token has no slots at all (a typo is not a
// token someone else holds), else err. Several machines: a token whose
// slots are all held elsewhere, or on their way here, has no file here
// and exists all the same (coord.go).
func (sp *Space) notHeld(name string, err error) error {
	if ok, _ := sp.tokenExists(name); !ok && len(sp.engineSlots(name)) == 0 && !sp.inTransit(name) {
		return sp.unknownToken(name)
	}
	return err
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
		return sp.agentGone(d.String("held_by"), d.String("liveness_lock"), d.String("instance"))
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

// agentGone says whether the agent instance a hold is tied to is gone:
// its liveness lock is free (its process died), or its agent document
// names a newer instance (it was respawned; the lock is the successor's).
func (sp *Space) agentGone(agent, lockKey, instance string) (string, bool) {
	if lockKey == "" {
		lockKey = schema.AgentLockKey(agent)
	}
	if !sp.lockHeld(lockKey) {
		return "agent " + agent + " is not alive", true
	}
	if instance != "" {
		if cur := sp.agentInstance(agent); cur != "" && cur != instance {
			return "instance " + instance + " of agent " + agent + " was replaced by " + cur, true
		}
	}
	return "", false
}

// HeldLive reports whether some slot of token name is held by a holder
// that is still there: its slot lock is held (a process hold, or a claimer
// at work), or reaping would not return it (a live agent, a lease not run
// out). It changes nothing. A record that names a pid is no proof of a
// live holder (pids are reused); the slot's lock is.
func (sp *Space) HeldLive(name string) (bool, error) {
	held, err := sp.heldSlots(name)
	if err != nil {
		return false, err
	}
	for _, d := range held {
		id := strings.TrimSuffix(filepath.Base(d.Path), ".md")
		if sp.lockHeld(tupleLockKey(TokenType, id)) {
			return true, nil
		}
		if _, gone := sp.releasable(d); !gone {
			return true, nil
		}
	}
	return false, nil
}

// lockHeld reports whether some live process holds the lock key. The
// probe shares the lock (docstore.Store.LockFree), so a concurrent probe
// is never taken for a holder; an unknowable answer counts as not held,
// as a free lock would.
func (sp *Space) lockHeld(key string) bool {
	free, err := sp.store.LockFree(key)
	return err == nil && !free
}

// TokenSlot is one slot of a token, free or held, as TokenSlots reports.
type TokenSlot struct {
	Name       string           `json:"token"`
	ID         string           `json:"id"`
	Slot       int64            `json:"slot"`
	Epoch      int64            `json:"epoch"`
	Free       bool             `json:"free"`
	Hold       string           `json:"hold,omitempty"`
	HeldBy     string           `json:"held_by,omitempty"`
	Instance   string           `json:"instance,omitempty"`
	Acquired   schema.Timestamp `json:"acquired,omitzero"`
	LeaseUntil schema.Timestamp `json:"lease_until,omitzero"`
	Path       string           `json:"path"`
	// Machine is set for a slot held on another machine, known from the
	// coordination engine only: its file is in that machine's .taken/,
	// so Path, ID and Epoch (the handle) are not known here and are left
	// out of the JSON; HeldBy is the engine's holder.
	Machine string `json:"machine,omitempty"`
}

// MarshalJSON leaves out what a slot held on another machine does not
// have here (path, id, epoch) rather than write a stale copy's values.
func (s TokenSlot) MarshalJSON() ([]byte, error) {
	type plain TokenSlot
	if s.Machine == "" {
		return json.Marshal(plain(s))
	}
	return json.Marshal(struct {
		Name       string           `json:"token"`
		Slot       int64            `json:"slot"`
		Free       bool             `json:"free"`
		Hold       string           `json:"hold,omitempty"`
		HeldBy     string           `json:"held_by,omitempty"`
		LeaseUntil schema.Timestamp `json:"lease_until,omitzero"`
		Machine    string           `json:"machine"`
	}{s.Name, s.Slot, s.Free, s.Hold, s.HeldBy, s.LeaseUntil, s.Machine})
}

// TokenSlots returns the slots of token name (of every token if name is
// empty), sorted by token and slot, after returning those of dead holders.
// A name with no slots at all is ErrUnknownToken: a typo is not an empty
// token.
func (sp *Space) TokenSlots(name string) ([]TokenSlot, error) {
	slots, _, err := sp.TokenSlotsChecked(name)
	return slots, err
}

// TokenSlotsChecked is TokenSlots that also returns the slot files that
// could not be read (a hand edit that broke the frontmatter: path:line:col),
// for a listing to warn about; those slots are not listed; and an
// *EngineViewError when the engine could not be asked what other machines
// hold.
func (sp *Space) TokenSlotsChecked(name string) ([]TokenSlot, []error, error) {
	return sp.ListTokenSlots(name, TokenListOptions{})
}

// TokenListOptions tune ListTokenSlots.
type TokenListOptions struct {
	// MaxAge lets the listing use the engine's view of the slots other
	// machines hold up to MaxAge old (coordination git: the claim refs an
	// earlier command fetched from the same remote, saving a fetch); an
	// *EngineViewAgeError among the errors then says how old. 0: ask.
	MaxAge time.Duration
}

// ListTokenSlots is TokenSlotsChecked with options.
func (sp *Space) ListTokenSlots(name string, opt TokenListOptions) ([]TokenSlot, []error, error) {
	_, _ = sp.reapTaken(TokenType)
	var bad []error
	var eerr error // the engine could not be asked
	slots, err := sp.slotList(name, func(err error) { bad = append(bad, err) })
	if err == nil {
		eng, at, lerr := sp.engineSlotsListing(name, opt.MaxAge)
		if eerr = lerr; eerr != nil {
			bad = append(bad, &EngineViewError{Op: "list", Path: "tuples/" + TokenType, Err: eerr})
		}
		if !at.IsZero() {
			bad = append(bad, &EngineViewAgeError{Op: "list", What: "slots held", Path: "tuples/" + TokenType, At: at, Now: time.Now(), MaxAge: opt.MaxAge})
		}
		slots = sp.withEngineSlots(name, slots, eng) // several machines (coord.go)
	}
	if err == nil && name != "" && len(slots) == 0 {
		// An engine that could not be reached just now is not asked
		// again (it would wait its full timeout to say the same).
		if eerr == nil {
			if slot, machine, ok := sp.slotInTransit(name); ok {
				return nil, bad, &SlotInTransitError{Op: "ls", Name: name, Slot: slot, Machine: machine}
			}
		}
		return nil, bad, sp.unknownToken(name)
	}
	return slots, bad, err
}

// Slots is TokenSlots without the reap: it changes nothing, so an observer
// (a view) may call it as often as it likes. Slots of dead holders are
// listed as held until someone reaps them.
func (sp *Space) Slots(name string) ([]TokenSlot, error) { return sp.slotList(name, nil) }

// slotList is Slots passing the files that do not parse to bad (nil:
// skipped in silence).
func (sp *Space) slotList(name string, bad func(error)) ([]TokenSlot, error) {
	var p Pattern
	if name != "" {
		p = Pattern{{Cond: docstore.Cond{Field: "token", Op: docstore.OpEq, Value: name}}}
	}
	var docs []*docstore.Doc
	_, err := sp.scan(TokenType, p, bad, func(d *docstore.Doc, _ map[string]any) bool {
		docs = append(docs, d)
		return true
	})
	if err != nil {
		return nil, err
	}
	all, err := sp.allHeldBad(bad)
	if err != nil {
		return nil, err
	}
	var held []*docstore.Doc
	for _, d := range all {
		if name == "" || d.String("token") == name {
			held = append(held, d)
		}
	}
	var out []TokenSlot
	for i, d := range append(docs, held...) {
		s := TokenSlot{Name: d.String("token"), ID: d.String("id"), Free: i < len(docs), Path: d.Path,
			Hold: d.String("hold"), HeldBy: d.String("held_by"), Instance: d.String("instance")}
		s.Slot, _ = d.Int("slot")
		s.Epoch, _ = d.Int("epoch")
		s.Acquired.Time, _ = d.Time("acquired")
		s.LeaseUntil.Time, _ = d.Time("lease_until")
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

func (sp *Space) allHeld() ([]*docstore.Doc, error) { return sp.allHeldBad(nil) }

// allHeldBad is allHeld passing the files that do not parse to bad.
func (sp *Space) allHeldBad(bad func(error)) ([]*docstore.Doc, error) {
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
			d, err := sp.store.Get(takenPath(TokenType, id))
			switch {
			case err == nil && d.Has("token"):
				out = append(out, d)
			case err != nil && !errors.Is(err, docstore.ErrNotExist) && bad != nil:
				bad(err)
			}
		}
	}
	return out, nil
}
