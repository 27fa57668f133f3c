package gitsync

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

var (
	// ErrNoRemote: no remote is configured and the project repository
	// has no origin.
	ErrNoRemote = errors.New("no sync remote: set sync: remote: in tavern.md, $TAVERN_SYNC_REMOTE, or give the project repository an origin")
	// ErrBadRef: a remote ref given to Clone that is not a full, valid
	// ref name (refs/...).
	ErrBadRef = errors.New("bad sync ref")
	// ErrNoState: the remote Clone was given has no store yet (no
	// machine has synced to it): nothing to clone.
	ErrNoState = errors.New("no store on the remote yet")
	// ErrUnrelated: the remote holds another store than this one (a
	// second `tavern init` rather than `tavern sync --clone`): refused,
	// merging would fold the two into one.
	ErrUnrelated = errors.New("the remote holds another store")
	// ErrMachineTaken: a clone joins, or is renamed, under a machine name
	// the remote holds a journal of (events/<machine>/): another clone
	// writes, or wrote, under that name, and only one may. Matched by a
	// *MachineTakenError.
	ErrMachineTaken = errors.New("machine name taken")
)

// MachineTakenError is a join or a rename refused under a machine name
// the remote has a journal of (ErrMachineTaken), with a free name to use
// instead and how to take the name over.
type MachineTakenError struct {
	Op     string // "clone", "join" (the first sync of a store init made) or "rename"
	Path   string // the journal on the remote: events/<machine>/
	Name   string // the name refused
	Free   string // a name the remote has no journal of
	Old    string // rename: the name the clone keeps
	Remote string
}

func (e *MachineTakenError) Error() string {
	var how string
	switch e.Op {
	case "clone":
		how = fmt.Sprintf("choose a name of this machine's own (TAVERN_MACHINE=%s tavern sync --clone %s), or, if this machine is %s re-made and its old clone will never sync again, add --takeover; nothing was made",
			e.Free, e.Remote, e.Name)
	case "join":
		how = fmt.Sprintf("choose a name of this machine's own (TAVERN_MACHINE=%s tavern sync), or, if this machine is %s re-made and its old clone will never sync again, run `tavern sync --takeover`; nothing was pushed or changed",
			e.Free, e.Name)
	default:
		how = fmt.Sprintf("this clone keeps its name %q; choose another (TAVERN_MACHINE=%s tavern sync), or, if the clone that synced as %s will never sync again, run `tavern sync --takeover`; nothing changed",
			e.Old, e.Free, e.Name)
	}
	return fmt.Sprintf("%s: machine name %q is taken: the remote has its journal (%s), written by another clone, and two clones under one name overwrite each other's journal: %s",
		e.Op, e.Name, e.Path, how)
}

func (e *MachineTakenError) Unwrap() error { return ErrMachineTaken }

// CheckRef reports whether ref is a full ref name git accepts
// (refs/tavern/state, not tavern/state or "refs/a b"): ErrBadRef if not.
// A short name would be expanded by git's fetch to a ref the later
// rounds never use.
func CheckRef(ref string) error {
	if !strings.HasPrefix(ref, "refs/") {
		return fmt.Errorf("%w: --ref %q: want a full ref name (refs/...)", ErrBadRef, ref)
	}
	if why := schema.StateRefProblem(ref); why != "" {
		return fmt.Errorf("%w: --ref %q: %s", ErrBadRef, ref, why)
	}
	if _, err := runGit("", nil, nil, "check-ref-format", ref); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && ge.Stderr == "" {
			return fmt.Errorf("%w: --ref %q: not a valid ref name (git check-ref-format)", ErrBadRef, ref)
		}
		return err
	}
	return nil
}

// SyncError is a sync failure on one path (or on tavern.md's settings).
type SyncError struct {
	Op   string
	Path string
	// File, Line and Col place a failure about a store file (tavern.md)
	// for --json error objects; File is empty where Path names no store
	// file (an engine key, a remote, a directory).
	File      string
	Line, Col int
	Err       error
}

// Position is File, Line and Col (docstore.Positioner: the --json error
// object's path, line and col); without File, the wrapped error's.
func (e *SyncError) Position() (string, int, int) {
	if e.File == "" {
		return docstore.Position(e.Err)
	}
	return e.File, e.Line, e.Col
}

func (e *SyncError) Error() string {
	if e.Path == "" {
		return e.Op + ": " + e.Err.Error()
	}
	return e.Op + " " + e.Path + ": " + e.Err.Error()
}
func (e *SyncError) Unwrap() error { return e.Err }
