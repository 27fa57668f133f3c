package messages

import (
	"errors"
	"fmt"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

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

// badFile reports whether err is about one file that is not a readable
// document (it does not parse or validate, or is not a regular file): a
// listing skips it and names it, and it hides nothing else.
func badFile(err error) bool {
	return errors.Is(err, docstore.ErrParse) || errors.Is(err, schema.ErrInvalid) || errors.Is(err, docstore.ErrOddFile)
}

// skipped is the error of a listing that skipped the files of errs: nil
// when there are none.
func skipped(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &docstore.SkippedError{Errs: errs}
}

// ErrNearChannel is matched by every *ChannelError: a channel that Send
// with Create would make is near an existing one, a likely typo.
var ErrNearChannel = errors.New("likely typo of a channel")

// ChannelError is a channel a create-on-send or CreateChannel would make
// whose name is near an existing channel's (`gneral` beside `general`).
// Nothing is written: CreateChannelWith with New (`tavern channel create
// --new`) makes it on purpose.
type ChannelError struct {
	Op      string   // "send", "create"
	Path    string   // the channel document it would have written
	Channel string   // the name given
	Near    []string // existing channels, nearest first (schema.Near)
}

func (e *ChannelError) Error() string {
	return fmt.Sprintf("%s: channel %q is new; did you mean %s?", e.Op, e.Channel, schema.NearList(e.Near))
}

func (e *ChannelError) Unwrap() error { return ErrNearChannel }

// ErrNotYours is matched by every *DirectError: an agent reading another
// agent's direct channel.
var ErrNotYours = errors.New("another agent's direct channel")

// DirectError is a read of the direct channel "@B" (its messages or its
// notes) by an agent CanRead denies: not B, nor an ancestor of B. Nothing
// is read and no bookmark moves.
type DirectError struct {
	Op      string // "recv", "notes"
	Path    string // the channel's document
	Channel string // "@bob"
	Reader  string // who asked: "alice"
}

func (e *DirectError) Error() string {
	return fmt.Sprintf("%s %s: %s is %s's direct channel, not %s's", e.Op, e.Channel, e.Channel, e.Channel[1:], e.Reader)
}

func (e *DirectError) Unwrap() error { return ErrNotYours }
