package journal

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// ErrNoType is returned when an event has no type (or, reading the journal,
// no id): every journal line must say what happened.
var ErrNoType = errors.New("event has no type or id")

// ErrTrailingData is returned when a journal line holds more than one JSON
// value (two events torn together into one line).
var ErrTrailingData = errors.New("trailing data after event")

// LineError reports a journal line that is not a well-formed event. It is
// passed to the reader's callback, never fatal: one bad line (a torn write
// after a full disk, a hand edit) must not hide the rest of the history.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// errDayReplaced is returned when a day file went on being replaced or
// removed each time it was opened again to append to it.
var errDayReplaced = errors.New("day file replaced or removed while appending, again and again")

// TypeHintError says that a type filter names no event type tavern
// writes, and what it was probably meant to be: Near (types one or two
// edits away, or the prefix filter of a family) or Family (the types of
// the family it names). A hint for the caller to show, not a refusal.
type TypeHintError struct {
	Type   string
	Near   []string
	Family []string
}

func (e *TypeHintError) Error() string {
	if len(e.Near) > 0 {
		return fmt.Sprintf("%s: no such event type (did you mean %s?)", e.Type, schema.NearList(e.Near))
	}
	family := e.Type[:strings.IndexByte(e.Type, '.')+1]
	return fmt.Sprintf("%s: no such event type (the %s types: %s)", e.Type, family, strings.Join(e.Family, ", "))
}

// Unwrap makes a type hint a likely typo, as the schema's field hints
// are (schema.ErrLikelyTypo).
func (e *TypeHintError) Unwrap() error { return schema.ErrLikelyTypo }

// ErrBadTypePattern is matched by every *TypePatternError.
var ErrBadTypePattern = errors.New("bad event type pattern")

// TypePatternError reports a type filter that is not a well-formed glob
// (item.[), or is empty: it would match nothing.
type TypePatternError struct {
	Pattern string
}

func (e *TypePatternError) Error() string {
	if e.Pattern == "" {
		return `event type "": empty; give a type (agent.state), a prefix (agent.) or a glob (item.*)`
	}
	return fmt.Sprintf("event type pattern %q: %v (a glob: *, ?, [a-z])", e.Pattern, path.ErrBadPattern)
}
func (e *TypePatternError) Unwrap() error { return ErrBadTypePattern }
