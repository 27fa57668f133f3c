package docstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// MatchPrefix picks the name ref means among names: the one equal to it,
// else the only one it is a prefix of (ids are long; people paste
// prefixes). No match is ErrNotExist and several are ErrAmbiguous, both
// in a *fs.PathError naming what (e.g. "item") and ref.
func MatchPrefix(what, ref string, names []string) (string, error) {
	var hits []string
	for _, n := range names {
		if n == ref {
			return n, nil
		}
		if ref != "" && strings.HasPrefix(n, ref) {
			hits = append(hits, n)
		}
	}
	switch len(hits) {
	case 0:
		return "", pathErr("find "+what, ref, ErrNotExist)
	case 1:
		return hits[0], nil
	}
	sort.Strings(hits)
	if len(hits) > 5 {
		hits = append(hits[:5], fmt.Sprintf("and %d more", len(hits)-5))
	}
	return "", pathErr("find "+what, ref, fmt.Errorf("%w: %s", ErrAmbiguous, strings.Join(hits, ", ")))
}

// Stat is os.Stat of rel, a document or directory inside the store.
func (s *Store) Stat(rel string) (fs.FileInfo, error) {
	abs, err := s.abs(rel)
	if err != nil {
		return nil, pathErr("stat", rel, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, pathErr("stat", rel, unwrapPath(err))
	}
	return fi, nil
}

// Names lists the entries of directory rel, sorted, without the
// engine-private and hidden ones (a leading dot). A missing directory is
// an empty list.
func (s *Store) Names(rel string) ([]string, error) {
	abs, err := s.abs(rel)
	if err != nil {
		return nil, pathErr("list", rel, err)
	}
	ents, err := os.ReadDir(abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, pathErr("list", rel, unwrapPath(err))
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
