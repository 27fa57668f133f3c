package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

var (
	// ErrConfig is a repository, base or option that cannot be used.
	ErrConfig = errors.New("workspace configuration")
	// ErrLimit is returned by Prepare when the worktree count or disk
	// bound is reached and no orphan could be pruned.
	ErrLimit = errors.New("worktree limit reached")
	// ErrConflict: the branch does not rebase (or merge) cleanly onto
	// the base.
	ErrConflict = errors.New("merge conflict")
	// ErrCheck: the check command failed in the worktree.
	ErrCheck = errors.New("check failed")
	// ErrBaseBusy: the base's checkout has local changes, so the merge
	// queue will not move it.
	ErrBaseBusy = errors.New("base checkout has local changes")
	// ErrInterrupted: the merger's context ended (a signal to the
	// wrapper, its pool gone) while the check ran: no verdict on the
	// branch. The record is left unfinished, for the next merger to roll
	// back as a killed merger's.
	ErrInterrupted = errors.New("merge interrupted")
	// ErrBranchTaken: every name Prepare tries for a new item's branch
	// is a branch with commits of its own (someone else's).
	ErrBranchTaken = errors.New("branch names taken")
)

// MergeError is a merge that did not land: why (Err: ErrConflict,
// ErrCheck, ...), the files in conflict, and the output of the step that
// failed. Its text is what the failed item records as last_error.
type MergeError struct {
	Item   string
	Record string // merges/<id>.md
	Files  []string
	Code   int // the check's exit status
	Output string
	Err    error
}

func (e *MergeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", e.Err)
	if len(e.Files) > 0 {
		fmt.Fprintf(&b, " in %s", strings.Join(e.Files, ", "))
	}
	if e.Code != 0 {
		fmt.Fprintf(&b, " (exit %d)", e.Code)
	}
	if e.Record != "" {
		fmt.Fprintf(&b, " [%s]", e.Record)
	}
	if out := strings.TrimSpace(e.Output); out != "" {
		lines := strings.Split(out, "\n")
		if len(lines) > 15 {
			lines = append([]string{"…"}, lines[len(lines)-15:]...)
		}
		b.WriteString("\n" + strings.Join(lines, "\n"))
	}
	return b.String()
}

func (e *MergeError) Unwrap() error { return e.Err }

// CommandError is a drone command given as a path relative to the
// worktree (./build-one.sh) that the base branch does not hold
// (CommandFound). It matches fs.ErrNotExist.
type CommandError struct {
	Op   string
	Path string // the command as given
	Base string // the branch the worktrees start from
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s: %s: no such file in branch %s, which the worktrees start from (commit it there)", e.Op, e.Path, e.Base)
}

func (e *CommandError) Unwrap() error { return fs.ErrNotExist }
