package recall

import (
	"errors"
	"fmt"

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
// knowledge files could not be read as documents: see
// docstore.SkippedError.
type SkippedError = docstore.SkippedError

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

// ErrNearDomain is returned (in a *DomainError) for a knowledge entry
// written to a domain that has no entries yet and whose name is near one
// that has: most likely a typo, which would file the entry where nobody
// lists it. KnowledgeOptions.NewDomain (`--new-domain`) writes it anyway.
var ErrNearDomain = errors.New("a new domain near an existing one")

// DomainError is a knowledge domain a write was refused for; nothing was
// written.
type DomainError struct {
	Op     string   // "add knowledge", "create"
	Path   string   // the entry it would have written
	Domain string   // the domain given
	Near   []string // existing domains, nearest first (schema.Near)
	Err    error    // ErrNearDomain
}

func (e *DomainError) Error() string {
	op := e.Op
	if e.Op == "create" {
		op += " " + e.Path
	}
	return fmt.Sprintf("%s: %q is a new domain; did you mean %s?", op, e.Domain, schema.NearList(e.Near))
}

func (e *DomainError) Unwrap() error { return e.Err }
