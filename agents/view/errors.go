package view

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
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
	if namesItself(e.Err, e.Op, e.Path) {
		// The library's error names the action already (a gate's
		// "reject X: ..."): saying it twice reads as a stutter.
		return e.Err.Error()
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

// namesItself reports whether err is an error of the library whose
// message begins with op and path, as an ActionError's would. Only err
// itself, not what it wraps: a wrapper's message begins with its own
// words, so the action would go unsaid.
func namesItself(err error, op, path string) bool {
	var o, p string
	switch x := err.(type) {
	case *queues.GateError:
		o, p = x.Op, cmp.Or(x.Path, x.Gate) // the one GateError.Error names
	case *agents.AgentError:
		o, p = x.Op, x.Path
	case *fs.PathError:
		o, p = x.Op, x.Path
	default:
		return false
	}
	return o == op && p == path
}

func (e *ActionError) Unwrap() error { return e.Err }
