package docstore

// The validate-and-re-edit loop of `tavern edit`, shared by every face that
// lets a person rewrite a whole document (the terminal UI, the browser):
// the new text is checked as the document it would become, nothing is
// written until it is valid, and it is written only over the revision the
// person started from.

// CheckEdit reports why data, offered as the new full content of orig,
// would not be a valid document: a *ParseError (path:line:col) or a
// *ValidationError. nil means SaveEdit would accept it.
func CheckEdit(orig *Doc, data []byte) error {
	d := orig.Clone()
	if err := d.Replace(data); err != nil {
		return err
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return &ValidationError{Path: d.Path, Errors: errs}
	}
	return nil
}

// SaveEdit replaces the document at rel with data if data is valid
// (CheckEdit) and the document is still at baseRev; otherwise it writes
// nothing and returns the validation error, or ErrConflict when someone
// else changed the document meanwhile (the caller keeps the person's text).
func (s *Store) SaveEdit(rel, baseRev string, data []byte) (*Doc, error) {
	return s.UpdateIf(rel, baseRev, func(d *Doc) error {
		if err := CheckEdit(d, data); err != nil {
			return err
		}
		return d.Replace(data)
	})
}
