package docstore

import "github.com/tavernhq/tavern/schema"

// CreateEntry writes a new append-only record (a memory, a note, a
// knowledge entry): a fresh time-ordered id under dir ("alice" for
// memory/alice/<id>.md), schema_version and id first, then fields, then
// created/updated, and text as the body.
func (s *Store) CreateEntry(k *schema.Kind, dir string, fields []Field, text string) (*Doc, error) {
	return s.CreateEntryWith(k, dir, fields, text, CreateOptions{})
}

// CreateEntryWith is CreateEntry with options.
func (s *Store) CreateEntryWith(k *schema.Kind, dir string, fields []Field, text string, opt CreateOptions) (*Doc, error) {
	id := NewID()
	rel, err := k.Path(dir+"/"+id, nil)
	if err != nil {
		return nil, err
	}
	d, err := NewDoc(k, Template{ID: id, Fields: fields, Body: []byte("\n" + text + "\n")})
	if err != nil {
		return nil, err
	}
	if err := s.CreateWith(rel, d, opt); err != nil {
		return nil, err
	}
	return d, nil
}
