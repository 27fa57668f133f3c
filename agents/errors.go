package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

var (
	// errNotDir: a component of a path a backup or restore opens as a
	// directory is a symlink or not a directory (changed since it was
	// listed). Never returned: the entry is reported as skipped.
	errNotDir = errors.New("not a directory (or a symlink)")

	// ErrIllegalTransition is returned when an agent state change is not in
	// the transition table (see doc.go). It is wrapped in a *TransitionError.
	ErrIllegalTransition = errors.New("illegal state transition")

	// ErrStateChanged is returned when a transition is fenced on the state
	// its caller saw (TransitionOptions.From) and the agent is in another
	// one now. Wrapped in a *TransitionError.
	ErrStateChanged = errors.New("agent state changed")

	// ErrParentCycle is returned for an agent whose parent is itself or
	// one of its own descendants: questions would bubble round forever.
	ErrParentCycle = errors.New("parent cycle")

	// ErrUnknownState is returned (with ErrIllegalTransition) when a state
	// change names no state at all: a typo, a bad value rather than a
	// conflict with the agent's current state.
	ErrUnknownState = errors.New("unknown state")

	// ErrIllegalEdit is returned when an agent document's state was edited
	// by hand to a state that cannot follow the state the engine last
	// applied. The edit is reported, never acted on. Wrapped in a
	// *TransitionError.
	ErrIllegalEdit = errors.New("agent state was edited by hand to an illegal state")

	// ErrConstitutionChanged is returned by Spawn when the constitution of
	// the agent's role changed since the agent recorded its sha256 and the
	// caller did not accept the new one.
	ErrConstitutionChanged = errors.New("role constitution changed since the agent was created")

	// ErrBusy is returned when an agent already has a live process (its
	// liveness lock is held) or is in a state that cannot be spawned.
	ErrBusy = errors.New("agent is busy")

	// ErrSelfVerify is returned when an agent tries to verify its own
	// commitments or write their status.
	ErrSelfVerify = errors.New("an agent cannot verify its own commitments")

	// ErrOwnAssertion is returned when an agent tries to change the
	// assertion of its own commitment.
	ErrOwnAssertion = errors.New("an agent cannot change its own commitment's assertion")

	// ErrOwnCommitment is returned when an agent tries to remove its own
	// commitment (`tavern rm`, Store.Delete, a move): that would drop a
	// claim nobody verified. A person or another agent may remove it.
	ErrOwnCommitment = errors.New("an agent cannot remove its own commitment")

	// ErrTampered is reported for a commitment whose assertion does not
	// match the sha256 recorded in the journal when it was made (`commit
	// add`), or that has no such record: the assertion is shell code, and
	// a changed one is never run.
	ErrTampered = errors.New("assertion changed since the commitment was made")

	// ErrUnverified is returned when an agent with commitments that have not
	// all passed is moved to done.
	ErrUnverified = errors.New("agent has commitments that have not passed verification")

	// ErrNoWork is returned by Spawn with queues when there was no item to
	// claim.
	ErrNoWork = errors.New("no work item to claim")

	// ErrPoolGone is the cause of the interruption of a drone whose pool
	// died (SpawnOptions.PoolRun): the pool's liveness lock is free.
	ErrPoolGone = errors.New("the drone's pool is gone (its liveness lock is free)")

	// ErrAgentDown is why an agent that failed (state failed), or whose
	// spawn wrapper died and was not reaped yet, claims nothing
	// (CheckTaker): its claim would outlive no process and its work would
	// be done by nobody. Reviving it (tavern agent state NAME idle, or a
	// spawn of it) lets it take again. Wrapped in an *AgentError.
	ErrAgentDown = errors.New("agent is down")

	// ErrPoolDraining is why a drone of a pool that drains (its document
	// says draining) claims nothing: it ends its wait for an item, and
	// only drones that already hold one finish.
	ErrPoolDraining = errors.New("the drone's pool is draining: no new claims")

	// ErrEmptyText is returned for a question, an answer, an agent note,
	// or a commitment's description or assertion, that is empty or only
	// white space: nothing is written.
	ErrEmptyText = errors.New("empty text")

	// ErrAskSelf is returned when an agent asks itself: it would wait
	// for an answer only it could give (a typo of --to, or a parent
	// field naming the agent).
	ErrAskSelf = errors.New("an agent cannot ask itself")

	// ErrPersonAskSelf is returned when the person asks the user (--to
	// user, or the default: the person has no parent): the question
	// would go from @user to @user, the one asking.
	ErrPersonAskSelf = errors.New("the person cannot ask the user, itself: give --to WHO (an agent)")

	// ErrAnswered is returned when a question that is already answered is
	// answered again.
	ErrAnswered = errors.New("question already answered")

	// ErrBadPool is returned by RunPool for options that cannot make a
	// pool (min above max, an unknown on-empty mode): a bad value, before
	// anything is written.
	ErrBadPool = errors.New("bad option")

	// ErrPoolRunning is returned by RunPool when another process runs
	// the pool (it holds the pool's liveness lock): two runners would
	// overwrite each other's metrics and double the drones.
	ErrPoolRunning = errors.New("pool is already running")

	// ErrPoolElsewhere is returned by DrainPool for a pool whose document
	// says another machine runs it: this machine cannot see its liveness
	// lock, and the document is that run's to write.
	ErrPoolElsewhere = errors.New("pool runs on another machine")

	// ErrNotAdmitted is returned by CheckPoolAdmission for a spawn that
	// says its pool admitted it (spawn --admitted-by-pool, which skips
	// the budgets) and was not started by that pool's live run.
	ErrNotAdmitted = errors.New("not admitted by a running pool")

	// ErrNearRole is returned (in a *RoleError) by WriteConstitution and
	// CreateAgent for a role that has no constitution yet, that no agent
	// has, and whose name is near one that has a constitution: most
	// likely a typo of it, which would write a second constitution and
	// leave the agents of the role meant on the old text, or make an
	// agent without the constitution meant. ConstitutionOptions.New
	// writes the constitution anyway; agents of the role can be made
	// after that.
	ErrNearRole = errors.New("a new role near an existing one")

	// ErrBadAgentName is schema.ErrBadAgentName: an agent name outside
	// the one name rule.
	ErrBadAgentName = schema.ErrBadAgentName
)

var (
	// ErrNameNotPath is matched by an *IdentityError: an agent, channel
	// or queue document whose name field is not its path's name
	// (agents/<name>.md, channels/<name>.md, queues/<name>/queue.md), as
	// a copy of another's file has.
	ErrNameNotPath = errors.New("name is not its path's")

	// ErrDuplicateID is matched by an *IdentityError: an agent document
	// whose id another agent document has too (a copied file).
	ErrDuplicateID = errors.New("agent id shared with another agent")

	// ErrIDChanged is matched by an *IdentityError: a write that changes
	// or removes an agent's id, its identity from the moment it is made
	// (journal events, spawns and claims name the agent by it). Only a
	// copy's id, which another agent has too, may be replaced. It is
	// queues.ErrIDChanged, which the other kinds named by id refuse with
	// (a *queues.IDError): one error for every id a write may not change.
	ErrIDChanged = queues.ErrIDChanged
)

// IdentityError is an agent's name or id that contradicts its path or
// another agent: "path:line:col: field: why". Op is "check" for what
// check reports, else the refused write ("create", "update", ...). It
// matches Err (ErrNameNotPath or ErrDuplicateID) and, through a
// *schema.FieldError, schema.ErrInvalid and docstore.Position.
type IdentityError struct {
	Op        string
	Path      string // agents/<name>.md
	Line, Col int    // of the field's value
	Field     string // "name" or "id"
	Value     string
	Others    []string // ErrDuplicateID: the other documents with that id
	Was       string   // ErrIDChanged: the id before the write
	Err       error
}

func (e *IdentityError) field() *schema.FieldError {
	var msg string
	switch {
	case errors.Is(e.Err, ErrIDChanged) && !e.present():
		msg = fmt.Sprintf("the agent's id %s cannot be removed: an agent's id is its identity, given when it is made", e.Was)
	case errors.Is(e.Err, ErrIDChanged):
		msg = fmt.Sprintf("%q is not the agent's id %s: an agent's id is its identity, given when it is made, and cannot be changed (only a copied file's, shared with another agent, may be replaced)", e.Value, e.Was)
	case errors.Is(e.Err, ErrDuplicateID):
		msg = fmt.Sprintf("%s is also the id of %s: each agent has its own id (a copied file? remove the copy, or give it an id of its own)",
			e.Value, strings.Join(e.Others, ", "))
	default:
		kind, name, _ := schema.NameOfPath(e.Path)
		what, from := "agent", "file name"
		if kind != nil {
			what = kind.Name
			if kind == schema.Queue {
				from = "directory's name"
			}
		}
		msg = fmt.Sprintf("%q is not the %s's name %s: a%s %s's name is its %s (%s) and cannot be set to another", e.Value, what, name, article(what), what, from, e.Path)
	}
	return &schema.FieldError{Path: e.Path, Line: e.Line, Col: e.Col, Field: e.Field, Msg: msg}
}

// present: the write keeps a value of the field (an --unset has none).
func (e *IdentityError) present() bool { return e.Value != "" }

func (e *IdentityError) Error() string   { return e.field().Error() }
func (e *IdentityError) Unwrap() []error { return []error{e.Err, e.field()} }

// TransitionError describes a refused state change.
type TransitionError struct {
	Path  string // agents/<name>.md
	Agent string
	From  string // the state the engine last applied
	To    string
	Err   error // ErrIllegalTransition, ErrIllegalEdit or ErrStateChanged
}

func (e *TransitionError) Error() string {
	if errors.Is(e.Err, ErrIllegalEdit) {
		return fmt.Sprintf("%s: state %q was edited by hand; it cannot follow %q (the state last applied); "+
			"restore it or force a state", e.Path, e.To, e.From)
	}
	if errors.Is(e.Err, ErrStateChanged) {
		return fmt.Sprintf("%s: %s -> %s refused: %s", e.Path, e.From, e.To, e.Err)
	}
	return fmt.Sprintf("%s: %s: %s -> %s (allowed from %s: %s)", e.Path, e.Err, e.From, e.To, e.From, allowedList(e.From))
}

func (e *TransitionError) Unwrap() error { return e.Err }

// StateError is a state change to a state that is no state at all (a
// typo: wroking, WORKING): a bad value, refused before the agent is read.
// It matches ErrUnknownState and ErrIllegalTransition.
type StateError struct {
	Op    string // "transition"
	Path  string // agents/<name>.md ("" for a name that is no agent name)
	Agent string
	State string   // the state given
	Near  []string // the states it most likely meant, nearest first
}

func (e *StateError) Error() string {
	msg := fmt.Sprintf("%v: %v %q (states: %s)", ErrIllegalTransition, ErrUnknownState, e.State, strings.Join(schema.AgentStates, ", "))
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	if len(e.Near) > 0 {
		msg += "; did you mean " + schema.NearList(e.Near) + "?"
	}
	return msg
}

func (e *StateError) Unwrap() []error { return []error{ErrUnknownState, ErrIllegalTransition} }

// Position gives the agent's document to a JSON error object.
func (e *StateError) Position() (string, int, int) { return e.Path, 0, 0 }

// WhereHintError is a warning of a query's --where condition
// (WhereHints): Err says why it most likely makes the answer empty by a
// typo. It matches schema.ErrLikelyTypo through Err.
type WhereHintError struct {
	Op   string // "where"
	Path string // the documents queried: the kind's plural (items), "" when no kind is given
	Cond docstore.Cond
	Err  error // a *schema.HintError or a *RefHintError
}

func (e *WhereHintError) Error() string { return "--where " + e.Cond.String() + ": " + e.Err.Error() }
func (e *WhereHintError) Unwrap() error { return e.Err }

// SortHintError is a warning of a query's --sort (SortHint): a field the
// kind does not declare and no listed document has, so the sort orders
// nothing. It matches schema.ErrLikelyTypo.
type SortHintError struct {
	Op    string   // "sort"
	Path  string   // the documents listed: the kind's plural (items)
	Kind  string   // the kind's singular
	Field string   // as given, "-" and all
	Near  []string // fields near it, the kind's and the documents' own, nearest first
}

func (e *SortHintError) Error() string {
	msg := fmt.Sprintf("--sort %s: no %s listed has a field %q, and %s documents declare none: the order is unchanged", e.Field, e.Kind, strings.TrimPrefix(e.Field, "-"), e.Kind)
	if len(e.Near) > 0 {
		msg += " (did you mean " + schema.NearList(e.Near) + "?)"
	}
	return msg
}

func (e *SortHintError) Unwrap() error { return schema.ErrLikelyTypo }

// RefHintError is a name of a queue or an agent a query gives
// (queue=biuld) that names none but is near some that exist (build): a
// warning, not a refusal. It matches schema.ErrLikelyTypo.
type RefHintError struct {
	Op   string   // "where"
	Path string   // the document the name would have: queues/<name>/queue.md, agents/<name>.md
	What string   // "queue" or "agent"
	Name string   // the name given
	Near []string // existing names near it, nearest first
}

func (e *RefHintError) Error() string {
	return fmt.Sprintf("no %s %q (did you mean %s?)", e.What, e.Name, schema.NearList(e.Near))
}

func (e *RefHintError) Unwrap() error { return schema.ErrLikelyTypo }

// ConstitutionError says which constitution changed.
type ConstitutionError struct {
	Path     string // constitutions/<role>.md
	Agent    string
	Recorded string // sha256 the agent recorded
	Current  string // sha256 of the file now ("" if it is gone)
}

func (e *ConstitutionError) Error() string {
	cur := e.Current
	if cur == "" {
		cur = "(missing)"
	}
	return fmt.Sprintf("%s: constitution changed since agent %s was created (recorded sha256 %.12s, now %.12s)",
		e.Path, e.Agent, e.Recorded, cur)
}

func (e *ConstitutionError) Unwrap() error { return ErrConstitutionChanged }

// RoleError is a role name WriteConstitution or CreateAgent refused;
// nothing was written.
type RoleError struct {
	Op   string   // "write constitution", "create agent"
	Path string   // the constitution or agent it would have written ("" for a themed name not drawn yet)
	Role string   // the role given
	Near []string // roles that have a constitution, nearest first (schema.Near)
	Err  error    // ErrNearRole
}

func (e *RoleError) Error() string {
	if len(e.Near) == 0 {
		return fmt.Sprintf("%s: %q: %v", e.Op, e.Role, e.Err)
	}
	list := schema.NearList(e.Near)
	return fmt.Sprintf("%s: %q is a new role; did you mean %s?", e.Op, e.Role, list)
}

func (e *RoleError) Unwrap() error { return e.Err }

// AgentError is an error about one agent document.
type AgentError struct {
	Op   string
	Path string
	Err  error
}

func (e *AgentError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *AgentError) Unwrap() error { return e.Err }

var (
	// ErrNotEmpty is returned by Restore when the target store already
	// holds documents and force is not set.
	ErrNotEmpty = errors.New("store is not empty")

	// ErrNotBackup is returned by Restore when SRC holds no store: neither
	// tavern.md nor .tavern/tavern.md (a typo, an empty directory, the
	// backups directory instead of one backup in it). Not ErrNoStore: the
	// store restored into is not what is missing.
	ErrNotBackup = errors.New("not a backup")
)

// article is "n" before a word that starts with a vowel, for "a"+article.
func article(w string) string {
	if w != "" && strings.ContainsRune("aeiou", rune(w[0])) {
		return "n"
	}
	return ""
}

// commandNotFound is a child command not found on $PATH (exec.ErrNotFound):
// it is fs.ErrNotExist too, so that a command missing from $PATH and one
// missing at its path are the same "not found" (the CLI's exit 3).
type commandNotFound struct{ err error }

func (e *commandNotFound) Error() string   { return e.err.Error() }
func (e *commandNotFound) Unwrap() []error { return []error{e.err, fs.ErrNotExist} }
