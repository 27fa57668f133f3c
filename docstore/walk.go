package docstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// JournalDir is the directory of the event journal (package
// watcher/journal): JSON lines, never documents.
const JournalDir = "events"

// Private reports whether a file or directory name inside the store is
// engine-private or hidden (.tmp/, .locks/, .trash/, .index, an editor's
// .x.swp): a dot name, never a document and never part of a backup.
func Private(name string) bool { return strings.HasPrefix(name, ".") }

// Walk calls fn with the store-relative path of every document file under
// dir (a store-relative directory; "" is the whole store), in lexical
// order. This is the one rule for "which files are documents": every .md
// file outside private directories (see Private) and the event journal,
// but the plain files of the store root (schema.PlainFiles: PRIME.md).
//
// Paths that are not documents but cannot be left out silently are passed
// too, so that reading them (Get) reports the problem: a symlink that
// leaves the store or dangles (WalkDir does not follow symlinks, and a
// link to a directory outside would otherwise hide what it points at),
// a directory named like a document (x.md/, not walked into), and a
// directory that cannot be read. A missing dir is an empty walk.
// An error from fn stops the walk and is returned.
func (s *Store) Walk(dir string, fn func(rel string) error) error {
	start := s.root
	if dir != "" && dir != "." {
		full, err := s.abs(strings.TrimSuffix(dir, "/"))
		if err != nil {
			return pathErr("walk", dir, err)
		}
		start = full
	}
	var paths []string
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				if errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipAll
				}
				return err
			}
			paths = append(paths, p) // Get reports it
			return nil
		}
		name := e.Name()
		if p != start && Private(name) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.Type()&fs.ModeSymlink != 0 {
			if real, err := filepath.EvalSymlinks(p); err != nil || !insideDir(s.root, real) {
				paths = append(paths, p)
				return nil
			}
		}
		if e.IsDir() {
			if p != start && filepath.Dir(p) == s.root && name == JournalDir {
				return filepath.SkipDir
			}
			if p != start && strings.HasSuffix(name, ".md") {
				// A directory named like a document: Get reports it (what
				// is inside is in no document's place).
				paths = append(paths, p)
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") && !(filepath.Dir(p) == s.root && schema.PlainFile(name)) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rels := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	sort.Strings(rels)
	for _, rel := range rels {
		if err := fn(rel); err != nil {
			return err
		}
	}
	return nil
}

func insideDir(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// isDir reports whether rel is a directory inside the store.
func (s *Store) isDir(rel string) bool {
	full, err := s.abs(rel)
	if err != nil {
		return false
	}
	fi, err := os.Stat(full)
	return err == nil && fi.IsDir()
}
