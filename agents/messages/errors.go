package messages

import "errors"

var (
	// ErrEmptyMessage is returned when a message text is empty or only
	// white space.
	ErrEmptyMessage = errors.New("empty message")

	// ErrMessageTooLarge is returned when a message text is larger than
	// MaxMessageSize.
	ErrMessageTooLarge = errors.New("message too large")

	// ErrBadMessage is returned when a message text cannot be stored (a NUL
	// byte).
	ErrBadMessage = errors.New("bad message text")

	// ErrArchived is returned when sending to an archived channel, or
	// editing an archived memory or knowledge entry.
	ErrArchived = errors.New("archived")

	// ErrBadChunk is matched by every *ChunkError: a message section of a
	// chunk body that does not parse.
	ErrBadChunk = errors.New("malformed message chunk")
)
