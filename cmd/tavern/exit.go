package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/agents/trace"
	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/agents/view/web"
	"github.com/tavernhq/tavern/agents/workspace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/plans"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Exit codes of the tavern command. They are a contract for scripts and
// listed in README.md.
const (
	exitOK       = 0
	exitError    = 1 // anything not listed below
	exitUsage    = 2 // bad flags or arguments, unknown kind, unsafe name
	exitNotFound = 3 // not found, nothing matched, timed out
	exitConflict = 4 // stale revision, lost claim, illegal transition, stale attempt
	exitInvalid  = 5 // invalid documents
)

// exitCodes maps errors to exit codes with errors.Is, in order: the first
// match wins, so the more specific errors come before the general ones
// (a refused write takes the code of the rule's error, else 4).
var exitCodes = []struct {
	err  error
	code int
}{
	// The command line itself.
	{errUsage, exitUsage},
	{errBadField, exitUsage}, // before schema.ErrInvalid, which it also is
	{errNothing, exitNotFound},
	{schema.ErrUnknownName, exitNotFound},

	// schema
	{schema.ErrUnknownKind, exitUsage},
	{schema.ErrInvalidName, exitUsage},
	{schema.ErrBadAgentName, exitUsage},
	{schema.ErrLikelyTypo, exitUsage}, // a warning's: a typo of a field, value or name, as one refused is

	// agents (before docstore: a refused write takes the rule's code)
	{agents.ErrUnknownState, exitUsage}, // a typo, before the transition it also is
	{agents.ErrIllegalTransition, exitConflict},
	{agents.ErrIllegalEdit, exitInvalid},
	{agents.ErrStateChanged, exitConflict},
	{agents.ErrParentCycle, exitInvalid},
	{web.ErrNotExport, exitConflict}, // an export would overwrite someone's file
	{web.ErrNotDir, exitUsage},       // an export DIR that is a file
	{agents.ErrConstitutionChanged, exitConflict},
	{agents.ErrBusy, exitConflict},
	{agents.ErrSelfVerify, exitConflict},
	{agents.ErrOwnAssertion, exitConflict},
	{agents.ErrOwnCommitment, exitConflict},
	{agents.ErrTampered, exitInvalid},
	{agents.ErrUnverified, exitConflict},
	{agents.ErrAnswered, exitConflict},
	{agents.ErrEmptyText, exitUsage},
	{agents.ErrAskSelf, exitUsage},
	{agents.ErrPersonAskSelf, exitUsage},
	{agents.ErrNoWork, exitNotFound},
	{agents.ErrNotEmpty, exitConflict},
	{agents.ErrNotBackup, exitNotFound}, // restore SRC holds no store
	{agents.ErrPersonNotAgent, exitUsage},
	{agents.ErrBadPool, exitUsage},
	{agents.ErrPoolRunning, exitConflict},
	{agents.ErrPoolElsewhere, exitConflict},
	{agents.ErrAgentDown, exitConflict}, // a failed or dead agent takes nothing until revived
	// A spawn that says its pool admitted it, and was not its drone:
	// refused as a spent budget is.
	{agents.ErrNotAdmitted, exitConflict},
	{agents.ErrNearRole, exitUsage},      // a typo of a role, not a role that is missing
	{recall.ErrNearDomain, exitUsage},    // likewise a knowledge domain
	{messages.ErrNearChannel, exitUsage}, // and a channel send --create would make
	{agents.ErrNameNotPath, exitUsage},   // as an item's path fields
	{agents.ErrDuplicateID, exitUsage},
	{agents.ErrIDChanged, exitUsage}, // as an item's path fields

	// agents/view
	{view.ErrNoInput, exitUsage},
	{view.ErrUnknownAction, exitUsage},

	// agents/messages
	{messages.ErrEmptyMessage, exitUsage},
	{messages.ErrMessageTooLarge, exitUsage},
	{messages.ErrBadMessage, exitUsage},
	{messages.ErrArchived, exitConflict},
	{messages.ErrNotYours, exitConflict}, // another agent's direct channel
	{messages.ErrBadChunk, exitInvalid},

	// agents/recall
	{recall.ErrEmpty, exitUsage},
	{recall.ErrArchived, exitConflict},

	// agents/kit
	{kit.ErrNoAgent, exitUsage},
	{kit.ErrUnknownTool, exitUsage},
	{kit.ErrUnknownEvent, exitUsage},
	{kit.ErrBlankQuery, exitUsage},
	{kit.ErrBadConfig, exitInvalid},

	// queues
	{queues.ErrUnknownQueue, exitNotFound},
	{queues.ErrEmpty, exitNotFound},
	{queues.ErrStale, exitConflict},
	{queues.ErrNotHolder, exitConflict},
	{queues.ErrState, exitConflict},
	{queues.ErrQueueExists, exitConflict},
	{queues.ErrQueueNotEmpty, exitConflict}, // rm of a queue with work left
	{queues.ErrPriority, exitUsage},
	{queues.ErrCycle, exitUsage},
	{queues.ErrPathField, exitUsage},
	{queues.ErrIDNotPath, exitUsage}, // as a changed id (agents.ErrIDChanged)
	{queues.ErrBadDependency, exitUsage},
	{queues.ErrBadOption, exitUsage},
	{queues.ErrUnavailable, exitError}, // several machines: etcd or the git remote is away
	{queues.ErrNoEngine, exitUsage},
	{gitsync.ErrNoRemote, exitUsage},
	{gitsync.ErrBadRef, exitUsage},
	{gitsync.ErrNoState, exitNotFound},      // sync --clone of a remote no machine synced to
	{gitsync.ErrUnrelated, exitConflict},    // a first sync of a store made by init, not --clone
	{gitsync.ErrMachineTaken, exitConflict}, // a join or rename under a name another clone syncs as
	{queues.ErrGated, exitConflict},
	{queues.ErrRejected, exitConflict},
	{queues.ErrNotHuman, exitConflict},
	{queues.ErrDecided, exitConflict},
	{queues.ErrForged, exitInvalid},
	{queues.ErrGateUnlisted, exitUsage}, // a gate its item does not list: gate add makes gates

	// queues/plans
	{plans.ErrPlan, exitInvalid},

	// agents/workspace, agents/usage, agents/trace
	{workspace.ErrConfig, exitUsage},
	{workspace.ErrConflict, exitConflict},
	{usage.ErrGrouping, exitUsage},
	{usage.ErrSpent, exitConflict},
	{usage.ErrNearPool, exitUsage},      // a typo of a pool
	{usage.ErrNoLimit, exitUsage},       // a new budget with no limit
	{usage.ErrNearBudget, exitUsage},    // a typo of a budget (set creates or changes)
	{usage.ErrUnreadable, exitConflict}, // a broken budget refuses as a spent one
	{trace.ErrUnknown, exitNotFound},

	// watcher/journal
	{journal.ErrBadTypePattern, exitUsage},

	// queues/tuples
	{tuples.ErrNoTuple, exitNotFound},
	{tuples.ErrTokenBusy, exitNotFound},
	{tuples.ErrUnknownToken, exitNotFound},
	{tuples.ErrNearToken, exitUsage}, // a typo of a token (init creates or changes)
	{tuples.ErrBadPattern, exitUsage},
	{tuples.ErrBadGlob, exitUsage},
	{tuples.ErrNotGit, exitUsage}, // guard run outside git
	{tuples.ErrBadTuple, exitUsage},
	{tuples.ErrEngineType, exitUsage}, // token, reservation: their own commands
	{tuples.ErrReserved, exitConflict},
	{tuples.ErrNoSlot, exitNotFound}, // before ErrNotHolder: a release naming no slot at all
	{tuples.ErrNotHolder, exitConflict},
	{tuples.ErrNotYours, exitConflict}, // another agent's reservation, as another's claim
	{tuples.ErrTokenCount, exitConflict},
	{tuples.ErrFenced, exitConflict},
	{tuples.ErrNotReserved, exitNotFound},
	{tuples.ErrHolderNotAlive, exitUsage}, // a hold nothing alive keeps: give a TTL

	// docstore
	{docstore.ErrUnsafePath, exitUsage},
	{docstore.ErrInsideStore, exitUsage}, // a backup or export DIR in .tavern/
	{docstore.ErrEngineFile, exitUsage},
	{docstore.ErrBadExpr, exitUsage},
	{docstore.ErrAmbiguous, exitUsage},
	{docstore.ErrBadRev, exitUsage},     // no revision at all, not a stale one
	{docstore.ErrNoField, exitNotFound}, // a warning's: set FIELD- of a field the document lacks
	{docstore.ErrConflict, exitConflict},
	{docstore.ErrLost, exitConflict},
	{docstore.ErrRefused, exitConflict},
	{schema.ErrInvalid, exitInvalid},
	{docstore.ErrParse, exitInvalid},
	{docstore.ErrNoStore, exitNotFound},
	{docstore.ErrNested, exitConflict},

	// The standard library.
	{fs.ErrExist, exitConflict}, // create-if-absent lost to an existing document
	{fs.ErrNotExist, exitNotFound},
	{context.DeadlineExceeded, exitNotFound},
}

var (
	errUsage   = errors.New("usage")
	errNothing = errors.New("nothing matched")
	// errBadField is matched by every *fieldArgError.
	errBadField = errors.New("bad field=value argument")
	// errSilent marks an error already reported in full (e.g. by check);
	// only its exit code is used.
	errSilent = errors.New("already reported")
)

// usageError is a bad command line: flags (urfave/cli's parse errors come
// through OnUsageError), arguments or an unknown command.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return errUsage }

func usageErr(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// fieldArgError is the schema's refusal of a document that new did not
// write, said as the command line's fault: the field=value given (or the
// required field not given) and what is wrong with it. There is no file,
// so no path:line:col (set and edit, whose document exists, point into
// it and exit 5). It matches errBadField (exit 2) and schema.ErrInvalid.
type fieldArgError struct {
	Op   string   // "new memory alice/x": the command, not a file
	Path string   // the document that was not written
	Kind string   // its kind, for the hint
	Errs []string // one per problem: `topic=Bad: "Bad" must be kebab-case...`
}

func (e *fieldArgError) Error() string {
	lines := make([]string, len(e.Errs))
	for i, m := range e.Errs {
		lines[i] = e.Op + ": " + m
	}
	return strings.Join(lines, "\n")
}

func (e *fieldArgError) Unwrap() []error { return []error{errBadField, schema.ErrInvalid} }

// notFoundError is a command line naming something that does not exist
// (exit 3), said in the command's own words.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return errNothing }

// codedError carries an explicit exit code with an error: the child's
// status from spawn, or a code for a result already printed (errSilent).
type codedError struct {
	err  error
	code int
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &codedError{err: err, code: code} }

// childError is the error a tavern child process (the background
// daemon) exited with, read back from its JSON error object: its
// message and position (docstore.Position finds it), for the parent to
// report as its own.
type childError struct {
	Msg  string `json:"error"`
	Path string `json:"path"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (e *childError) Error() string                          { return e.Msg }
func (e *childError) Position() (path string, line, col int) { return e.Path, e.Line, e.Col }

// exitCode maps an error to the exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	for _, e := range exitCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	// A program that failed (git under sync, a hook) is a failure: its
	// *exec.ExitError has an ExitCode method, so it would pass for one of
	// urfave/cli's usage errors below (git's 128 read as exit 2).
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		return exitError
	}
	// urfave/cli's own cli.Exit errors are about the command line ("No
	// help topic for ...", code 3, which would read as "not found").
	var ee cli.ExitCoder
	if errors.As(err, &ee) {
		return exitUsage
	}
	return exitError
}

// hint is the command-line advice for an error, which the library's
// errors do not carry: what to run next.
func hint(err error) string {
	var ke *schema.UnknownKindError
	var ue *schema.UnknownError
	var ae *agents.AgentError
	var te *agents.TransitionError
	var re *agents.RoleError
	var fe *fieldArgError
	var pe *usage.PoolError
	var be *usage.BudgetError
	var de *recall.DomainError
	var nte *tuples.NearTokenError
	var ce *messages.ChannelError
	switch {
	case errors.As(err, new(*docstore.NoStoreError)):
		return "" // it says what to do
	case errors.Is(err, docstore.ErrNoStore):
		return " (run `tavern init`, or pass --dir / set TAVERN_DIR)"
	case errors.As(err, &ke) && ke.Name != "":
		return " (see `tavern schema` for the list)"
	case errors.As(err, &ae) && ae.Op == "spawn" && errors.As(err, &ue) && ue.What == "agent" && len(ue.Near) > 0:
		// spawn --name creates the agent it does not find, but not a typo.
		return fmt.Sprintf(" (did you mean %s? if it is a new agent: `tavern agent new %s` first)", schema.NearList(ue.Near), ue.Name)
	case errors.As(err, &ue):
		return unknownHint(ue)
	case errors.Is(err, agents.ErrNotEmpty):
		return " (--force replaces it; the current store is kept in .tavern-backups/before-restore-<time>)"
	case errors.Is(err, docstore.ErrNested):
		return " (pass --nested to create another store here anyway)"
	case errors.Is(err, agents.ErrConstitutionChanged):
		return " (pass --accept-constitution to spawn under the new one)"
	case errors.As(err, &fe):
		return fmt.Sprintf(" (`tavern schema %s` lists its fields)", fe.Kind)
	case errors.As(err, &re) && errors.Is(err, agents.ErrNearRole):
		return nearRoleHint(re)
	case errors.As(err, &de) && de.Op == "create":
		return fmt.Sprintf(" (if it is a new domain: `tavern knowledge add --domain %s --new-domain`)", de.Domain)
	case errors.As(err, &de):
		return " (pass --new-domain to create it)"
	case errors.As(err, &ce) && ce.Op == "create":
		return fmt.Sprintf(" (if it is a new channel: pass --new, `tavern channel create %s --new`)", ce.Channel)
	case errors.As(err, &ce):
		return fmt.Sprintf(" (if it is a new channel: `tavern channel create %s --new`)", ce.Channel)
	case errors.As(err, &pe) && pe.Op == "create pool":
		// new pool has no --new-pool: pool run is what makes it on purpose.
		return fmt.Sprintf(" (if it is a new pool: `tavern pool run %s --new-pool ...` makes it)", pe.Pool)
	case errors.As(err, &pe) && !strings.HasPrefix(pe.Path, "budgets/"):
		return " (if it is a new pool: pass --new-pool)"
	case errors.As(err, &pe):
		name := strings.TrimSuffix(strings.TrimPrefix(pe.Path, "budgets/"), ".md")
		return fmt.Sprintf(" (if it is a new pool: `tavern budget set %s --pool %s --new-pool`)", name, pe.Pool)
	case errors.As(err, &be):
		return fmt.Sprintf(" (if it is a new budget: pass --new, `tavern budget set %s --new ...`)", be.Name)
	case errors.As(err, &nte):
		return fmt.Sprintf(" (if it is a new token: pass --new, `tavern token init %s --count N --new`)", nte.Name)
	case errors.As(err, &te) && errors.Is(err, agents.ErrIllegalEdit):
		return fmt.Sprintf(" (`tavern agent state %s STATE --force`)", te.Agent)
	}
	return ""
}

// nearRoleHint is how to make a role near an existing one on purpose:
// constitution set --new, which an agent of the role needs first (agent
// creation has no --new: a role meant as one gets its constitution).
func nearRoleHint(e *agents.RoleError) string {
	if e.Op == "write constitution" {
		return " (pass --new to create it)"
	}
	if schema.ValidPlainName("role", e.Role) != nil {
		return "" // no name to offer: the name rule would refuse it next
	}
	return fmt.Sprintf(" (if it is a new role, create it first: `tavern constitution set %s --new --text TEXT`)", e.Role)
}

// timeoutError says what did not happen in time. It matches
// context.DeadlineExceeded (exit 3) without repeating its text: "no
// answer to Q within 5m", not "context deadline exceeded".
type timeoutError struct {
	what  string
	after time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("%s within %s", e.what, e.after) }
func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

// timedOut turns a deadline that ran out while waiting up to after into
// a timeoutError saying what (a format); other errors are returned as
// they are.
func timedOut(err error, after time.Duration, format string, args ...any) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &timeoutError{what: fmt.Sprintf(format, args...), after: after}
	}
	return err
}

// unknownHint is the "did you mean" of a name that names nothing, or how
// to create it on purpose.
func unknownHint(e *schema.UnknownError) string {
	if len(e.Near) > 0 {
		return " (did you mean " + schema.NearList(e.Near) + "?)"
	}
	switch e.What {
	case "agent":
		return fmt.Sprintf(" (create it with `tavern agent new %s`)", e.Name)
	case "channel":
		if strings.HasPrefix(e.Name, "@") {
			return fmt.Sprintf(" (no agent %s: create it with `tavern agent new %s`)", e.Name[1:], e.Name[1:])
		}
		return fmt.Sprintf(" (create it with `tavern channel create %s`, or send --create)", e.Name)
	case "queue":
		return fmt.Sprintf(" (create it with `tavern queue create %s`)", e.Name)
	case "question":
		return " (`tavern questions --all` lists them)"
	case "memory entry":
		return " (`tavern memory ls --as AGENT` lists an agent's)"
	case "knowledge entry":
		return " (`tavern knowledge ls` lists them)"
	case "plan":
		return " (import one with `tavern plan import FILE.md --queue Q`)"
	case "constitution":
		return fmt.Sprintf(" (create it with `tavern constitution set %s --text TEXT`)", e.Name)
	}
	return ""
}

// reportError prints err (as text, or as a JSON object when --json was
// given) and returns the exit code.
func reportError(stderr io.Writer, args []string, err error) int {
	code := exitCode(err)
	if err == nil || errors.Is(err, errSilent) {
		return code
	}
	if wantsJSON(args) {
		fmt.Fprintln(stderr, jsonError(err, code, kindError))
		return code
	}
	// An error can quote what someone wrote (a field's value): its
	// control characters are shown escaped, as in every text output.
	fmt.Fprintf(stderr, "tavern: %s%s\n", view.Visible(err.Error()), hint(err))
	if code == exitUsage && errors.Is(err, errUsage) {
		fmt.Fprintln(stderr, "Run `tavern --help` or `tavern COMMAND --help` for usage.")
	}
	return code
}

func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// jsonError renders err as the one-line JSON error object of the CLI
// contract. Every key is always present (path, line and col are null when
// the error has none), so consumers need no existence checks.
// The kinds of JSON error object (its "kind"): the error that stopped
// the command (its code is the exit status), a problem the command went
// on despite (its code is the one the problem would have exited with), a
// note that is no problem at all (code 0: a listing's view is seconds
// old), so that a script tells them apart without reading the text.
const (
	kindError   = "error"
	kindWarning = "warning"
	kindNote    = "note"
)

func jsonError(err error, code int, kind string) string {
	path, line, col := docstore.Position(err)
	obj := map[string]any{"error": err.Error() + hint(err), "code": code, "kind": kind, "path": nil, "line": nil, "col": nil}
	if path != "" {
		obj["path"] = path
	}
	if line > 0 {
		obj["line"] = line
	}
	if line > 0 && col > 0 {
		obj["col"] = col
	}
	// Nothing to claim: what the take saw besides is in the one object
	// (queue ls --json's keys), not text beside it.
	var ee *queues.EmptyError
	if errors.As(err, &ee) {
		diag := ee.Diag
		if diag == nil {
			diag = &queues.Diagnostics{}
		}
		obj["invalid"] = errorsJSON(diag.Invalid)
		obj["blocked"] = blockedJSON(diag.Blocked)
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// warnf reports a condition a command goes on despite (no background
// reaper, a watch that polls): "tavern: warning: ..." text, or under
// --json the JSON error object warn writes, so that stderr parses too.
// class is the error of the exit-code table the problem is (its JSON
// "code": a typo of a name 2, a name that names nothing 3), or nil when
// the message wraps (%w) a library error that says so itself.
func warnf(c *cli.Context, class error, format string, args ...any) {
	err := fmt.Errorf(format, args...)
	if class != nil {
		err = &warning{err: err, class: class}
	}
	if c.Bool("json") {
		warn(c, err)
		return
	}
	errf(c, "tavern: warning: %v\n", err)
}

// warning is a warning's message with the error it would be had it
// stopped the command: exitCode gives a warning the code of its problem,
// never 1 for want of a library error.
type warning struct {
	err   error
	class error
}

func (w *warning) Error() string   { return w.err.Error() }
func (w *warning) Unwrap() []error { return []error{w.err, w.class} }

// reportErr reports an error of a long-running command's background work
// (the reaper, the daemon's server), which goes on: "tavern: WHAT: ..."
// text, or a JSON error object under --json.
func reportErr(c *cli.Context, what string, err error) {
	if c.Bool("json") {
		warn(c, fmt.Errorf("%s: %w", what, err))
		return
	}
	errf(c, "tavern: %s: %v\n", what, err)
}

// warn reports a problem that does not stop the command (a document ls
// could not read), or a note that is no problem (docstore.ErrNote: code 0,
// kind note): a JSON error object under --json, else a text line.
func warn(c *cli.Context, err error) {
	if c.Bool("json") {
		if errors.Is(err, docstore.ErrNote) {
			errf(c, "%s\n", jsonError(err, exitOK, kindNote))
			return
		}
		errf(c, "%s\n", jsonError(err, exitCode(err), kindWarning))
		return
	}
	errf(c, "tavern: %s\n", view.Visible(err.Error()))
}
