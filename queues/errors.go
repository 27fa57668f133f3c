package queues

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// --- queues and items ---------------------------------------------------

var (
	// ErrUnknownQueue is returned when a named queue has no queue.md. It
	// wraps fs.ErrNotExist semantics for callers: errors.Is(err,
	// ErrUnknownQueue) is the check to use.
	ErrUnknownQueue = errors.New("unknown queue")

	// ErrQueueExists is returned by CreateQueue when the queue exists.
	ErrQueueExists = errors.New("queue already exists")

	// ErrEmpty is returned by Take when no item of the queues it looked at
	// is claimable (after waiting, if it was asked to wait).
	ErrEmpty = errors.New("no claimable item")

	// ErrStale is returned when a done/fail/renew/release carries a claim
	// attempt that is not the item's current claim: the item was reaped,
	// released or completed since. Nothing was changed.
	ErrStale = errors.New("stale claim attempt")

	// ErrState is returned for an operation that is illegal in the item's
	// current state (e.g. retry of an item that is not dead).
	ErrState = errors.New("illegal in the item's current state")

	// ErrPriority is returned for an item or queue priority outside
	// MinPriority..MaxPriority.
	ErrPriority = errors.New("priority out of range")

	// ErrCycle is returned by Add when depends_on would form a cycle.
	ErrCycle = errors.New("dependency cycle")

	// ErrBadDependency is returned by Add for a depends_on id that names no
	// item.
	ErrBadDependency = errors.New("dependency names no item")

	// ErrBadOption is returned for an invalid option value (negative
	// duration, unknown on_empty mode, max_attempts < 1...).
	ErrBadOption = errors.New("invalid option")
)

// ItemError names the item an operation failed on and unwraps to the
// cause (ErrStale, ErrState, fs.ErrNotExist...), in the style of
// *fs.PathError: Path is the item's document path where known.
type ItemError struct {
	Op   string
	ID   string
	Path string
	Err  error
}

func (e *ItemError) Error() string {
	where := e.Path
	if where == "" {
		where = e.ID
	}
	return fmt.Sprintf("%s %s: %v", e.Op, where, e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

// QueueError names the queue an operation failed on.
type QueueError struct {
	Op    string
	Queue string
	Err   error
}

func (e *QueueError) Error() string {
	return fmt.Sprintf("%s queue %q: %v", e.Op, e.Queue, e.Err)
}

func (e *QueueError) Unwrap() error { return e.Err }

// ---- Tuple space, tokens, reservations (tuple*.go, token*.go, reserve*.go, guard*.go) ----

var (
	// ErrNoTuple is returned when no live tuple matches a pattern: at once
	// by Rdp and Inp, and by Rd and In when their wait ends.
	ErrNoTuple = errors.New("no matching tuple")

	// ErrBadPattern is returned (wrapped, with docstore.ErrBadExpr where
	// the expression itself is malformed) for a tuple pattern term that
	// does not parse.
	ErrBadPattern = errors.New("bad tuple pattern")

	// ErrBadTuple is returned when a tuple to write is malformed: a
	// reserved field name among its values, or a bad TTL.
	ErrBadTuple = errors.New("bad tuple")

	// ErrUnknownToken is returned when a token name has no slots at all
	// (never initialised with InitToken).
	ErrUnknownToken = errors.New("unknown token (create it with `tavern token init NAME --count N`)")

	// ErrTokenBusy is returned when every slot of a token is held: at once
	// by TryAcquire, and by Acquire when its wait ends.
	ErrTokenBusy = errors.New("all slots of the token are held")

	// ErrTokenCount is returned when InitToken would have to drop slots
	// that are held.
	ErrTokenCount = errors.New("cannot shrink the token below the slots that are held")

	// ErrNotHolder is returned when a token release names a slot that the
	// caller does not hold: a stale epoch (the slot was reclaimed and
	// acquired again), another agent's slot, a slot that is free, or one
	// held by a live process that must release it itself.
	ErrNotHolder = errors.New("token slot is not held by the caller")

	// ErrHolderNotAlive is returned when a token is acquired for an agent
	// (--as A) whose liveness lock is not held by a live process and no
	// lease was given: nothing would keep the token held.
	ErrHolderNotAlive = errors.New("agent has no live process holding its liveness lock")

	// ErrBadGlob is returned (wrapped) for a reservation glob that does not
	// parse or leaves the project (absolute, "..").
	ErrBadGlob = errors.New("bad path glob")

	// ErrReserved is matched by *ReservedError: the paths or globs overlap
	// a live reservation of another agent.
	ErrReserved = errors.New("reserved by another agent")
)

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
