package tuples

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// ReservationType is the tuple type of path reservations: one tuple
// tuples/reservation/<id>.md per (agent, glob), with agent:, glob:,
// optional reason:, expires: for the TTL, and for a reservation tied to a
// live holder hold:, liveness_lock: and instance:.
const ReservationType = "reservation"

// reservationsLockKey serialises every reservation writer, so that the
// conflict check and the write are one step: two agents reserving
// overlapping globs at once cannot both succeed.
const reservationsLockKey = "reservations"

// Reservation is one agent's exclusive claim on the paths a glob matches.
type Reservation struct {
	ID       string           `json:"id"`
	Agent    string           `json:"agent"`
	Glob     string           `json:"glob"`
	Reason   string           `json:"reason,omitempty"`
	Created  schema.Timestamp `json:"created"`
	Expires  schema.Timestamp `json:"expires,omitzero"` // zero: until unreserved (or its holder dies)
	Hold     string           `json:"hold,omitempty"`   // HoldAgent, HoldProcess; "": a lease (Expires) or until unreserved
	Instance string           `json:"instance,omitempty"`
	Path     string           `json:"path"`
	// Machine is set for a reservation made on another machine whose file
	// has not synced here yet, known from the coordination engine only:
	// it has no Path, ID or Created here, and its JSON leaves them out.
	Machine string `json:"machine,omitempty"`

	lockKey string // liveness_lock
	glob    Glob
}

// MarshalJSON leaves out what a reservation made on another machine does
// not have here (id, created, path).
func (r Reservation) MarshalJSON() ([]byte, error) {
	type plain Reservation
	if r.Machine == "" {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		Agent   string           `json:"agent"`
		Glob    string           `json:"glob"`
		Reason  string           `json:"reason,omitempty"`
		Expires schema.Timestamp `json:"expires,omitzero"`
		Machine string           `json:"machine"`
	}{r.Agent, r.Glob, r.Reason, r.Expires, r.Machine})
}

// Conflict is one overlap between what an agent asked for (a glob to
// reserve, or a path it is about to commit) and another agent's
// reservation.
type Conflict struct {
	Want string       `json:"want"`
	Held *Reservation `json:"held"`
	// Gone, when set, says why the holder is gone (its process died, a
	// newer instance replaced it): the reservation is being released and
	// does not stand in the way.
	Gone string `json:"holder_gone,omitempty"`
}

func (c Conflict) String() string {
	s := fmt.Sprintf("%s overlaps %s reserved by %s", c.Want, c.Held.Glob, c.Held.Agent)
	if c.Gone != "" {
		return s + " (holder gone: " + c.Gone + "; the reservation is being released)"
	}
	if !c.Held.Expires.IsZero() {
		s += " until " + schema.FormatTime(c.Held.Expires.Time)
	}
	if c.Held.Reason != "" {
		s += " (" + c.Held.Reason + ")"
	}
	if c.Held.Machine != "" {
		s += " on " + c.Held.Machine
	}
	return s
}

// ReserveOptions are the optional parts of a reservation.
type ReserveOptions struct {
	TTL    time.Duration // > 0: the reservation lapses after it; 0: until unreserved (or its holder dies)
	Reason string
	// Instance is the caller's instance of the agent ($TAVERN_INSTANCE).
	// It is recorded, so an unreserve by another instance of the same
	// agent name is fenced; a dead instance (replaced by a newer spawn,
	// or whose spawn wrapper is gone) cannot reserve.
	Instance string
	// Process ties reservations of an agent that has no live liveness
	// lock to this Space's process instead: they are released when the
	// process dies or the Space is closed (a long-running library user).
	Process bool
	// Released, if set, is told of each overlapping reservation Reserve
	// released because its holder is gone (Conflict.Gone says why).
	Released func(Conflict)
}

// UnreserveOptions say who drops reservations.
type UnreserveOptions struct {
	// Instance, if set, is the caller's instance: an agent's reservation
	// recorded with another instance is not dropped (FencedError).
	Instance string
}

// Reserve gives agent exclusive reservations on globs, all or nothing: if
// any glob overlaps a live reservation of another agent, nothing is
// written and a *ReservedError lists every conflict. Overlaps are checked
// both ways (a broad glob against narrow ones already held and the
// reverse). Re-reserving a glob the agent holds renews its TTL.
//
// What keeps a reservation: if agent's liveness lock is held (a spawned
// agent), the agent's life (and instance), like a token or a claim; with
// opt.Process, this process's; otherwise its TTL, or an unreserve.
// Reservations whose holder is gone and expired ones are released on the
// way (opt.Released hears of those that overlapped).
func (sp *Space) Reserve(agent string, globs []string, opt ReserveOptions) ([]*Reservation, error) {
	rs, conflicts, err := sp.reserve(agent, globs, opt)
	if err == nil && len(conflicts) > 0 {
		for _, c := range conflicts {
			sp.event("reservation.conflict", journal.Event{Agent: agent, Path: c.Held.Path, Data: map[string]any{
				"glob": c.Want, "held_glob": c.Held.Glob, "held_by": c.Held.Agent}})
		}
		err = &ReservedError{Conflicts: conflicts}
	}
	return rs, err
}

// ReserveWait is Reserve that, while another agent's live reservation
// overlaps, waits until ctx is done (then it returns the last
// *ReservedError). It wakes when a reservation is dropped or changed, when
// the first conflicting one expires, and every LivenessPoll while a
// conflicting one is tied to a live holder (a death drops a lock, which is
// no filesystem event). The refusals while it waits are not journaled one
// by one: one reservation.waiting when it starts to wait, one
// reservation.conflict if it gives up.
func (sp *Space) ReserveWait(ctx context.Context, agent string, globs []string, opt ReserveOptions) ([]*Reservation, error) {
	dir, err := sp.typeDirAbs(ReservationType)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var rs []*Reservation
	var conflicts []Conflict
	refusals := 0
	wake := func() time.Time { return sp.nextReservationLook(conflicts) }
	waiting := func() {
		sp.event("reservation.waiting", journal.Event{Agent: agent, Data: map[string]any{"globs": globs, "conflicts": conflictData(conflicts)}})
	}
	werr := watcher.WaitDir(ctx, []string{dir}, sp.waitOptions(anyChange, wake, waiting), func() (bool, error) {
		var err error
		rs, conflicts, err = sp.reserve(agent, globs, opt)
		if err == nil && len(conflicts) > 0 {
			refusals++
			return false, nil
		}
		return true, err
	})
	if werr == nil || ctx.Err() == nil {
		return rs, werr
	}
	// One last try: the deadline may have raced an unreserve.
	if rs, conflicts, err = sp.reserve(agent, globs, opt); err != nil || len(conflicts) == 0 {
		return rs, err
	}
	sp.event("reservation.conflict", journal.Event{Agent: agent, Data: map[string]any{
		"globs": globs, "conflicts": conflictData(conflicts), "waited": time.Since(start).Round(time.Millisecond).String(), "refusals": refusals + 1}})
	return nil, &ReservedError{Conflicts: conflicts}
}

func conflictData(cs []Conflict) []map[string]any {
	out := make([]map[string]any, len(cs))
	for i, c := range cs {
		out[i] = map[string]any{"glob": c.Want, "held_glob": c.Held.Glob, "held_by": c.Held.Agent, "path": c.Held.Path}
		if c.Held.Machine != "" { // made there, its file not here yet
			delete(out[i], "path")
			out[i]["machine"] = c.Held.Machine
		}
	}
	return out
}

// nextReservationLook is when a waiter should look at its conflicts again
// without an event: at the next liveness check if a live holder keeps one,
// else when the first one expires (zero: only events wake it).
func (sp *Space) nextReservationLook(conflicts []Conflict) time.Time {
	var first time.Time
	for _, c := range conflicts {
		if c.Held.Hold != "" {
			return sp.now().Add(sp.poll)
		}
		if e := c.Held.Expires; !e.IsZero() && (first.IsZero() || e.Before(first)) {
			first = e.Time
		}
	}
	return first
}

// reserve is one attempt of Reserve: the reservations, or the conflicts
// that refused them (and a nil error).
func (sp *Space) reserve(agent string, globs []string, opt ReserveOptions) ([]*Reservation, []Conflict, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, nil, err
	}
	if len(globs) == 0 {
		return nil, nil, fmt.Errorf("%w: no glob given", ErrBadGlob)
	}
	want := make([]Glob, len(globs))
	for i, s := range globs {
		g, err := ParseGlob(s)
		if err != nil {
			return nil, nil, err
		}
		want[i] = g
	}
	h, err := sp.holdFor("reserve", agent, opt.Instance, opt.TTL)
	if errors.Is(err, ErrHolderNotAlive) {
		// Not a live agent and no TTL: until unreserved, or the
		// process's life if asked.
		h, err = holder{as: agent, instance: opt.Instance}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if h.hold != HoldAgent {
		h.hold = ""
		if opt.Process {
			key, err := sp.holderLock()
			if err != nil {
				return nil, nil, err
			}
			h.hold, h.lockKey = HoldProcess, key
		}
	}
	l, err := sp.store.Lock(reservationsLockKey)
	if err != nil {
		return nil, nil, err
	}
	defer l.Unlock()
	unlock, err := sp.coordReserveLock() // several machines (coord.go)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	live, _ := sp.reservations(func(c Conflict) {
		if opt.Released == nil {
			return
		}
		for _, g := range want {
			if c.Held.Agent != agent && g.Overlaps(c.Held.glob) {
				c.Want = g.String()
				opt.Released(c)
				return
			}
		}
	})
	var conflicts []Conflict
	for _, g := range want {
		for _, r := range live {
			if r.Agent != agent && g.Overlaps(r.glob) {
				conflicts = append(conflicts, Conflict{Want: g.String(), Held: r})
			}
		}
	}
	if len(conflicts) > 0 {
		return nil, conflicts, nil
	}
	var out []*Reservation
	seen := map[string]bool{}
	for _, g := range want {
		if seen[g.String()] {
			continue
		}
		seen[g.String()] = true
		r, err := sp.reserveOne(agent, g, h, opt, live)
		if err != nil {
			return out, nil, err
		}
		out = append(out, r)
	}
	return out, nil, nil
}

func (sp *Space) reserveOne(agent string, g Glob, h holder, opt ReserveOptions, live []*Reservation) (*Reservation, error) {
	for _, r := range live {
		if r.Agent != agent || r.Glob != g.String() {
			continue
		}
		// Renew in place, and tie it to the renewing holder. Writers of
		// reservations hold reservationsLockKey.
		d, err := sp.store.UpdateHeld(nil, r.Path, func(d *docstore.Doc) error {
			fence, err := sp.coordReserve(agent, g, opt, d) // several machines (coord.go)
			if err != nil {
				return err
			}
			if err := d.SetMany(fence); err != nil {
				return err
			}
			if opt.TTL > 0 {
				if err := d.Set("expires", sp.now().Add(opt.TTL)); err != nil {
					return err
				}
			} else if err := d.Delete("expires"); err != nil {
				return err
			}
			if opt.Reason != "" {
				if err := d.Set("reason", opt.Reason); err != nil {
					return err
				}
			}
			return setHolder(d, h)
		})
		if errors.Is(err, docstore.ErrNotExist) {
			break // collected meanwhile: make a new one
		}
		if err != nil {
			return nil, err
		}
		nr := sp.reservationOf(d)
		sp.event("reservation.renewed", journal.Event{Agent: agent, Path: nr.Path, Data: reservationData(nr)})
		return nr, nil
	}
	values := []docstore.Field{{Key: "agent", Value: agent}, {Key: "glob", Value: g.String()}}
	if opt.Reason != "" {
		values = append(values, docstore.Field{Key: "reason", Value: opt.Reason})
	}
	fence, err := sp.coordReserve(agent, g, opt, nil) // several machines (coord.go)
	if err != nil {
		return nil, err
	}
	values = append(values, fence...)
	t, err := sp.out(ReservationType, values, OutOptions{TTL: opt.TTL, Edit: func(d *docstore.Doc) error { return setHolder(d, h) }})
	if err != nil {
		return nil, err
	}
	r := sp.reservationOf(t.Doc)
	sp.event("reservation.made", journal.Event{Agent: agent, Path: r.Path, Data: reservationData(r)})
	return r, nil
}

func reservationData(r *Reservation) map[string]any {
	m := map[string]any{"glob": r.Glob, "id": r.ID}
	if r.Hold != "" {
		m["hold"] = r.Hold
	}
	if r.Instance != "" {
		m["instance"] = r.Instance
	}
	return m
}

// setHolder records what keeps a reservation (nothing: a lease or until
// unreserved).
func setHolder(d *docstore.Doc, h holder) error {
	for _, f := range []struct{ key, value string }{{"hold", h.hold}, {"liveness_lock", h.lockKey}, {"instance", h.instance}} {
		var err error
		if f.value == "" {
			err = d.Delete(f.key)
		} else {
			err = d.Set(f.key, f.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (sp *Space) reservationOf(d *docstore.Doc) *Reservation {
	r := &Reservation{ID: d.String("id"), Agent: d.String("agent"), Glob: d.String("glob"), Reason: d.String("reason"), Path: d.Path,
		Hold: d.String("hold"), Instance: d.String("instance"), lockKey: d.String("liveness_lock")}
	r.Created.Time, _ = d.Time("created")
	r.Expires.Time, _ = d.Time("expires")
	return r
}

// Reservations returns every live reservation, oldest first. Expired ones
// and those whose holder is gone are released on the way. A reservation
// file whose glob does not parse is reported in the errors and ignored.
// With coordination etcd or git, those made on other machines whose files
// have not synced here are listed from the engine (Machine set); an
// engine out of reach is an *EngineViewError among the errors.
func (sp *Space) Reservations() ([]*Reservation, []error) {
	return sp.ListReservations(ReservationListOptions{})
}

// ReservationListOptions tune ListReservations.
type ReservationListOptions struct {
	// MaxAge lets the listing use the engine's view of the reservations
	// other machines made up to MaxAge old (coordination git: the claim
	// refs an earlier command fetched from the same remote, saving a
	// fetch); an *EngineViewAgeError among the errors then says how old.
	// 0: ask.
	MaxAge time.Duration
}

// ListReservations is Reservations with options.
func (sp *Space) ListReservations(opt ReservationListOptions) ([]*Reservation, []error) {
	var docs []*docstore.Doc
	var errs []error
	if err := sp.scanAll(ReservationType, func(err error) { errs = append(errs, err) }, func(d *docstore.Doc) { docs = append(docs, d) }); err != nil {
		errs = append(errs, err)
	}
	va := &queues.ViewAge{MaxAge: opt.MaxAge}
	held, err := sp.engineReservationsErr(va)
	if err != nil {
		errs = append(errs, &EngineViewError{Op: "list", Path: "tuples/" + ReservationType, Err: err})
	}
	if err == nil && !va.At.IsZero() {
		errs = append(errs, &EngineViewAgeError{Op: "list", What: "reservations made", Path: "tuples/" + ReservationType, At: va.At, Now: time.Now(), MaxAge: opt.MaxAge})
	}
	out, rerrs := sp.reservationsHeld(docs, nil, nil, held)
	return out, append(errs, rerrs...)
}

func (sp *Space) reservations(released func(Conflict)) ([]*Reservation, []error) {
	// List skips expired tuples; read them all to collect those too.
	var docs []*docstore.Doc
	var errs []error
	if err := sp.scanAll(ReservationType, func(err error) { errs = append(errs, err) }, func(d *docstore.Doc) { docs = append(docs, d) }); err != nil {
		errs = append(errs, err)
	}
	out, rerrs := sp.reservationsOf(docs, released)
	return out, append(errs, rerrs...)
}

// AgentReservations returns agent's live reservations, oldest first,
// parsing only the reservation files that mention agent (those of other
// agents are left as they are, gone or not).
func (sp *Space) AgentReservations(agent string) ([]*Reservation, []error) {
	docs, errs := sp.store.Grep(typeDir(ReservationType), agent)
	var mine []*docstore.Doc
	for _, d := range docs {
		if d.String("agent") == agent {
			mine = append(mine, d)
		}
	}
	out, rerrs := sp.reservationsOf(mine, nil)
	return out, append(errs, rerrs...)
}

// reservationsOf turns reservation documents into live reservations,
// releasing (and leaving out) those that no longer stand.
func (sp *Space) reservationsOf(docs []*docstore.Doc, released func(Conflict)) ([]*Reservation, []error) {
	return sp.reservationsOrBroken(docs, released, nil)
}

// reservationsOrBroken is reservationsOf, passing the reservations it
// cannot use (a glob that does not parse, no valid agent: a hand edit) to
// broken, when set, besides reporting them in the errors: unreserve can
// still drop them by id or agent.
func (sp *Space) reservationsOrBroken(docs []*docstore.Doc, released func(Conflict), broken func(*Reservation)) ([]*Reservation, []error) {
	return sp.reservationsHeld(docs, released, broken, sp.engineReservations()) // several machines (coord.go)
}

// reservationsHeld is reservationsOrBroken given the engine's live
// reservations (nil: none known).
func (sp *Space) reservationsHeld(docs []*docstore.Doc, released func(Conflict), broken func(*Reservation), held map[string]queues.ClaimState) ([]*Reservation, []error) {
	var errs []error
	out := make([]*Reservation, 0, len(docs))
	goneHere := func(d *docstore.Doc) (string, bool) {
		if why, gone := sp.reservationGone(d); gone {
			if lu, ok := renewedElsewhere(d, held); !ok || why != "expired" || !sp.now().Before(lu) {
				return why, true
			}
			// Renewed on another machine: this copy's expires is old.
		}
		return unregistered(d, held)
	}
	// The engine's lease end of a reservation renewed on another machine
	// whose renewed file has not synced here yet.
	renewed := func(r *Reservation, d *docstore.Doc) *Reservation {
		if lu, ok := renewedElsewhere(d, held); ok {
			r.Expires.Time = lu
		}
		return r
	}
	for _, d := range docs {
		r := sp.reservationOf(d)
		g, err := reservationGlob(d)
		if err != nil {
			errs = append(errs, err)
			if broken != nil {
				broken(r)
			}
			continue
		}
		r.glob = g
		if why, gone := goneHere(d); gone {
			ok, err := sp.releaseReservation(r, why, goneHere)
			switch {
			case err != nil:
				errs = append(errs, err)
			case ok:
				if released != nil {
					released(Conflict{Held: r, Gone: why})
				}
			default:
				// Kept: renewed since we read it (by a live successor), or
				// someone else is releasing it. Read it again.
				if d, err := sp.store.Get(r.Path); err == nil {
					if _, gone := goneHere(d); !gone {
						nr := renewed(sp.reservationOf(d), d)
						nr.glob = g
						out = append(out, nr)
					}
				}
			}
			continue
		}
		out = append(out, renewed(r, d))
	}
	return sp.withRemote(out, held), errs // several machines (coord.go)
}

// reservationGone says whether a reservation no longer stands: expired,
// or its holder is gone.
func (sp *Space) reservationGone(d *docstore.Doc) (string, bool) {
	if sp.expired(d) {
		return "expired", true
	}
	switch d.String("hold") {
	case HoldAgent:
		return sp.agentGone(d.String("agent"), d.String("liveness_lock"), d.String("instance"))
	case HoldProcess:
		if !sp.lockHeld(d.String("liveness_lock")) {
			return "holder process died", true
		}
	}
	return "", false
}

// releaseReservation archives a reservation that no longer stands, after
// checking again under its claim with gone (it may have been renewed
// meanwhile).
func (sp *Space) releaseReservation(r *Reservation, why string, gone func(*docstore.Doc) (string, bool)) (bool, error) {
	ok, err := sp.discard(ReservationType, r.ID, func(d *docstore.Doc) bool { _, g := gone(d); return !g })
	if !ok || err != nil {
		return false, err
	}
	sp.coordUnreserve(r) // several machines (coord.go)
	ev := "reservation.reclaimed"
	if why == "expired" {
		ev = "reservation.expired"
	}
	sp.event(ev, journal.Event{Agent: r.Agent, Path: r.Path, Data: map[string]any{"glob": r.Glob, "id": r.ID, "reason": why}})
	return true, nil
}

// Unreserve drops agent's reservations of the given globs (all of its
// reservations if none are given), archiving them to .trash/, and returns
// how many it dropped. If any of them is recorded with an instance other
// than opt.Instance (when set), nothing is dropped: *FencedError.
func (sp *Space) Unreserve(agent string, globs []string, opt UnreserveOptions) (int, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return 0, err
	}
	which := map[string]bool{}
	for _, s := range globs {
		g, err := ParseGlob(s)
		if err != nil {
			return 0, err
		}
		which[g.String()] = true
	}
	// A reservation whose glob a hand edit broke is dropped with all of
	// the agent's (it is the agent's; it guards nothing); a GLOB given
	// cannot be told to be its glob, and it stays (check reports it).
	load := func() ([]*Reservation, []error) {
		docs, errs := sp.store.Grep(typeDir(ReservationType), agent)
		var mine []*docstore.Doc
		for _, d := range docs {
			if d.String("agent") == agent {
				mine = append(mine, d)
			}
		}
		var broken []*Reservation
		out, rerrs := sp.reservationsOrBroken(mine, nil, func(r *Reservation) { broken = append(broken, r) })
		if len(which) == 0 {
			out = append(out, broken...)
		}
		return out, append(errs, rerrs...)
	}
	return sp.unreserve(load, func(r *Reservation) bool {
		return r.Agent == agent && (len(which) == 0 || which[r.Glob])
	}, opt.Instance)
}

// UnreserveID drops one reservation by its id, whoever holds it and
// whatever its instance: an id names one reservation and is never reused,
// so it is its own fence. With agent set, it must be agent's: another
// agent's is a *HeldByError naming its holder (ErrNotYours; the CLI's
// exit 4, as another's claim — it used to be ErrNotReserved, exit 3,
// "no such reservation" of one that exists, which no documented contract
// promised). It returns ErrNotReserved if no live reservation has that
// id.
func (sp *Space) UnreserveID(id, agent string) error {
	if err := schema.ValidName(id); err != nil {
		return fmt.Errorf("reservation id: %w", err)
	}
	if agent != "" {
		if err := schema.ValidAgentName(agent); err != nil {
			return err
		}
	}
	var other *Reservation
	byID := func() ([]*Reservation, []error) {
		docs, errs := sp.store.Grep(typeDir(ReservationType), id) // its id is in it
		// One whose glob or agent a hand edit broke is still the file
		// of that id: dropped too.
		var broken []*Reservation
		out, rerrs := sp.reservationsOrBroken(docs, nil, func(r *Reservation) { broken = append(broken, r) })
		return append(out, broken...), append(errs, rerrs...)
	}
	n, err := sp.unreserve(byID, func(r *Reservation) bool {
		if r.ID == id && agent != "" && r.Agent != agent {
			other = r
			return false
		}
		return r.ID == id
	}, "")
	switch {
	case err != nil:
		return err
	case other != nil:
		return &HeldByError{Op: "unreserve reservation " + id, Path: other.Path, Holder: other.Agent, As: agent}
	case n == 0:
		return fmt.Errorf("reservation %s: %w", id, ErrNotReserved)
	}
	return nil
}

// unreserve drops the reservations load returns that match, under the
// reservations lock (load reads only those that could match: the files
// naming the agent or the id).
func (sp *Space) unreserve(load func() ([]*Reservation, []error), match func(*Reservation) bool, instance string) (int, error) {
	l, err := sp.store.Lock(reservationsLockKey)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	live, _ := load()
	var mine []*Reservation
	for _, r := range live {
		if !match(r) {
			continue
		}
		if instance != "" && r.Instance != "" && r.Instance != instance {
			return 0, &FencedError{Op: "unreserve", Agent: r.Agent, Instance: instance, Holder: r.Instance, Path: r.Path}
		}
		mine = append(mine, r)
	}
	n := 0
	var errs []error
	for _, r := range mine {
		sp.coordUnreserve(r) // several machines (coord.go)
		if r.ID == "" {
			n++ // made on another machine and not synced here yet
			continue
		}
		ok, err := sp.discard(ReservationType, r.ID, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			n++
			sp.event("reservation.released", journal.Event{Agent: r.Agent, Path: r.Path, Data: map[string]any{"glob": r.Glob, "id": r.ID}})
		}
	}
	return n, errors.Join(errs...)
}

// CheckPaths returns the conflicts between paths (relative to the project
// root, slash-separated) and live reservations of agents other than
// agent. An empty agent conflicts with every reservation. Reservations
// whose holder is gone do not conflict (they are released on the way).
// Reservation files that cannot be read or used (a file that does not
// parse, a glob that does not) are left out, and named in a
// *SkippedError returned with the conflicts found among the others.
//
// It runs before every edit an agent tool makes (the pre-tool-use hook),
// so it does the least it can: every reservation file is read, but only
// those of other agents whose glob's literal prefix begins one of the
// paths are compiled, matched and checked for liveness (and released when
// gone); the others cannot match.
func (sp *Space) CheckPaths(agent string, paths []string) ([]Conflict, error) {
	return sp.checkPaths(agent, "", paths)
}

// checkPaths is CheckPaths for the committer's instance: with instance
// set, a reservation of another instance of agent is another holder's (a
// respawned successor's), not the committer's own.
func (sp *Space) checkPaths(agent, instance string, paths []string) ([]Conflict, error) {
	own := func(agentOf, instanceOf string) bool {
		return agentOf == agent && (instance == "" || instanceOf == "" || instanceOf == instance)
	}
	var docs []*docstore.Doc
	var bad []error
	err := sp.scanAll(ReservationType, func(err error) { bad = append(bad, err) }, func(d *docstore.Doc) {
		if own(d.String("agent"), d.String("instance")) {
			return
		}
		pre := globPrefix(d.String("glob"))
		for _, p := range paths {
			if strings.HasPrefix(p, pre) {
				docs = append(docs, d)
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	live, errs := sp.reservationsOf(docs, nil)
	var out []Conflict
	for _, p := range paths {
		for _, r := range live {
			if !own(r.Agent, r.Instance) && r.glob.Match(p) {
				out = append(out, Conflict{Want: p, Held: r})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Want < out[j].Want })
	return out, skipped("check paths", append(bad, errs...))
}

// skipped is the *SkippedError of a check that left out the files of
// errs, nil when there are none.
func skipped(op string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &SkippedError{Op: op, Path: typeDir(ReservationType), Errs: errs}
}

// CheckTrees returns the conflicts between directories (relative to the
// project root, slash-separated; "" or "." is the whole project) that a
// command removes or moves as a whole — every path under them — and live
// reservations of agents other than agent: a reservation conflicts when
// some path under the directory matches its glob. Want is the directory.
// Files it cannot use are left out and named, as by CheckPaths.
func (sp *Space) CheckTrees(agent string, dirs []string) ([]Conflict, error) {
	var trees []Glob
	var wants []string
	for _, d := range dirs {
		d = strings.Trim(d, "/")
		src := "**"
		if d == "" {
			d = "."
		}
		if d != "." {
			src = escapeGlob(d) + "/**"
		}
		g, err := ParseGlob(src)
		if err != nil {
			continue // not a path a glob can name: nothing to check
		}
		trees, wants = append(trees, g), append(wants, d)
	}
	if len(trees) == 0 {
		return nil, nil
	}
	var docs []*docstore.Doc
	var bad []error
	err := sp.scanAll(ReservationType, func(err error) { bad = append(bad, err) }, func(d *docstore.Doc) {
		if d.String("agent") != agent {
			docs = append(docs, d)
		}
	})
	if err != nil {
		return nil, err
	}
	live, errs := sp.reservationsOf(docs, nil)
	var out []Conflict
	for i, t := range trees {
		for _, r := range live {
			if r.Agent != agent && r.glob.Overlaps(t) {
				out = append(out, Conflict{Want: wants[i], Held: r})
			}
		}
	}
	return out, skipped("check trees", append(bad, errs...))
}

// escapeGlob quotes the characters a Glob gives a meaning to, so that the
// result matches s itself.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("*?[]\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// holderLock takes (once) and returns the key of the lock that keeps
// this Space's process-held reservations alive; Close lets go of it.
func (sp *Space) holderLock() (string, error) {
	sp.holdMu.Lock()
	defer sp.holdMu.Unlock()
	if sp.hold != nil {
		return sp.hold.Key, nil
	}
	host, _ := os.Hostname()
	var nonce [6]byte
	for i := range nonce {
		nonce[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rand.IntN(36)]
	}
	key := queues.HolderLockKey(host, os.Getpid(), string(nonce[:]))
	l, ok, err := sp.store.TryLock(key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("holder lock %s is taken", key)
	}
	sp.hold = l
	return key, nil
}

// reservationGlob is a reservation document's parsed glob, or why it
// cannot be used, at the field's line (a *schema.FieldError): a glob that
// does not parse or leaves the project, an agent that is no valid name.
func reservationGlob(d *docstore.Doc) (Glob, error) {
	at := func(key, msg string) error {
		line := d.KeyLine(key)
		if line == 0 {
			line = 1 // absent: the document's first line
		}
		return &schema.FieldError{Path: d.Path, Line: line, Col: 1, Field: key, Msg: msg}
	}
	g, err := ParseGlob(d.String("glob"))
	if err != nil {
		return g, at("glob", err.Error())
	}
	if schema.ValidName(d.String("agent")) != nil {
		return g, at("agent", "reservation without a valid agent")
	}
	return g, nil
}

// InstallChecks adds the reservation check `tavern check`
// (docstore.Store.Check) runs beyond the schema: a reservation whose glob
// or agent a hand edit broke. Every reader skips such a file (it guards
// nothing), so check must say so.
func InstallChecks(s *docstore.Store) {
	s.AddCheck("tuples/reservations", func(d *docstore.Doc) []error {
		if d.Kind != schema.Tuple || path.Dir(d.Path) != typeDir(ReservationType) {
			return nil
		}
		if _, err := reservationGlob(d); err != nil {
			return []error{err}
		}
		return nil
	})
}
