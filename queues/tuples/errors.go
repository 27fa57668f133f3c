package tuples

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

var (
	// ErrNoTuple is returned when no live tuple matches a pattern: at once
	// by Rdp and Inp, and by Rd and In when their wait ends.
	ErrNoTuple = errors.New("no matching tuple")

	// ErrBadPattern is matched by every *PatternError: a tuple pattern
	// term that does not parse, or whose bound cannot order the field
	// (created>yesterday).
	ErrBadPattern = errors.New("bad tuple pattern")

	// ErrBadTuple is returned when a tuple to write is malformed: a
	// reserved field name among its values, or a bad TTL.
	ErrBadTuple = errors.New("bad tuple")

	// ErrEngineType is matched by *EngineTypeError: a tuple of a type
	// whose rules live in this package (token slots, reservations)
	// written or taken with the plain tuple operations (Out, In, Inp),
	// which would skip them. Nothing is written or taken.
	ErrEngineType = errors.New("tuple type kept by its own rules")

	// ErrUnknownToken is returned when a token name has no slots at all
	// (never initialised with InitToken).
	ErrUnknownToken = errors.New("unknown token (create it with `tavern token init NAME --count N`)")

	// ErrTokenBusy is returned when every slot of a token is held: at once
	// by TryAcquire, and by Acquire when its wait ends.
	ErrTokenBusy = errors.New("all slots of the token are held")

	// ErrNearToken is matched by *NearTokenError: InitToken for a new
	// token whose name is near an existing token's, most likely a typo of
	// the token meant to be changed, which would leave that one as it was
	// and add a second. InitTokenOptions.New makes it anyway.
	ErrNearToken = errors.New("a new token near an existing one")

	// ErrTokenCount is returned when InitToken would have to drop slots
	// that are held.
	ErrTokenCount = errors.New("cannot shrink the token below the slots that are held")

	// ErrNotHolder is returned when a token release names a slot that the
	// caller does not hold: a stale epoch (the slot was reclaimed and
	// acquired again), another agent's slot, a slot that is free, or one
	// held by a live process that must release it itself.
	ErrNotHolder = errors.New("token slot is not held by the caller")

	// ErrNoSlot is matched by *NoSlotError: a token release whose handle
	// names no slot of the token at all (not a slot that is free or held
	// by someone else: that is ErrNotHolder).
	ErrNoSlot = errors.New("no such slot")

	// ErrHolderNotAlive is returned when a token is acquired for an agent
	// (--as A) whose liveness lock is not held by a live process and no
	// lease was given: nothing would keep the token held.
	ErrHolderNotAlive = errors.New("agent has no live process holding its liveness lock")

	// ErrFenced is matched by *FencedError: a release or unreserve by
	// name from an instance of an agent other than the one recorded on
	// the hold, or an acquire, reserve or guarded commit by a dead
	// instance (one that a newer spawn of the agent replaced, or whose
	// spawn wrapper is gone). Nothing was changed.
	ErrFenced = errors.New("fenced")

	// ErrBadGlob is returned (wrapped) for a reservation glob that does not
	// parse or leaves the project (absolute, "..").
	ErrBadGlob = errors.New("bad path glob")

	// ErrSkipped is matched by *SkippedError: reservation files a path
	// check could not read or use (a file that does not parse, a glob
	// that does not) were left out of it.
	ErrSkipped = errors.New("reservation files skipped")

	// ErrNotReserved is returned when an unreserve by id names no live
	// reservation.
	ErrNotReserved = errors.New("no such reservation")

	// ErrReserved is matched by *ReservedError: the paths or globs overlap
	// a live reservation of another agent.
	ErrReserved = errors.New("reserved by another agent")

	// ErrNotGit: the guard (or its --install) was run outside a git
	// repository.
	ErrNotGit = errors.New("not in a git repository")
)

// EngineTypeError is a plain tuple operation (Op: out, in, inp) on a type
// only its own rules may write or take (Type: token, reservation); Use
// says which commands do.
type EngineTypeError struct {
	Op   string
	Path string // tuples/<type>
	Type string
	Why  string // what the rules keep
	Use  string
}

func (e *EngineTypeError) Error() string {
	return fmt.Sprintf("tuple %s %s: %s tuples are the %s rules' (%s): use %s", e.Op, e.Type, e.Type, e.Type, e.Why, e.Use)
}

func (e *EngineTypeError) Unwrap() error { return ErrEngineType }

// Position gives the type's directory to a JSON error object.
func (e *EngineTypeError) Position() (string, int, int) { return e.Path, 0, 0 }

// EngineType refuses op on typ when typ is kept by its own rules (token,
// reservation): out, in and inp refuse them, and so does a document made
// by name (`tavern new tuple token/x`), which would be a slot or a
// reservation none of their rules checked.
func EngineType(op, typ string) error { return engineType(op, typ) }

// engineType refuses op on typ when typ is kept by its own rules.
func engineType(op, typ string) error {
	switch typ {
	case TokenType:
		return &EngineTypeError{Op: op, Path: typeDir(typ), Type: typ, Why: "their count, holders and epochs", Use: "`tavern token init NAME --count N`, `tavern token acquire` and `tavern token release`"}
	case ReservationType:
		return &EngineTypeError{Op: op, Path: typeDir(typ), Type: typ, Why: "no two agents' globs overlap", Use: "`tavern reserve` and `tavern unreserve`"}
	}
	return nil
}

// PatternError is a tuple pattern term refused before anything is read:
// it does not parse, or orders a field the tuple kind declares by a bound
// of the wrong type. It matches ErrBadPattern and Err (docstore.ErrBadExpr,
// and docstore.ErrBadBound for the bound).
type PatternError struct {
	Op   string // "parse"
	Path string // "tuples": patterns are of every type alike
	Term string // as given
	Err  error
}

func (e *PatternError) Error() string { return fmt.Sprintf("%v: %v", ErrBadPattern, e.Err) }

func (e *PatternError) Unwrap() []error { return []error{ErrBadPattern, e.Err} }

// NoTupleError says which pattern found nothing and how long it waited.
type NoTupleError struct {
	Type    string
	Pattern Pattern
	Waited  time.Duration // 0 for the non-blocking calls
}

func (e *NoTupleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no tuple of type %q", e.Type)
	if len(e.Pattern) > 0 {
		fmt.Fprintf(&b, " matches %s", e.Pattern)
	}
	if e.Waited > 0 {
		fmt.Fprintf(&b, " (waited %s)", e.Waited.Round(time.Millisecond))
	}
	return b.String()
}

func (e *NoTupleError) Unwrap() error { return ErrNoTuple }

// ReservedError lists every overlap between the globs or paths asked for
// and other agents' live reservations.
type ReservedError struct {
	Conflicts []Conflict
}

func (e *ReservedError) Error() string {
	msgs := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		msgs[i] = c.String()
	}
	return strings.Join(msgs, "; ")
}

func (e *ReservedError) Unwrap() error { return ErrReserved }

// SkippedError is what CheckPaths and CheckTrees return beside their
// conflicts when some reservation files could not be read or used: the
// check ran without them, so a caller that goes on (the pre-tool-use
// hook fails open) must say which files, or a broken reservation would
// silently guard nothing.
type SkippedError struct {
	Op   string  // "check paths", "check trees"
	Path string  // the reservations' directory, relative to the store
	Errs []error // one per file, each naming it (path:line:col where known)
}

func (e *SkippedError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%s: reservation file skipped: %s", e.Op, strings.Join(msgs, "; "))
}

// Unwrap gives the files' own errors too, so docstore.Position finds the
// first one's line and column.
func (e *SkippedError) Unwrap() []error { return append([]error{ErrSkipped}, e.Errs...) }

// FencedError is an action refused because the caller is not the agent
// instance that holds (or may take) the token slot or reservation: each
// spawn of an agent is a new instance ($TAVERN_INSTANCE), and a late
// action of a dead instance must not touch what its successor holds.
type FencedError struct {
	Op         string // "release merge", "unreserve", "acquire merge", "reserve"
	Agent      string
	Instance   string // the caller's instance
	Holder     string // the instance recorded on the hold, or the agent's current one
	Superseded bool   // the caller's instance was replaced by Holder
	Dead       bool   // the caller's instance is current but its spawn wrapper is gone
	Path       string // the held slot or reservation, if one
}

func (e *FencedError) Error() string {
	if e.Dead {
		return fmt.Sprintf("%s: %v: instance %s of %s is not alive (its spawn wrapper is gone)", e.Op, ErrFenced, e.Instance, e.Agent)
	}
	if e.Superseded {
		return fmt.Sprintf("%s: %v: instance %s of %s was replaced by instance %s", e.Op, ErrFenced, e.Instance, e.Agent, e.Holder)
	}
	return fmt.Sprintf("%s: %v: %s is held by instance %s of %s, not by this instance %s; nothing changed", e.Op, ErrFenced, e.Path, e.Holder, e.Agent, e.Instance)
}

func (e *FencedError) Unwrap() error { return ErrFenced }

// UnknownTokenError is a token name that has no slots at all (a typo, or
// a token never made), with the existing tokens nearest to it (Near,
// nearest first, schema.Near) for a "did you mean". It matches
// ErrUnknownToken and schema.ErrUnknownName.
type UnknownTokenError struct {
	Name string
	Near []string
}

func (e *UnknownTokenError) Error() string {
	if len(e.Near) == 0 {
		return fmt.Sprintf("%s: %v", e.Name, ErrUnknownToken)
	}
	list := schema.NearList(e.Near)
	return fmt.Sprintf("%s: unknown token (did you mean %s?)", e.Name, list)
}

func (e *UnknownTokenError) Unwrap() []error {
	return []error{ErrUnknownToken, schema.ErrUnknownName}
}

// NearTokenError is a new token's name InitToken refused as a likely
// typo of an existing token (Near, nearest first, schema.NearNew);
// nothing was written.
type NearTokenError struct {
	Op   string // "init token"
	Path string // the tokens' directory, relative to the store
	Name string
	Near []string
}

func (e *NearTokenError) Error() string {
	return fmt.Sprintf("%s %s: %q names no token; did you mean %s?", e.Op, e.Path, e.Name, schema.NearList(e.Near))
}

func (e *NearTokenError) Unwrap() error { return ErrNearToken }

// SlotInTransitError is a token that has no slot file on this machine,
// and none held on the coordination engine, while the engine knows one
// of its slots, free: it was released on Machine, whose slot file reaches
// this machine with the next sync. It matches ErrTokenBusy (exit 3, and
// `token acquire --wait` waits for it), not ErrUnknownToken: the token
// exists.
type SlotInTransitError struct {
	Op      string // "acquire", "init" or "ls"
	Name    string
	Slot    int64
	Machine string // "" when the engine does not say
}

func (e *SlotInTransitError) Error() string {
	on := e.Machine
	if on == "" {
		on = "another machine"
	}
	then := "`tavern sync` brings it"
	if e.Op == "init" {
		then = "sync, then init again"
	}
	return fmt.Sprintf("%s: slot %d was released on %s and has not synced here yet (%s)", e.Name, e.Slot, on, then)
}

func (e *SlotInTransitError) Unwrap() error { return ErrTokenBusy }

// ErrNotYours is matched by *HeldByError: an unreserve by id, by a named
// agent, of a reservation another agent holds.
var ErrNotYours = errors.New("reservation held by another agent")

// HeldByError is UnreserveID refusing a named agent another agent's
// reservation. The reservation exists: it is refused as another's claim
// is (queues.HolderError), not reported as missing. Nothing changed.
type HeldByError struct {
	Op     string // "unreserve reservation <id>"
	Path   string // the reservation's file
	Holder string // the agent that holds it
	As     string // who asked
}

func (e *HeldByError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "nobody named" // agent removed by hand
	}
	return fmt.Sprintf("%s: held by %s, not %s", e.Op, holder, e.As)
}

func (e *HeldByError) Unwrap() error { return ErrNotYours }

// NoSlotError is a release handle whose ID names no slot of token Name on
// this machine (and no engine could hold it elsewhere). Handles lists the
// token's slots' handles in slot order; Near is the handle the ID most
// likely meant (the slot numbered ID, a typed slot number), or "".
type NoSlotError struct {
	Op      string // "release"
	Path    string // the slot file the ID would be
	Name    string
	ID      string
	Handles []string
	Near    string
}

func (e *NoSlotError) Error() string {
	msg := fmt.Sprintf("%s %s: %v", e.Name, e.ID, ErrNoSlot)
	if e.Near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", e.Near)
	}
	if len(e.Handles) > 0 {
		msg += fmt.Sprintf("; its slots: %s (tavern token ls %s)", strings.Join(e.Handles, ", "), e.Name)
	}
	return msg
}

func (e *NoSlotError) Unwrap() []error { return []error{ErrNoSlot, schema.ErrUnknownName} }

// EngineViewError is a warning of a listing made without the engine's
// view (coordination etcd or git, the engine out of reach): what other
// machines hold is not in it, so a slot held there may be listed as
// free, and a reservation made there is not listed. Err is the engine's error (queues.ErrUnavailable).
type EngineViewError struct {
	Op   string
	Path string
	Err  error
}

func (e *EngineViewError) Error() string {
	if e.Path == "tuples/"+ReservationType {
		return fmt.Sprintf("%s %s: reservations made on other machines are not shown (until their files sync here): %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("%s %s: slots held on other machines are not shown (a slot listed free may be held there): %v", e.Op, e.Path, e.Err)
}
func (e *EngineViewError) Unwrap() error { return e.Err }

// Position is the directory listed (docstore.Positioner: the --json
// warning object's path), as queues.EngineViewError's.
func (e *EngineViewError) Position() (string, int, int) { return e.Path, 0, 0 }

// EngineViewAgeError is a note on a listing answered from the engine's
// view as an earlier command fetched it (coordination git, within the
// listing's MaxAge of that fetch) instead of asking again: what other
// machines held then is shown, and a change made there since is not.
// It is the queues' note, with What naming slots or reservations.
type EngineViewAgeError = queues.EngineViewAgeError
