package kit

import (
	"errors"
	"fmt"

	"github.com/tavernhq/tavern/queues"
)

// ErrNoAgent is returned when an operation needs an agent identity and
// none was given (no --as, no $TAVERN_AGENT, no hook session).
var ErrNoAgent = errors.New("no agent identity")

// ErrNoQueue is returned by Take when the store has no queue at all: there
// is nothing to claim (it unwraps to queues.ErrEmpty).
var ErrNoQueue = fmt.Errorf("%w: the store has no queue (create one with `tavern queue create Q`)", queues.ErrEmpty)

// ErrBlankQuery is returned by Search for a query with no words: it would
// match nothing, which reads as "the project knows nothing of it".
var ErrBlankQuery = errors.New("the query is blank: give the words to search for")

// ErrUnknownTool is returned for a tool name setup or hook does not know.
var ErrUnknownTool = errors.New("unknown tool")

// ErrUnknownEvent is returned for a hook event name hook does not know.
var ErrUnknownEvent = errors.New("unknown hook event")

// ErrBadPayload is returned when a hook's stdin is not the JSON object the
// tool documents.
var ErrBadPayload = errors.New("bad hook payload")

// ErrHandlerPanic is wrapped by the error Handle returns when a handler
// panicked: the hook fails open on it, as on Tavern's other trouble.
var ErrHandlerPanic = errors.New("hook handler panicked")

// ErrBadConfig is returned when a tool's configuration file (settings.json,
// hooks.json, .aider.conf.yml) cannot be parsed: setup leaves it as it is.
var ErrBadConfig = errors.New("bad configuration file")

// Error carries the operation and the path (a file, or a tool/event name)
// an error is about.
type Error struct {
	Op   string
	Path string
	Err  error
	// File, Line and Col, when File is set, say where in a file the
	// error is (Path then carries them in its text too): JSON error
	// objects take them (docstore.Position).
	File      string
	Line, Col int
}

// Position implements docstore.Positioner.
func (e *Error) Position() (string, int, int) { return e.File, e.Line, e.Col }

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Op + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
