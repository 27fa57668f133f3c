package docstore

import (
	"errors"
	"slices"

	"github.com/tavernhq/tavern/schema"
)

// Migration is one document Migrate found written by an older schema
// version, or one it could not read.
type Migration struct {
	Path    string
	Before  []byte // the file as read; nil if it could not be read
	After   []byte // the migrated document; nil if it could not be read or migrated
	Written bool   // false in a dry run, and when Err is set
	// Err says why the document is not migrated: it cannot be read
	// (Before is nil), a migration step failed (After is nil), or the
	// migrated document is invalid (matches schema.ErrInvalid; it is left
	// as it is). Migrate goes on with the others.
	Err error
}

// Migrate rewrites every document written by an older schema version in
// the current one: only the lines the migration changes, through UpdateIf
// at the revision read, so a concurrent edit is never overwritten (that,
// and any other failed write but an invalid result, stops Migrate). Documents are read where Walk finds
// them, in the order of schema.Kinds, then by path. With dryRun nothing
// is written. fn is called for each such document, and for each file of
// a known kind that cannot be read; an error from fn stops Migrate.
// Documents are migrated in memory whenever they are read (Doc.View), so
// Migrate only makes the files match.
func (s *Store) Migrate(dryRun bool, fn func(Migration) error) error {
	return s.MigrateWith(MigrateOptions{DryRun: dryRun}, fn)
}

// MigrateOptions configure MigrateWith.
type MigrateOptions struct {
	DryRun bool // compute the migrations, write nothing
	// Progress, if set, is called after each document looked at with the
	// count so far and the total (for a progress display).
	Progress func(done, total int)
}

// MigrateWith is Migrate with options.
func (s *Store) MigrateWith(opt MigrateOptions, fn func(Migration) error) error {
	dryRun := opt.DryRun
	var paths []string
	if err := s.Walk("", func(rel string) error {
		if k, _, err := schema.KindOfPath(rel); err == nil && k != nil {
			paths = append(paths, rel)
		}
		return nil
	}); err != nil {
		return err
	}
	order := func(rel string) int {
		k, _, _ := schema.KindOfPath(rel)
		return slices.Index(schema.Kinds(), k)
	}
	slices.SortStableFunc(paths, func(a, b string) int { return order(a) - order(b) })
	for i, rel := range paths {
		m, ok, err := s.migrateOne(rel, dryRun)
		if opt.Progress != nil {
			opt.Progress(i+1, len(paths))
		}
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// migrateOne migrates one document; ok is false when it is current.
func (s *Store) migrateOne(rel string, dryRun bool) (m Migration, ok bool, err error) {
	m.Path = rel
	d, err := s.Get(rel)
	if err != nil {
		m.Err = err
		return m, true, nil
	}
	k := d.Kind
	if k == nil {
		return m, false, nil
	}
	if from, _ := schema.DocVersion(d); from >= k.Version {
		return m, false, nil
	}
	m.Before = d.Bytes()
	c := d.Clone()
	if _, err := k.Migrate(c); err != nil {
		m.Err = err
		return m, true, nil
	}
	m.After = c.Bytes()
	if dryRun {
		// What the real run would refuse, the dry run says: an invalid
		// result is left as it is there (UpdateIf validates).
		if errs := c.Validate(false); len(errs) > 0 {
			m.Err = &ValidationError{Path: rel, Errors: errs}
		}
		return m, true, nil
	}
	if _, err := s.UpdateIf(rel, d.Rev, func(cur *Doc) error {
		_, err := k.Migrate(cur)
		return err
	}); err != nil {
		if !errors.Is(err, schema.ErrInvalid) {
			return m, false, err
		}
		m.Err = err
		return m, true, nil
	}
	m.Written = true
	return m, true, nil
}
