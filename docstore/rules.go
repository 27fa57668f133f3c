package docstore

import (
	"errors"
	"slices"
)

// Write is one change about to be made through a Store, as its rules see
// it: nothing has reached the disk yet.
type Write struct {
	Op    string // "create", "update", "move" or "delete"
	Path  string // the document's path (for a move: where it goes)
	Prev  *Doc   // the document before the change; nil for a create (and for a delete of a file that does not parse)
	Doc   *Doc   // the document as it will be written; nil for a delete
	Force bool   // the writer asked to override what a rule lets be overridden (UpdateOptions.Force)

	derived *[]any // what amends attached (Attach), for Mutation.Derived
}

// Attach hands v (a journal event, for instance) to the observers of the
// mutation this write makes, as Mutation.Derived: an amend that derives a
// field also says what that means. A write that fails drops it.
func (w Write) Attach(v any) {
	if w.derived != nil {
		*w.derived = append(*w.derived, v)
	}
}

// An Amend edits a write before it is validated and ruled, to keep the
// fields the engine derives in step with those the writer changed
// (package agents: applied_state follows a legal change of state, so that
// `tavern set` and `tavern edit` leave the document as `agent state`
// would). It may edit w.Doc and Attach what the change means; an error
// refuses the write as a rule's does. Amends do not run on a delete.
type Amend func(Write) error

// A Rule checks a write before it is made and refuses it by returning an
// error; the write then fails with a *RefusedError wrapping that error and
// nothing is written. Rules run inside the write's lock, after the schema
// validation, so they see exactly what would be written.
type Rule func(Write) error

type namedRule struct {
	name string
	fn   Rule
}

type namedAmend struct {
	name string
	fn   Amend
}

// AddAmend installs an amend that every Create, Update, UpdateIf,
// UpdateWith, Move and SaveEdit through this Store runs before it
// validates and rules the write. One of the same name is replaced.
// Install amends before sharing the Store between goroutines.
func (s *Store) AddAmend(name string, fn Amend) {
	i := slices.IndexFunc(s.amends, func(a namedAmend) bool { return a.name == name })
	if i >= 0 {
		s.amends[i].fn = fn
		return
	}
	s.amends = append(s.amends, namedAmend{name, fn})
}

// amend runs the amends on w and returns what they attached.
func (s *Store) amend(w Write) ([]any, error) {
	if len(s.amends) == 0 {
		return nil, nil
	}
	var derived []any
	w.derived = &derived
	for _, a := range s.amends {
		if err := a.fn(w); err != nil {
			return nil, &RefusedError{Op: w.Op, Path: w.Path, Rule: a.name, Err: err}
		}
	}
	return derived, nil
}

// AddRule installs a rule that every Create, Update, UpdateIf, UpdateWith,
// Move, SaveEdit and Delete through this Store obeys (package agents installs the agent
// state machine and the commitment rules this way, so `tavern set` and
// `tavern edit` obey them as the library does). A rule of the same name
// is replaced. Install rules before sharing the Store between goroutines.
// Writes through a Dir and claims (the queue broker's item moves) are not
// ruled: no rule concerns them, and they are the hot path.
func (s *Store) AddRule(name string, fn Rule) {
	i := slices.IndexFunc(s.rules, func(r namedRule) bool { return r.name == name })
	if i >= 0 {
		s.rules[i].fn = fn
		return
	}
	s.rules = append(s.rules, namedRule{name, fn})
}

// HasRule reports whether a rule of that name is installed.
func (s *Store) HasRule(name string) bool {
	return slices.ContainsFunc(s.rules, func(r namedRule) bool { return r.name == name })
}

func (s *Store) checkRules(w Write) error {
	for _, r := range s.rules {
		if err := r.fn(w); err != nil {
			return &RefusedError{Op: w.Op, Path: w.Path, Rule: r.name, Err: err}
		}
	}
	return nil
}

// A Check reports what is wrong with a document beyond its schema (package
// agents: an agent state edited by hand to an illegal value, a commitment
// whose assertion changed). Check (the store check) runs every installed
// Check on every document that parses.
type Check func(*Doc) []error

type namedCheck struct {
	name string
	fn   Check
	mk   func() Check // AddRunCheck: makes fn for each run
}

// AddCheck installs a Check under a name (replacing one of the same name).
// Install checks before sharing the Store between goroutines.
func (s *Store) AddCheck(name string, fn Check) {
	s.addCheck(namedCheck{name: name, fn: fn})
}

// AddRunCheck installs a check that mk makes afresh at the start of each
// Check run, for a check that compares a document with others (two
// agents sharing an id): what it learns about the others must be this
// run's, not a run's before. One of the same name is replaced.
func (s *Store) AddRunCheck(name string, mk func() Check) {
	s.addCheck(namedCheck{name: name, mk: mk})
}

func (s *Store) addCheck(c namedCheck) {
	i := slices.IndexFunc(s.checks, func(o namedCheck) bool { return o.name == c.name })
	if i >= 0 {
		s.checks[i] = c
		return
	}
	s.checks = append(s.checks, c)
}

// runChecks are the checks of one Check run.
func (s *Store) runChecks() []Check {
	out := make([]Check, len(s.checks))
	for i, c := range s.checks {
		out[i] = c.fn
		if c.mk != nil {
			out[i] = c.mk()
		}
	}
	return out
}

// An Owner lists the documents that belong to d (package queues: an
// item's gates, gates/<id>.md; package messages: a channel's messages and
// notes), which name d and mean nothing without it. DeleteAll removes those that exist after it removes d, and
// RestoreTrashAll brings back those that are missing after it restores
// d: rm and restore keep an owner and what it owns together. d is the
// document as it was (a delete) or is again (a restore), never nil; an
// Owner must not list what still belongs to another copy of d.
type Owner func(d *Doc) []string

type namedOwner struct {
	name string
	fn   Owner
}

// AddOwner installs an Owner under a name (replacing one of the same
// name). Install owners before sharing the Store between goroutines.
func (s *Store) AddOwner(name string, fn Owner) {
	i := slices.IndexFunc(s.owners, func(o namedOwner) bool { return o.name == name })
	if i >= 0 {
		s.owners[i].fn = fn
		return
	}
	s.owners = append(s.owners, namedOwner{name, fn})
}

// A Locker names the locks, besides its document lock, that serialise
// the engine's writers of the document at rel (package queues: an item's
// state changes hold its item lock, not the document lock), or none.
// Delete, Update, SaveEdit and RestoreTrash take them, in order, before
// the document lock, so a removal, a restore or an edit never falls
// between the two steps of a claim. DeleteAll and RestoreTrashAll hold
// them until what the document owns has moved with it. d is the
// document when the caller has it and it is at no path yet (a restore:
// its copy in the trash, so a gate names its item there too); nil: the
// locker reads rel if it needs the document.
type Locker func(rel string, d *Doc) []string

type namedLocker struct {
	name string
	fn   Locker
}

// AddLocker installs a Locker under a name (replacing one of the same
// name). Install lockers before sharing the Store between goroutines.
func (s *Store) AddLocker(name string, fn Locker) {
	i := slices.IndexFunc(s.lockers, func(o namedLocker) bool { return o.name == name })
	if i >= 0 {
		s.lockers[i].fn = fn
		return
	}
	s.lockers = append(s.lockers, namedLocker{name, fn})
}

// AddCreateLocker installs a Locker whose locks a Create takes too, around
// its rules and its write (package queues: a gate's item's lock, which rm
// and claims hold, so the gate-item rule's look at the item holds until
// the gate is written). Plain lockers (AddLocker) are not taken by a
// create: engine code creates a channel's chunks under the channel's lock
// it already holds. An engine caller that holds a create locker's lock
// says so (CreateOptions.Held). One of the same name is replaced.
func (s *Store) AddCreateLocker(name string, fn Locker) {
	i := slices.IndexFunc(s.createLockers, func(o namedLocker) bool { return o.name == name })
	if i >= 0 {
		s.createLockers[i].fn = fn
		return
	}
	s.createLockers = append(s.createLockers, namedLocker{name, fn})
}

// lockerKeys lists the keys lockers name for rel (d as lockerFn's d),
// sorted, without duplicates.
func lockerKeys(lockers []namedLocker, rel string, d *Doc) []string {
	var out []string
	for _, o := range lockers {
		out = append(out, o.fn(rel, d)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// heldLocks is a set of lockers' locks a write holds.
type heldLocks struct {
	keys  []string
	locks []*Lock
}

func (h *heldLocks) release() {
	for i := len(h.locks) - 1; i >= 0; i-- {
		h.locks[i].Unlock()
	}
	h.locks = nil
}

// lockSorted takes keys, blocking, in sorted order: two writers that need
// the same two locks (a gate set from item A to B and another from B to
// A) take them in the same order, never each one and waiting for the
// other's.
func (s *Store) lockSorted(keys []string) (*heldLocks, error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	h := &heldLocks{}
	for _, k := range keys {
		l, err := s.Lock(k)
		if err != nil {
			h.release()
			return nil, err
		}
		h.locks = append(h.locks, l)
		h.keys = append(h.keys, k)
	}
	return h, nil
}

// errRelock is what a write that found it needs a lock it does not hold,
// and that another holds, returns to its caller, which takes them all
// again in order (lockSorted) and starts over (relock).
var errRelock = errors.New("relock")

// lockMore takes the keys of need that h does not hold, without waiting:
// h holds locks already, and waiting for one out of order could deadlock.
// One that is busy ends it with errRelock, after need is added to h.keys,
// for the caller to start over holding all of them (relock).
func (s *Store) lockMore(h *heldLocks, need []string) error {
	for _, k := range need {
		if slices.Contains(h.keys, k) {
			continue
		}
		l, ok, err := s.TryLock(k)
		if err != nil {
			return err
		}
		if !ok {
			for _, k := range need {
				if !slices.Contains(h.keys, k) {
					h.keys = append(h.keys, k)
				}
			}
			return errRelock
		}
		h.locks = append(h.locks, l)
		h.keys = append(h.keys, k)
	}
	return nil
}

// relock runs write holding the lockers' locks of rel as it is now (want
// too, and first), sorted, and again, holding more, each time write says
// it needs locks another held (errRelock): a write that changes what its
// document's lockers name (a gate given another item) needs those of the
// document it writes as well as of the one it replaces, and learns them
// only once it has read and changed it.
func (s *Store) relock(rel string, want []string, write func(h *heldLocks) (*Doc, error)) (*Doc, error) {
	for {
		keys := append(slices.Clone(want), lockerKeys(s.lockers, rel, nil)...)
		h, err := s.lockSorted(keys)
		if err != nil {
			return nil, err
		}
		d, err := write(h)
		h.release()
		if !errors.Is(err, errRelock) {
			return d, err
		}
		want = h.keys
	}
}

// moreWriterLocks takes the lockers' locks of rel but keys, which the
// caller holds already (DeleteAll and RestoreTrashAll hold an owner's
// while they move what it owns, whose lockers name the same: a gate its
// item's lock, a chunk its channel's): those are not taken again, as a
// Store's locks are not re-entrant. It returns keys with the ones it took added. d is
// passed to the lockers (Locker).
func (s *Store) moreWriterLocks(rel string, d *Doc, keys []string) (release func(), all []string, err error) {
	var held []*Lock
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Unlock()
		}
	}
	all = slices.Clip(keys)
	for _, o := range s.lockers {
		for _, k := range o.fn(rel, d) {
			if slices.Contains(all, k) {
				continue
			}
			l, err := s.Lock(k)
			if err != nil {
				release()
				return nil, nil, err
			}
			held = append(held, l)
			all = append(all, k)
		}
	}
	return release, all, nil
}

// owned lists what the owners say d owns (none for nil: a file that
// does not parse names nothing).
func (s *Store) owned(d *Doc) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, o := range s.owners {
		for _, p := range o.fn(d) {
			if p != d.Path && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
