package tuples

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// Several machines (tavern.md coordination: etcd or git). Token slots and
// path reservations live in files that only reach other machines with
// the next sync, so the engine arbitrates them too:
//
//   - a slot is held on the engine under tokens/<name>/<slot number> as
//     well as in tuples/token/.taken/ here (claim_fence records the
//     engine's fence). A slot another machine holds looks free here, or
//     is missing (its file is in that machine's .taken/, which is not
//     synced, so a `token init` here makes it again under another id):
//     the key is the slot's number, not its file's id, so every copy of
//     slot i contends for one key, and acquiring it is refused by the
//     engine and the next slot is tried; `token ls`, a refused acquire
//     and `token init` count the engine's held slots (engineSlots). A
//     token with no file here and no held slot, whose slot the engine
//     knows all the same, was released elsewhere and its file is on its
//     way (slotInTransit): busy, not unknown. A process hold
//     rides the process's engine lease (a dead machine's slots come back
//     one lease later); an agent or lease hold is a lease of its TTL, or
//     of tavern.md default_lease when none is given.
//   - every reservation is also a key reservations/<agent>/<hash of the
//     glob> holding agent, glob and reason; Reserve takes the engine lock
//     locks/reservations, checks the engine's live reservations as well
//     as the local ones, and registers its own; Unreserve releases them.
//     A reservation without a TTL is a 50-year lease. A registered file
//     whose key the engine no longer holds (unreserved on a machine it
//     had not reached yet) is released when read (unregistered).
//
// Local coordination (the default) skips all of this.

// coordState is the Space's engine, opened on first use.
type coordState struct {
	once sync.Once
	c    queues.Coordinator
	err  error
}

func (sp *Space) coord() (queues.Coordinator, error) {
	cs := &sp.cs
	cs.once.Do(func() { cs.c, cs.err = queues.OpenCoordinator(sp.store) })
	return cs.c, cs.err
}

// coordinated reports whether an engine arbitrates (coordination etcd or
// git).
func (sp *Space) coordinated() bool {
	c, err := sp.coord()
	return err == nil && c != nil
}

func coordCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func tokenKey(name string, slot int64) string {
	return "tokens/" + name + "/" + strconv.FormatInt(slot, 10)
}

// errSlotElsewhere: the engine says another machine holds the slot.
var errSlotElsewhere = errors.New("slot held on another machine")

// coordAcquire claims a slot on the engine; it returns 0 without one.
func (sp *Space) coordAcquire(name string, slot int64, heldBy, hold string, opt AcquireOptions) (int64, error) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return 0, err
	}
	req := queues.ClaimRequest{Holder: heldBy, TTL: opt.TTL, Live: hold == HoldProcess}
	if !req.Live && req.TTL <= 0 {
		if req.TTL, err = queues.DefaultLease(sp.store); err != nil {
			return 0, err
		}
	}
	ctx, cancel := coordCtx()
	defer cancel()
	g, err := c.Claim(ctx, tokenKey(name, slot), req)
	if errors.Is(err, queues.ErrHeld) || errors.Is(err, queues.ErrFinished) {
		return 0, errSlotElsewhere
	}
	return g.Fence, err
}

// coordRelease frees a slot on the engine (best effort: a lost claim or
// an unreachable engine leaves the key to its lease, and no other
// machine can take the slot before that).
func (sp *Space) coordRelease(d *docstore.Doc) {
	fence, ok := d.Int("claim_fence")
	if !ok {
		return
	}
	slot, _ := d.Int("slot")
	c, err := sp.coord()
	if err != nil || c == nil {
		return
	}
	ctx, cancel := coordCtx()
	defer cancel()
	_ = c.Release(ctx, tokenKey(d.String("token"), slot), fence, false)
	_ = d.Delete("claim_fence")
}

// coordRetire marks a slot that token init dropped as finished on the
// engine, so that other machines, which still know its number, do not
// take it for a slot released elsewhere and on its way (slotsInTransit).
// Best effort: an engine that cannot be reached leaves it as it was.
func (sp *Space) coordRetire(name string, slot int64) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return
	}
	ctx, cancel := coordCtx()
	defer cancel()
	g, err := c.Claim(ctx, tokenKey(name, slot), queues.ClaimRequest{Holder: "token init", TTL: time.Minute})
	if err != nil {
		return
	}
	_ = c.Finish(ctx, tokenKey(name, slot), g.Fence, "dead", "retired by token init")
}

// coordRevive makes the number of a slot token init creates claimable on
// the engine again if an earlier init retired it.
func (sp *Space) coordRevive(name string, slot int64) error {
	c, err := sp.coord()
	if err != nil || c == nil {
		return err
	}
	ctx, cancel := coordCtx()
	defer cancel()
	st, err := c.State(ctx, tokenKey(name, slot))
	if err != nil || st.Finished == "" {
		return err
	}
	return c.Reopen(ctx, tokenKey(name, slot))
}

func reservationKey(agent, glob string) string {
	h := sha256.Sum256([]byte(glob))
	return "reservations/" + agent + "/" + hex.EncodeToString(h[:8])
}

type reservationRecord struct {
	Agent  string `json:"agent"`
	Glob   string `json:"glob"`
	Reason string `json:"reason,omitempty"`
	// Expires is the file's expires (a TTL), for other machines to show
	// before the file reaches them; absent: until unreserved (or a
	// record of an older tavern).
	Expires schema.Timestamp `json:"expires,omitzero"`
}

// noTTLLease is the engine lease of a reservation without a TTL.
const noTTLLease = 50 * 365 * 24 * time.Hour

// coordReserveLock takes the engine's reservations lock (a claim of
// locks/reservations, retried for up to 15s); the returned function
// releases it. Without an engine it does nothing.
func (sp *Space) coordReserveLock() (func(), error) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return func() {}, err
	}
	deadline := time.Now().Add(15 * time.Second)
	wait := 5 * time.Millisecond
	for {
		ctx, cancel := coordCtx()
		g, err := c.Claim(ctx, "locks/reservations", queues.ClaimRequest{Holder: "reserve", TTL: 30 * time.Second})
		cancel()
		if err == nil {
			return func() {
				ctx, cancel := coordCtx()
				defer cancel()
				_ = c.Release(ctx, "locks/reservations", g.Fence, true)
			}, nil
		}
		if !errors.Is(err, queues.ErrHeld) || time.Now().After(deadline) {
			return nil, fmt.Errorf("reservations lock on %s: %w", c.Engine(), err)
		}
		time.Sleep(wait) // another machine is reserving: its turn is short
		if wait < 200*time.Millisecond {
			wait *= 2
		}
	}
}

// engineReservations lists the engine's live reservation keys; nil
// without an engine, or one that cannot list or be reached (then the
// local files decide).
func (sp *Space) engineReservations() map[string]queues.ClaimState {
	held, _ := sp.engineReservationsErr(nil)
	return held
}

// engineReservationsErr is engineReservations with the engine's error
// (nil, nil without an engine). A read-only listing passes va: it gives
// up at once when the engine cannot be connected (ForListing) and
// accepts a view up to va.MaxAge old, which va.At then says.
func (sp *Space) engineReservationsErr(va *queues.ViewAge) (map[string]queues.ClaimState, error) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return nil, err
	}
	l, ok := c.(queues.Lister)
	if !ok {
		return nil, nil
	}
	ctx, cancel := coordCtx()
	defer cancel()
	if va != nil {
		ctx = queues.WithViewAge(queues.ForListing(ctx), va)
	}
	held, err := queues.ListWithLeases(ctx, l, "reservations/")
	if err != nil {
		return nil, err
	}
	return held, nil
}

// unregistered says whether reservation file d was registered on the
// engine (it records claim_fence) and the engine no longer has it: it was
// dropped on another machine (`unreserve --as` there frees the engine key
// of a file that had not reached it yet) or reclaimed there. Such a file
// guards nothing the engine would refuse to another agent, so keeping it
// would leave two overlapping reservations on every clone once the
// machines sync; it goes, as a reservation whose holder is gone does.
// held is engineReservations (nil: cannot tell, kept).
func unregistered(d *docstore.Doc, held map[string]queues.ClaimState) (string, bool) {
	if held == nil {
		return "", false
	}
	if _, ok := d.Int("claim_fence"); !ok {
		return "", false
	}
	if st, ok := held[reservationKey(d.String("agent"), d.String("glob"))]; ok && st.Held {
		return "", false
	}
	return "released on another machine (the engine has no record of it)", true
}

// renewedUntil returns the end of a reservation's engine lease when it is
// later than expires, the end its file or record says: renewed on another
// machine since (etcd's lease end is known to the second; a little
// earlier than the record's own is not a renewal). A lease of about
// noTTLLease is a reservation without a TTL.
func renewedUntil(st queues.ClaimState, expires time.Time) (time.Time, bool) {
	lu := st.LeaseUntil
	if !st.Held || expires.IsZero() || !lu.After(expires) || !lu.Before(time.Now().Add(noTTLLease/2)) {
		return time.Time{}, false
	}
	return lu, true
}

// renewedElsewhere returns the engine's lease end of reservation file d
// when the engine holds its key under the fence d records and that end is
// later than d's expires: the reservation was renewed on another machine
// and the renewed file has not synced here yet.
func renewedElsewhere(d *docstore.Doc, held map[string]queues.ClaimState) (time.Time, bool) {
	fence, ok := d.Int("claim_fence")
	if !ok || held == nil {
		return time.Time{}, false
	}
	st, ok := held[reservationKey(d.String("agent"), d.String("glob"))]
	if !ok || st.Fence != fence {
		return time.Time{}, false
	}
	exp, _ := d.Time("expires")
	return renewedUntil(st, exp)
}

// withRemote adds the engine's live reservations that have no local file
// yet (made on another machine, not synced) to live.
func (sp *Space) withRemote(live []*Reservation, held map[string]queues.ClaimState) []*Reservation {
	if held == nil {
		return live
	}
	have := map[string]bool{}
	for _, r := range live {
		have[reservationKey(r.Agent, r.Glob)] = true
	}
	for key, st := range held {
		if have[key] || !st.Held {
			continue
		}
		var rec reservationRecord
		if json.Unmarshal([]byte(st.Holder), &rec) != nil {
			continue
		}
		g, err := ParseGlob(rec.Glob)
		if err != nil {
			continue
		}
		r := &Reservation{Agent: rec.Agent, Glob: rec.Glob, Reason: rec.Reason, Machine: st.Machine, Expires: rec.Expires, glob: g}
		// A renewal there moves the engine's lease, not the record.
		if lu, ok := renewedUntil(st, r.Expires.Time); ok {
			r.Expires.Time = lu
		}
		live = append(live, r)
	}
	return live
}

// coordReserve registers a reservation on the engine (or renews this
// agent's registration of the same glob) and returns the field that
// records its fence in the reservation's file.
func (sp *Space) coordReserve(agent string, g Glob, opt ReserveOptions, cur *docstore.Doc) ([]docstore.Field, error) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return nil, err
	}
	ttl := opt.TTL
	if ttl <= 0 {
		ttl = noTTLLease
	}
	key := reservationKey(agent, g.String())
	ctx, cancel := coordCtx()
	defer cancel()
	if cur != nil {
		if fence, ok := cur.Int("claim_fence"); ok {
			if err := c.Renew(ctx, key, fence, ttl); err == nil {
				return nil, nil
			}
		}
	}
	rec := reservationRecord{Agent: agent, Glob: g.String(), Reason: opt.Reason}
	if opt.TTL > 0 {
		rec.Expires.Time = sp.now().Add(opt.TTL)
	}
	holder, _ := json.Marshal(rec)
	gr, err := c.Claim(ctx, key, queues.ClaimRequest{Holder: string(holder), TTL: ttl})
	if err != nil {
		return nil, err
	}
	return []docstore.Field{{Key: "claim_fence", Value: gr.Fence}}, nil
}

// coordUnreserve releases a reservation's engine key.
func (sp *Space) coordUnreserve(r *Reservation) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return
	}
	key := reservationKey(r.Agent, r.Glob)
	ctx, cancel := coordCtx()
	defer cancel()
	fence := int64(0)
	if d, err := sp.store.Get(r.Path); err == nil {
		fence, _ = d.Int("claim_fence")
	}
	if fence == 0 {
		if st, err := c.State(ctx, key); err == nil && st.Held {
			fence = st.Fence
		}
	}
	if fence != 0 {
		_ = c.Release(ctx, key, fence, true)
	}
}

// slotRef is a token's slot by number: what the engine arbitrates.
type slotRef struct {
	name string
	slot int64
}

// engineSlots returns the slots of token name (of every token: "") that
// the engine says are held, whichever machine holds them. A slot held on
// another machine has no file here (it sits in that machine's .taken/,
// which is not synced) or only a stale free copy, so the engine is the
// only one that knows. Without an engine, or one that cannot list or be
// reached: none (the local files decide, as with local coordination).
func (sp *Space) engineSlots(name string) map[slotRef]queues.ClaimState {
	m, _ := sp.engineSlotsErr(name, nil)
	return m
}

// engineSlotsListing is engineSlotsErr for `token ls`: it gives up fast
// on an engine it cannot connect to (ForListing) and accepts a view up to
// maxAge old, returning when it was fetched (zero: just now).
func (sp *Space) engineSlotsListing(name string, maxAge time.Duration) (map[slotRef]queues.ClaimState, time.Time, error) {
	va := &queues.ViewAge{MaxAge: maxAge}
	m, err := sp.engineSlotsErr(name, va)
	return m, va.At, err
}

// engineSlotsErr is engineSlots with the engine's error (nil, nil
// without an engine). A read-only listing passes va (ForListing, and a
// view up to va.MaxAge old, which va.At then says).
func (sp *Space) engineSlotsErr(name string, va *queues.ViewAge) (map[slotRef]queues.ClaimState, error) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return nil, err
	}
	l, ok := c.(queues.Lister)
	if !ok {
		return nil, nil
	}
	prefix := "tokens/"
	if name != "" {
		prefix += name + "/"
	}
	ctx, cancel := coordCtx()
	defer cancel()
	if va != nil {
		ctx = queues.WithViewAge(queues.ForListing(ctx), va)
	}
	held, err := queues.ListWithLeases(ctx, l, prefix)
	if err != nil {
		return nil, err
	}
	out := map[slotRef]queues.ClaimState{}
	for key, st := range held {
		rest, ok := strings.CutPrefix(key, "tokens/")
		i := strings.LastIndexByte(rest, '/')
		if !ok || i < 0 || !st.Held {
			continue
		}
		n, err := strconv.ParseInt(rest[i+1:], 10, 64)
		if err != nil {
			continue // a key of an older binary (by slot id)
		}
		if name == "" || rest[:i] == name {
			out[slotRef{rest[:i], n}] = st
		}
	}
	return out, nil
}

// withEngineSlots makes a listing of slots agree with the engine: a slot
// the engine says is held and that is not held here is listed as held by
// the engine's holder, on its machine, in place of its free copies; and,
// as the engine knows a slot by its number only, two copies of one slot
// (two machines that made the token before syncing) are listed once.
func (sp *Space) withEngineSlots(name string, slots []TokenSlot, eng map[slotRef]queues.ClaimState) []TokenSlot {
	if eng == nil {
		if c, err := sp.coord(); err != nil || c == nil {
			return slots // local coordination: each copy is a slot of its own
		}
	}
	byRef := map[slotRef]int{} // index in out
	var out []TokenSlot
	for _, s := range slots {
		ref := slotRef{s.Name, s.Slot}
		i, ok := byRef[ref]
		switch {
		case !ok:
			byRef[ref] = len(out)
			out = append(out, s)
		case out[i].Free && !s.Free, out[i].Free == s.Free && s.ID < out[i].ID:
			out[i] = s // the held copy, else the first made
		}
	}
	for ref, st := range eng {
		i, ok := byRef[ref]
		if ok && !out[i].Free {
			continue
		}
		// The local copy's id and epoch are not the holding's (the
		// acquire there raised the epoch): the handle is that machine's.
		s := TokenSlot{Name: ref.name, Slot: ref.slot, HeldBy: st.Holder, Machine: st.Machine}
		s.LeaseUntil.Time = st.LeaseUntil
		if ok {
			out[i] = s
			continue
		}
		byRef[ref] = len(out)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Slot < out[j].Slot
	})
	return out
}

// slotsInTransit returns the slots of token name the engine knows and
// that are neither here nor held (here(n) says which are): released or
// expired on another machine, whose files reach this one with the next
// sync. Slots are numbered from 0, so the probe stops at the first number
// that is not here and that the engine never saw. Without an engine, or
// one that cannot be reached: none (the local files decide).
func (sp *Space) slotsInTransit(name string, here func(int64) bool) []SlotInTransitError {
	c, err := sp.coord()
	if err != nil || c == nil {
		return nil
	}
	ctx, cancel := coordCtx()
	defer cancel()
	var out []SlotInTransitError
	for i := int64(0); i < 1024; i++ {
		if here(i) {
			continue
		}
		st, err := c.State(ctx, tokenKey(name, i))
		if err != nil || (st.Fence == 0 && !st.Held) {
			break
		}
		if !st.Held && st.Finished == "" { // finished: retired by token init
			out = append(out, SlotInTransitError{Op: "init", Name: name, Slot: i, Machine: st.Machine})
		}
	}
	return out
}

// slotInTransit says, for a token with no slot file here and none held
// on the engine, whether the engine knows one of its slots all the same:
// claimed there once and free now, so its file is on the machine that
// released it and reaches this one with the next sync. It returns the
// lowest such slot and its last machine. Slots are numbered from 0, so
// the probe stops at the first number the engine never saw. Without an
// engine, or one that cannot be reached: false (the local files decide).
func (sp *Space) slotInTransit(name string) (slot int64, machine string, ok bool) {
	c, err := sp.coord()
	if err != nil || c == nil {
		return 0, "", false
	}
	ctx, cancel := coordCtx()
	defer cancel()
	for i := int64(0); i < 64; i++ {
		st, err := c.State(ctx, tokenKey(name, i))
		if err != nil || (st.Fence == 0 && !st.Held) {
			return 0, "", false
		}
		if !st.Held {
			return i, st.Machine, true
		}
	}
	return 0, "", false
}
