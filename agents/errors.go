package agents

import "errors"

// Errors of channels, messages, bookmarks, notes, memory, knowledge, wake,
// sleep, context and backup (messaging helper's section).
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

	// ErrNotEmpty is returned by Restore when the target store already
	// holds documents and force is not set.
	ErrNotEmpty = errors.New("store is not empty")
)
