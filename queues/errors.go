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

var (
	// ErrUnknownQueue is returned when a named queue has no queue.md. It
	// wraps fs.ErrNotExist semantics for callers: errors.Is(err,
	// ErrUnknownQueue) is the check to use.
	ErrUnknownQueue = errors.New("unknown queue")

	// ErrQueueExists is returned by CreateQueue when the queue exists.
	ErrQueueExists = errors.New("queue already exists")

	// ErrQueueNotEmpty refuses the removal of a queue's queue.md while
	// items are pending or claimed in it: they would be left in no queue,
	// never taken, listed by nothing.
	ErrQueueNotEmpty = errors.New("queue has work left")

	// ErrEmpty is returned by Take when no item of the queues it looked at
	// is claimable (after waiting, if it was asked to wait).
	ErrEmpty = errors.New("no claimable item")

	// ErrStale is returned when a done/fail/renew/release carries a claim
	// attempt that is not the item's current claim: the item was reaped,
	// released or completed since. Nothing was changed.
	ErrStale = errors.New("stale claim attempt")

	// ErrNotHolder is matched by a *HolderError: a done/fail/renew/release
	// by a caller that named who it acts as (CompleteAs...), without an
	// attempt, on a claim someone else holds. Nothing was changed.
	ErrNotHolder = errors.New("the claim is held by someone else")

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

	// ErrPathField is matched by a *PathFieldError: an item's id, queue
	// or priority field set to a value its path contradicts (the file
	// name is the id, the directory the queue, the id's pNN- prefix the
	// priority). A write that does so is refused; check reports a hand
	// edit that did.
	ErrPathField = errors.New("field contradicts the item's path")

	// ErrBadOption is returned for an invalid option value (negative
	// duration, unknown on_empty mode, max_attempts < 1...).
	ErrBadOption = errors.New("invalid option")

	// ErrIDChanged is matched by an *IDError: a write that changes or
	// removes the id of a document named by its id (IDNamed: a gate, an
	// approval, a question, a token slot, an item...), which other
	// documents and commands name it by; and by the *PathFieldError of an
	// item's id. agents.ErrIDChanged is the same error, for an agent's id.
	ErrIDChanged = errors.New("an id cannot change")

	// ErrIDNotPath is matched by an *IDError whose id is not its file
	// name: a document named by its id (IDNamed) created with another id
	// (`tavern new question foo id=bar`), refused (RuleIDFixed), or found
	// so by check (a file written or copied by hand).
	ErrIDNotPath = errors.New("id is not the file name")
)

// IDError is a write refused because it changes or removes the id of a
// document whose file name is its id (RuleIDFixed), or, with Name set, an
// id that is not the file name (a create refused; check): "path:line:col:
// id: why". It matches ErrIDChanged (with Name: ErrIDNotPath) and,
// through a *schema.FieldError, schema.ErrInvalid and docstore.Position.
type IDError struct {
	Op        string // "create", "update", "move"; "check" for check's report
	Path      string // the document's path
	Line, Col int    // of the id's value (of the id removed: where it was)
	Kind      string // "gate", "question", ...
	Value     string // the id written; "" when the write removes it
	Was       string // the id before the write
	Name      string // the file name's id, which Value is not (ErrIDNotPath)
}

func (e *IDError) field() *schema.FieldError {
	why := fmt.Sprintf("a%s %s's id is its file name (%s), by which other documents and commands name it", article(e.Kind), e.Kind, e.Path)
	msg := fmt.Sprintf("%q is not the %s's id %s: %s; it cannot be changed", e.Value, e.Kind, e.Was, why)
	switch {
	case e.Name != "" && e.Op == "check":
		msg = fmt.Sprintf("%q is not the file name %s: %s; set it to %s", e.Value, e.Name, why, e.Name)
	case e.Name != "":
		msg = fmt.Sprintf("%q is not the file name %s: %s; leave id out, or name the file by it", e.Value, e.Name, why)
	case e.Value == "":
		msg = fmt.Sprintf("the %s's id %s cannot be removed: %s", e.Kind, e.Was, why)
	}
	return &schema.FieldError{Path: e.Path, Line: e.Line, Col: e.Col, Field: "id", Msg: msg}
}

func (e *IDError) Error() string { return e.field().Error() }
func (e *IDError) Unwrap() []error {
	if e.Name != "" {
		return []error{ErrIDNotPath, e.field()}
	}
	return []error{ErrIDChanged, e.field()}
}

func article(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "n"
	}
	return ""
}

// ErrGateUnlisted is matched by a *GateUnlistedError: a gate document
// its item's gates: list does not name. The engine reads an item's gates
// through that list, so such a gate holds nothing: written through new,
// set or edit it would look like a gate to a person and gate nothing.
var ErrGateUnlisted = errors.New("gates nothing")

// GateUnlistedError is a gate whose item does not list it (ErrGateUnlisted):
// a write refused (Write) or a document check reports, at the item field.
type GateUnlistedError struct {
	Path      string // the gate's document
	Line, Col int    // its item: value
	Gate      string
	Item      string
	Write     bool // a write refused: "would gate nothing"
}

func (e *GateUnlistedError) Error() string {
	what := "gates nothing"
	if e.Write {
		what = "would gate nothing"
	}
	return fmt.Sprintf("%s:%d:%d: item: %s: its item %s does not list it (the engine reads gates only through the item's gates:); `tavern gate add %s` makes a gate", e.Path, e.Line, e.Col, what, e.Item, e.Item)
}

func (e *GateUnlistedError) Unwrap() error { return ErrGateUnlisted }

// Position places the error at the gate's item field (docstore.Position).
func (e *GateUnlistedError) Position() (path string, line, col int) { return e.Path, e.Line, e.Col }

// ErrGateItemGone is matched when a gate is decided (approve, reject)
// whose item is in no queue (removed by rm or by hand): the decision
// would decide nothing. It matches fs.ErrNotExist too.
var ErrGateItemGone error = gateItemGone{}

type gateItemGone struct{}

func (gateItemGone) Error() string { return "the gate's item is gone" }
func (gateItemGone) Unwrap() error { return fs.ErrNotExist }

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

// Position gives --json error objects the item's path (docstore.Position).
func (e *ItemError) Position() (path string, line, col int) { return e.Path, 0, 0 }

// HolderError is a change refused because the claim is As's to name, not
// its holder's: it says whose claim it is and which attempt takes it over
// on purpose. It unwraps to ErrNotHolder.
type HolderError struct {
	Holder  string // claimed_by
	Attempt int    // the claim's attempt: given explicitly, the change goes ahead
	As      string // who asked
}

func (e *HolderError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "nobody named" // claimed_by removed by hand
	}
	return fmt.Sprintf("%v: attempt %d is held by %s, not %s (give --attempt %d to take it over on purpose)", ErrNotHolder, e.Attempt, holder, e.As, e.Attempt)
}

func (e *HolderError) Unwrap() error { return ErrNotHolder }

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

// badFile reports whether err is about one item file that is reported and
// skipped, never a reason to fail a whole take or listing: it does not
// parse or validate, or it is not a document file at all (a FIFO, a
// directory, a symlink, an unreadable file: docstore.ErrOddFile).
func badFile(err error) bool {
	return errors.Is(err, docstore.ErrParse) || errors.Is(err, schema.ErrInvalid) || errors.Is(err, docstore.ErrOddFile)
}

// DependencyError is a write of an item whose depends_on names an item
// that does not exist (queue add refuses the same with ErrBadDependency).
type DependencyError struct {
	Path string // the item written
	Line int    // its depends_on line
	Dep  string // the id that names nothing
}

func (e *DependencyError) Error() string {
	return fmt.Sprintf("%s:%d:1: depends_on: %v: %s", e.Path, e.Line, ErrBadDependency, e.Dep)
}

func (e *DependencyError) Unwrap() error { return ErrBadDependency }

// EngineViewError is a warning of counts made without the coordination
// engine's view (etcd or git, out of reach): claims other machines hold,
// and items they finished, whose copy here is pending are not known, so
// such an item may be counted ready. Err is the engine's error (ErrUnavailable).
type EngineViewError struct {
	Op   string
	Path string
	Err  error
}

func (e *EngineViewError) Error() string {
	return fmt.Sprintf("%s %s: claims held and items finished on other machines are not counted (an item counted ready may be held or finished there): %v", e.Op, e.Path, e.Err)
}

func (e *EngineViewError) Unwrap() error { return e.Err }

// Position is the directory listed (docstore.Positioner: the --json
// warning object's path).
func (e *EngineViewError) Position() (string, int, int) { return e.Path, 0, 0 }

// EnvMachineVar is the variable that names this machine (MachineName).
const EnvMachineVar = "TAVERN_MACHINE"

// MachineNameError is a machine name refused by schema.ValidMachineName
// where it was read: $TAVERN_MACHINE (Path empty) or this clone's
// .machine file (Path, store-relative). It matches schema.ErrInvalidName.
type MachineNameError struct {
	Op   string // what read it: "machine", "init", "clone", "save"
	Path string // MachineFile when read from the file; "" for the variable
	Err  error  // the *schema.NameError
}

func (e *MachineNameError) Error() string {
	if e.Path == "" {
		return EnvMachineVar + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s:1:1: %v (write this clone's name there)", e.Path, e.Err)
}

func (e *MachineNameError) Unwrap() error { return e.Err }

// Position is the .machine file's first line (none for the variable).
func (e *MachineNameError) Position() (string, int, int) {
	if e.Path == "" {
		return "", 0, 0
	}
	return e.Path, 1, 1
}

// EngineViewAgeError is a note on a listing of items answered from the
// engine's view as an earlier command fetched it (coordination git,
// within the listing's MaxAge of that fetch, queues.ViewAge) instead of
// asking again: an item another machine took or finished since may be
// listed as free. A take never decides on such a view.
// queues/tuples lists its slots and reservations with the same note
// (What says what the view holds there).
type EngineViewAgeError struct {
	Op     string
	Path   string
	What   string    // what the view shows of other machines; "" is items
	At     time.Time // when the view was fetched
	Now    time.Time
	MaxAge time.Duration
}

func (e *EngineViewAgeError) Error() string {
	what := e.What
	if what == "" {
		what = "items held or finished"
	}
	return fmt.Sprintf("%s %s: %s on other machines as of %s ago (the engine's view fetched by an earlier command, within --max-age %s)",
		e.Op, e.Path, what, e.Now.Sub(e.At).Round(100*time.Millisecond), e.MaxAge)
}

// Position is the directory listed (docstore.Positioner: the --json
// warning object's path).
func (e *EngineViewAgeError) Position() (string, int, int) { return e.Path, 0, 0 }

// Unwrap is docstore.ErrNote: the view's age is no problem.
func (e *EngineViewAgeError) Unwrap() error { return docstore.ErrNote }
