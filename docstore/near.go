package docstore

import (
	"errors"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// NotFound turns err, the failure of op on the document at rel, into a
// *NotFoundError naming the documents in rel's directory whose names are
// near rel's (schema.Near), when err is that the document does not
// exist; other errors are returned as they are. It reads the directory,
// so it is for a command's error path, not for loops that probe.
func (s *Store) NotFound(op, rel string, err error) error {
	if err == nil || !errors.Is(err, ErrNotExist) {
		return err
	}
	dir, base := path.Split(rel)
	full, aerr := s.abs(strings.TrimSuffix(dir, "/"))
	if dir == "" || aerr != nil {
		return &NotFoundError{Op: op, Path: rel, Err: err}
	}
	entries, _ := os.ReadDir(full)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".md"); ok && !e.IsDir() && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	var near []string
	for _, n := range schema.Near(strings.TrimSuffix(base, ".md"), names) {
		near = append(near, dir+n)
	}
	return &NotFoundError{Op: op, Path: rel, Near: near, Err: err}
}

// NearPath returns, for a store-relative path rel (a document, with or
// without .md, or a directory, "/"-ended or not) that does not exist, the
// existing paths a typo in it most likely meant: its first component
// that does not exist replaced by each name near it in its directory
// (schema.Near over the directories and documents there), the rest kept
// (agnets/bob.md: agents/bob.md). nil when rel exists, when no name is
// near, or when rel is no path inside the store.
func (s *Store) NearPath(rel string) []string {
	trail := ""
	if strings.HasSuffix(rel, "/") {
		trail = "/"
	}
	parts := strings.Split(strings.TrimRight(rel, "/"), "/")
	dir := ""
	for i, part := range parts {
		full, err := s.abs(path.Join(dir, part))
		if err != nil {
			return nil
		}
		last := i == len(parts)-1
		if _, err := os.Lstat(full); err == nil {
			dir = path.Join(dir, part)
			continue
		}
		if _, err := os.Lstat(full + ".md"); err == nil && last && trail == "" {
			return nil // a reference: agents/bob
		}
		parent := s.root
		if dir != "" {
			if parent, err = s.abs(dir); err != nil {
				return nil
			}
		}
		entries, _ := os.ReadDir(parent)
		// A name with .md is a document's: only documents are near it.
		doc := last && trail == "" && strings.HasSuffix(part, ".md")
		var names []string
		for _, e := range entries {
			n, md := strings.CutSuffix(e.Name(), ".md")
			switch {
			case strings.HasPrefix(e.Name(), "."):
			case e.IsDir() && !doc:
				names = append(names, e.Name())
			case !e.IsDir() && md:
				names = append(names, n)
			}
		}
		ext := ""
		if doc {
			ext = ".md"
		}
		rest := strings.Join(parts[i+1:], "/")
		var near []string
		for _, n := range schema.Near(strings.TrimSuffix(part, ext), slices.Compact(slices.Sorted(slices.Values(names)))) {
			near = append(near, strings.TrimSuffix(path.Join(dir, n+ext, rest), "/")+trail)
		}
		return near
	}
	return nil
}
