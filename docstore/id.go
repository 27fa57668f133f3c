package docstore

import (
	"github.com/google/uuid"
)

// NewID returns a new time-ordered, collision-free id: a UUIDv7, whose
// string form sorts by creation time (millisecond resolution, monotonic
// within a process; 74 random bits make cross-process collisions
// negligible). google/uuid is used rather than hand-rolled code because it
// gets the monotonic counter and the version/variant bits right.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}
