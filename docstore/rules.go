package docstore

import "slices"

// Write is one change about to be made through a Store, as its rules see
// it: nothing has reached the disk yet.
type Write struct {
	Op    string // "create", "update" or "move"
	Path  string // the document's path (for a move: where it goes)
	Prev  *Doc   // the document before the change; nil for a create
	Doc   *Doc   // the document as it will be written
	Force bool   // the writer asked to override what a rule lets be overridden (UpdateOptions.Force)
}

// A Rule checks a write before it is made and refuses it by returning an
// error; the write then fails with a *RefusedError wrapping that error and
// nothing is written. Rules run inside the write's lock, after the schema
// validation, so they see exactly what would be written.
type Rule func(Write) error

type namedRule struct {
	name string
	fn   Rule
}

// AddRule installs a rule that every Create, Update, UpdateIf, UpdateWith
// and Move through this Store obeys (package agents installs the agent
// state machine and the commitment rules this way, so `tavern set` and
// `tavern edit` obey them as the library does). A rule of the same name
// is replaced. Install rules before sharing the Store between goroutines.
// Writes through a Dir and claims (the queue broker's item moves) are not
// ruled: no rule concerns them, and they are the hot path.
func (s *Store) AddRule(name string, fn Rule) {
	i := slices.IndexFunc(s.rules, func(r namedRule) bool { return r.name == name })
	if i >= 0 {
		s.rules[i].fn = fn
		return
	}
	s.rules = append(s.rules, namedRule{name, fn})
}

// HasRule reports whether a rule of that name is installed.
func (s *Store) HasRule(name string) bool {
	return slices.ContainsFunc(s.rules, func(r namedRule) bool { return r.name == name })
}

func (s *Store) checkRules(w Write) error {
	for _, r := range s.rules {
		if err := r.fn(w); err != nil {
			return &RefusedError{Op: w.Op, Path: w.Path, Rule: r.name, Err: err}
		}
	}
	return nil
}

// A Check reports what is wrong with a document beyond its schema (package
// agents: an agent state edited by hand to an illegal value, a commitment
// whose assertion changed). Check (the store check) runs every installed
// Check on every document that parses.
type Check func(*Doc) []error

type namedCheck struct {
	name string
	fn   Check
}

// AddCheck installs a Check under a name (replacing one of the same name).
// Install checks before sharing the Store between goroutines.
func (s *Store) AddCheck(name string, fn Check) {
	i := slices.IndexFunc(s.checks, func(c namedCheck) bool { return c.name == name })
	if i >= 0 {
		s.checks[i].fn = fn
		return
	}
	s.checks = append(s.checks, namedCheck{name, fn})
}
