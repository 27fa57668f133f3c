package docstore

import (
	"time"

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

// IDTime returns the creation time encoded in an id made by NewID (the
// first 48 bits of a UUIDv7: Unix milliseconds); ok is false for anything
// else.
func IDTime(id string) (t time.Time, ok bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	ms := int64(u[0])<<40 | int64(u[1])<<32 | int64(u[2])<<24 | int64(u[3])<<16 | int64(u[4])<<8 | int64(u[5])
	return time.UnixMilli(ms), true
}
