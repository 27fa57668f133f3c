package plans

import "fmt"

// ImportedError refuses to import a file that a plan of the store was
// imported from already: a second plan would make a second item for each
// of its boxes. It matches ErrExists (exit 4, as a plan that exists).
type ImportedError struct {
	Op     string // "plan import"
	Path   string // the plan that was not made: plans/NAME.md
	Source string // the file, as given
	Plan   string // the plan imported from it
}

func (e *ImportedError) Error() string {
	return fmt.Sprintf("%s %s: %s is already imported as plan %s (%s): a plan file is imported once (to follow changes to it, edit that plan and run `tavern plan sync %s`)",
		e.Op, e.Path, e.Source, e.Plan, Path(e.Plan), e.Plan)
}

func (e *ImportedError) Unwrap() error { return ErrExists }
