package docstore

import (
	"bytes"
	"time"
)

// The validate-and-re-edit loop of `tavern edit`, shared by every face that
// lets a person rewrite a whole document (the terminal UI, the browser):
// the new text is checked as the document it would become, nothing is
// written until it is valid, and it is written only over the revision the
// person started from. A document that does not parse at all can be
// repaired this way too: it is compared by the revision of its bytes.

// CheckEdit reports why data, offered as the new full content of the
// document at rel, would not be a valid document: a *ParseError
// (path:line:col) or a *ValidationError. nil means SaveEdit would accept
// it (unless the document changed meanwhile).
func CheckEdit(rel string, data []byte) error {
	_, err := parseEdit(rel, data)
	return err
}

func parseEdit(rel string, data []byte) (*Doc, error) {
	d, err := Parse(rel, data)
	if err != nil {
		return nil, err
	}
	classify(d)
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &ValidationError{Path: rel, Errors: errs}
	}
	return d, nil
}

// SaveEdit replaces the document at rel with data if data is valid
// (CheckEdit) and the file is still at baseRev (the Revision of the bytes
// the person started from; "" accepts any). Otherwise it writes nothing
// and returns the validation error, or a *ConflictError (ErrConflict) when
// someone else changed the document meanwhile: the caller keeps the
// person's text so nothing typed is lost.
func (s *Store) SaveEdit(rel, baseRev string, data []byte) (*Doc, error) {
	// As Update (see UpdateWith): the lockers' locks of the document as
	// it is and as edited (a gate given another item: that item's too).
	var want []string
	if d, err := parseEdit(rel, data); err == nil {
		want = lockerKeys(s.lockers, rel, d)
	}
	return s.relock(rel, want, func(h *heldLocks) (*Doc, error) { return s.saveEdit(rel, baseRev, data, h) })
}

func (s *Store) saveEdit(rel, baseRev string, data []byte, h *heldLocks) (*Doc, error) {
	l, err := s.lockExistingDoc("read", rel)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	cur, err := s.ReadFile(rel)
	if err != nil {
		return nil, err
	}
	if baseRev != "" && Revision(cur) != baseRev {
		return nil, &ConflictError{Path: rel, Want: baseRev, Got: Revision(cur)}
	}
	d, err := parseEdit(rel, data)
	if err != nil {
		return nil, err
	}
	d.Rev = Revision(data)
	if bytes.Equal(cur, data) {
		return d, nil
	}
	prev, perr := Parse(rel, cur)
	if perr != nil {
		prev = nil // it did not parse: there are no previous fields
	} else {
		classify(prev)
	}
	// The store's amends and rules (the agent state machine, the
	// commitment rules) see the edit as any other update. An amend may
	// add to the text (applied_state following an edited state): only the
	// lines it changes differ from what the person typed.
	var derived []any
	if prev != nil {
		typed := d.Bytes()
		if len(s.amends) > 0 {
			if derived, err = s.amend(Write{Op: "update", Path: rel, Prev: prev, Doc: d}); err != nil {
				return nil, err
			}
		}
		// `updated` follows the edit, unless the person changed it.
		if err := stampUpdated(prev, d, time.Now()); err != nil {
			return nil, err
		}
		if !d.EqualBytes(typed) {
			data = d.Bytes()
			d.Rev = Revision(data)
		}
	}
	need := append(lockerKeys(s.lockers, rel, prev), lockerKeys(s.lockers, rel, d)...)
	if err := s.lockMore(h, need); err != nil {
		return nil, err
	}
	if err := s.checkRules(Write{Op: "update", Path: rel, Prev: prev, Doc: d}); err != nil {
		return nil, err
	}
	if err := s.WriteFile(rel, data); err != nil {
		return nil, err
	}
	s.notify(Mutation{Op: "update", Path: rel, Doc: d, Prev: prev, Derived: derived})
	return d, nil
}
