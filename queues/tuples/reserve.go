package tuples

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// ReservationType is the tuple type of path reservations: one tuple
// tuples/reservation/<id>.md per (agent, glob), with agent:, glob:,
// optional reason: and expires: for the TTL.
const ReservationType = "reservation"

// reservationsLockKey serialises every reservation writer, so that the
// conflict check and the write are one step: two agents reserving
// overlapping globs at once cannot both succeed.
const reservationsLockKey = "reservations"

// Reservation is one agent's exclusive claim on the paths a glob matches.
type Reservation struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent"`
	Glob    string    `json:"glob"`
	Reason  string    `json:"reason,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"` // zero: until unreserved
	Path    string    `json:"path"`

	glob Glob
}

// Conflict is one overlap between what an agent asked for (a glob to
// reserve, or a path it is about to commit) and another agent's
// reservation.
type Conflict struct {
	Want string       `json:"want"`
	Held *Reservation `json:"held"`
}

func (c Conflict) String() string {
	s := fmt.Sprintf("%s overlaps %s reserved by %s", c.Want, c.Held.Glob, c.Held.Agent)
	if !c.Held.Expires.IsZero() {
		s += " until " + schema.FormatTime(c.Held.Expires)
	}
	if c.Held.Reason != "" {
		s += " (" + c.Held.Reason + ")"
	}
	return s
}

// ReserveOptions are the optional parts of a reservation.
type ReserveOptions struct {
	TTL    time.Duration // > 0: the reservation lapses after it; 0: until unreserved
	Reason string
}

// Reserve gives agent exclusive reservations on globs, all or nothing: if
// any glob overlaps a live reservation of another agent, nothing is
// written and a *ReservedError lists every conflict. Overlaps are checked
// both ways (a broad glob against narrow ones already held and the
// reverse). Re-reserving a glob the agent holds renews its TTL.
func (sp *Space) Reserve(agent string, globs []string, opt ReserveOptions) ([]*Reservation, error) {
	if err := schema.ValidName(agent); err != nil {
		return nil, fmt.Errorf("agent name: %w", err)
	}
	if len(globs) == 0 {
		return nil, fmt.Errorf("%w: no glob given", ErrBadGlob)
	}
	if opt.TTL < 0 {
		return nil, fmt.Errorf("%w: negative TTL %s", ErrBadTuple, opt.TTL)
	}
	want := make([]Glob, len(globs))
	for i, s := range globs {
		g, err := ParseGlob(s)
		if err != nil {
			return nil, err
		}
		want[i] = g
	}
	l, err := sp.store.Lock(reservationsLockKey)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	unlock, err := sp.coordReserveLock() // several machines (coord.go)
	if err != nil {
		return nil, err
	}
	defer unlock()
	live, _ := sp.Reservations()
	var conflicts []Conflict
	for _, g := range want {
		for _, r := range live {
			if r.Agent != agent && g.Overlaps(r.glob) {
				conflicts = append(conflicts, Conflict{Want: g.String(), Held: r})
			}
		}
	}
	if len(conflicts) > 0 {
		for _, c := range conflicts {
			sp.event("reservation.conflict", journal.Event{Agent: agent, Path: c.Held.Path, Data: map[string]any{
				"glob": c.Want, "held_glob": c.Held.Glob, "held_by": c.Held.Agent}})
		}
		return nil, &ReservedError{Conflicts: conflicts}
	}
	var out []*Reservation
	seen := map[string]bool{}
	for _, g := range want {
		if seen[g.String()] {
			continue
		}
		seen[g.String()] = true
		r, err := sp.reserveOne(agent, g, opt, live)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (sp *Space) reserveOne(agent string, g Glob, opt ReserveOptions, live []*Reservation) (*Reservation, error) {
	for _, r := range live {
		if r.Agent != agent || r.Glob != g.String() {
			continue
		}
		// Renew in place. Writers of reservations hold reservationsLockKey.
		d, err := sp.store.UpdateHeld(nil, r.Path, func(d *docstore.Doc) error {
			fence, err := sp.coordReserve(agent, g, opt, d)
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
				return d.Set("reason", opt.Reason)
			}
			return nil
		})
		if errors.Is(err, docstore.ErrNotExist) {
			break // collected as it expired: make a new one
		}
		if err != nil {
			return nil, err
		}
		nr := sp.reservationOf(d)
		sp.event("reservation.renewed", journal.Event{Agent: agent, Path: nr.Path, Data: map[string]any{"glob": nr.Glob}})
		return nr, nil
	}
	values := []docstore.Field{{Key: "agent", Value: agent}, {Key: "glob", Value: g.String()}}
	if opt.Reason != "" {
		values = append(values, docstore.Field{Key: "reason", Value: opt.Reason})
	}
	fence, err := sp.coordReserve(agent, g, opt, nil)
	if err != nil {
		return nil, err
	}
	t, err := sp.Out(ReservationType, append(values, fence...), OutOptions{TTL: opt.TTL})
	if err != nil {
		return nil, err
	}
	r := sp.reservationOf(t.Doc)
	sp.event("reservation.made", journal.Event{Agent: agent, Path: r.Path, Data: map[string]any{"glob": r.Glob}})
	return r, nil
}

func (sp *Space) reservationOf(d *docstore.Doc) *Reservation {
	r := &Reservation{ID: d.String("id"), Agent: d.String("agent"), Glob: d.String("glob"), Reason: d.String("reason"), Path: d.Path}
	r.Created, _ = d.Time("created")
	r.Expires, _ = d.Time("expires")
	return r
}

// Reservations returns every live reservation, oldest first. A
// reservation file whose glob does not parse is reported in the errors
// and ignored.
func (sp *Space) Reservations() ([]*Reservation, []error) {
	out, errs := sp.localReservations()
	return sp.withRemote(out), errs // several machines (coord.go)
}

func (sp *Space) localReservations() ([]*Reservation, []error) {
	tuples, errs := sp.List(ReservationType, nil)
	out := make([]*Reservation, 0, len(tuples))
	for _, t := range tuples {
		r := sp.reservationOf(t.Doc)
		g, err := ParseGlob(r.Glob)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.Path, err))
			continue
		}
		if schema.ValidName(r.Agent) != nil {
			errs = append(errs, fmt.Errorf("%s: reservation without a valid agent", t.Path))
			continue
		}
		r.glob = g
		out = append(out, r)
	}
	return out, errs
}

// Unreserve drops agent's reservations of the given globs (all of its
// reservations if none are given), archiving them to .trash/, and returns
// how many it dropped.
func (sp *Space) Unreserve(agent string, globs []string) (int, error) {
	if err := schema.ValidName(agent); err != nil {
		return 0, fmt.Errorf("agent name: %w", err)
	}
	which := map[string]bool{}
	for _, s := range globs {
		g, err := ParseGlob(s)
		if err != nil {
			return 0, err
		}
		which[g.String()] = true
	}
	l, err := sp.store.Lock(reservationsLockKey)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	live, _ := sp.Reservations()
	n := 0
	var errs []error
	for _, r := range live {
		if r.Agent != agent || (len(which) > 0 && !which[r.Glob]) {
			continue
		}
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
			sp.event("reservation.released", journal.Event{Agent: agent, Path: r.Path, Data: map[string]any{"glob": r.Glob}})
		}
	}
	return n, errors.Join(errs...)
}

// CheckPaths returns the conflicts between paths (relative to the project
// root, slash-separated) and live reservations of agents other than
// agent. An empty agent conflicts with every reservation.
func (sp *Space) CheckPaths(agent string, paths []string) ([]Conflict, error) {
	live, _ := sp.Reservations()
	var out []Conflict
	for _, p := range paths {
		for _, r := range live {
			if r.Agent != agent && r.glob.Match(p) {
				out = append(out, Conflict{Want: p, Held: r})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Want < out[j].Want })
	return out, nil
}
