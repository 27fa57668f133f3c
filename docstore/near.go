package docstore

import (
	"errors"
	"os"
	"path"
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
