package recall

import (
	"errors"
)

// ErrArchived is returned when editing an archived memory or knowledge
// entry.
var ErrArchived = errors.New("archived")

// ErrEmpty is returned when a memory or knowledge text is empty or only
// white space.
var ErrEmpty = errors.New("empty text")
