package recall

import (
	"errors"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// ErrArchived is returned when editing an archived memory or knowledge
// entry.
var ErrArchived = errors.New("archived")

// ErrEmpty is returned when a memory or knowledge text is empty or only
// white space.
var ErrEmpty = errors.New("empty text")

// SkippedError is returned together with a full result when some memory or
// knowledge files could not be read as documents (they do not parse or
// validate, or are not regular files): those were skipped, the result holds
// the rest. Errs has one error per file, each with its path (and line:col
// where known). errors.Is sees through it (docstore.ErrParse...).
type SkippedError struct {
	Errs []error
}

func (e *SkippedError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap gives the errors of the skipped files.
func (e *SkippedError) Unwrap() []error { return e.Errs }

// badFile reports whether err is about one document file that is skipped
// rather than a reason to fail a whole listing.
func badFile(err error) bool {
	return errors.Is(err, docstore.ErrParse) || errors.Is(err, schema.ErrInvalid) || errors.Is(err, docstore.ErrOddFile)
}

// Skipped returns the per-file errors of err when err says only that some
// files were skipped (the result beside it is usable), else nil.
func Skipped(err error) []error {
	var se *SkippedError
	if errors.As(err, &se) {
		return se.Errs
	}
	return nil
}

func skipped(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &SkippedError{Errs: errs}
}
