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
)

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
