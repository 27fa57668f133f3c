package view

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnknownAction is returned by Do for an action name it does not know.
	ErrUnknownAction = errors.New("unknown action")
	// ErrNoInput is returned by Do when an action needs Text (an answer, a
	// message, a document) and got none.
	ErrNoInput = errors.New("action needs input")
	// ErrClosed is returned by methods of a closed View.
	ErrClosed = errors.New("view closed")
)

// ActionError reports a failed action: which one, on what, and why. It
// unwraps to the library's error (agents.ErrAnswered, queues.ErrStale,
// docstore.ErrConflict, schema.ErrInvalid...), so callers map it with
// errors.Is like any other.
type ActionError struct {
	Op   string // the action name
	Path string // the target as given (id, channel or document path)
	Err  error
}

func (e *ActionError) Error() string {
	prefix := e.Op + " " + e.Path
	if msg := e.Err.Error(); strings.HasPrefix(msg, prefix+":") {
		// The library's error names the action already (a gate's
		// "reject X: ..."): saying it twice reads as a stutter.
		return msg
	}
	return fmt.Sprintf("%s: %v", prefix, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }
