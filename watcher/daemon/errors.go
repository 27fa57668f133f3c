package daemon

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by every Call error: the caller answers
// without the daemon. None runs, it did not answer in time, it serves
// another store, it could not bring its projection up to date, or the
// handler failed (the caller's own path then reports the failure with
// its usual error).
var ErrUnavailable = errors.New("no usable query daemon")

// ErrNotServable is returned by Start for a projection that cannot back a
// daemon: not watching, scoped to some kinds, or polling.
var ErrNotServable = errors.New("projection cannot serve queries")

// Error is a failure talking to the daemon of the store at Path.
type Error struct {
	Op   string // "connect", "request", "answer", or the query's op
	Path string // the store root
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("daemon %s %s: %v", e.Op, e.Path, e.Err) }

func (e *Error) Unwrap() error { return e.Err }
