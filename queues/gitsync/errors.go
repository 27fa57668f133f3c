package gitsync

import "errors"

var (
	// ErrNoRemote: no remote is configured and the project repository
	// has no origin.
	ErrNoRemote = errors.New("no sync remote: set sync: remote: in tavern.md, $TAVERN_SYNC_REMOTE, or give the project repository an origin")
)

// SyncError is a sync failure on one path (or on tavern.md's settings).
type SyncError struct {
	Op   string
	Path string
	Err  error
}

func (e *SyncError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *SyncError) Unwrap() error { return e.Err }
