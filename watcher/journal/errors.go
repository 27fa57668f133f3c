package journal

import (
	"errors"
	"fmt"
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
