package docstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// The trash: Delete moves a document to .trash/<stamp>-<path with "/" as
// "__">, and consumed tuples are archived there the same way (the git
// sync, a document another machine removed, as <stamp>-sync-<path>).
// Nothing in it is a document any more; Trash lists it and RestoreTrash
// moves an entry back.

// trashStamp is the layout of the time prefix of a trash entry.
const trashStamp = "20060102T150405.000000000"

// TrashSyncTag follows the stamp of an entry the git sync moved there
// (<stamp>-sync-<path>: a document another machine removed); the path
// after it is read as any other entry's, so such an entry is listed and
// restored as a local rm's is.
const TrashSyncTag = "sync-"

// TrashEntry is one file in .trash/.
type TrashEntry struct {
	Name    string           `json:"name"`    // the file name in .trash/
	Path    string           `json:"path"`    // the document path it had ("" if it cannot be told)
	Deleted schema.Timestamp `json:"deleted"` // when it was moved there
	Size    int64            `json:"size"`
}

// EngineFile reports whether rel is a file the engine owns rather than a
// document one may delete: tavern.md, the journal (events/), and every
// engine-private dot name (.tmp/, .locks/, .trash/, .index, .gitignore).
func EngineFile(rel string) bool {
	rel = filepath.ToSlash(filepath.Clean(rel))
	if rel == ConfigFile || strings.HasPrefix(rel, "events/") {
		return true
	}
	for _, part := range strings.Split(rel, "/") {
		if Private(part) {
			return true
		}
	}
	return false
}

// Trash lists .trash/, newest first.
func (s *Store) Trash() ([]TrashEntry, error) {
	ents, err := os.ReadDir(filepath.Join(s.root, trashDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []TrashEntry
	for _, e := range ents {
		if e.IsDir() || Private(e.Name()) {
			continue
		}
		te := TrashEntry{Name: e.Name()}
		if stamp, enc, ok := strings.Cut(e.Name(), "-"); ok {
			te.Deleted.Time, _ = time.Parse(trashStamp, stamp)
			var err error
			if te.Path, err = trashPath(enc); err != nil {
				if rest, ok := strings.CutPrefix(enc, TrashSyncTag); ok {
					te.Path, _ = trashPath(rest)
				}
			}
		}
		if fi, err := e.Info(); err == nil {
			te.Size = fi.Size()
		}
		out = append(out, te)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	return out, nil
}

// trashPath decodes a trash entry's encoded path: "__" stands for "/",
// but names may hold "__" themselves, so the one decoding that is a
// document path of a known kind is taken. Several is ErrAmbiguous.
func trashPath(enc string) (string, error) {
	parts := strings.Split(enc, "__")
	var found []string
	// Each of the len(parts)-1 separators is "/" or a literal "__".
	n := len(parts) - 1
	if n > 12 {
		return "", fmt.Errorf("%w: %s", ErrAmbiguous, enc)
	}
	for mask := 0; mask < 1<<n; mask++ {
		var b strings.Builder
		b.WriteString(parts[0])
		for i := 1; i < len(parts); i++ {
			if mask&(1<<(i-1)) != 0 {
				b.WriteString("__")
			} else {
				b.WriteString("/")
			}
			b.WriteString(parts[i])
		}
		if k, _, err := schema.KindOfPath(b.String()); err == nil && k != nil {
			found = append(found, b.String())
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: %s is no document path", ErrNotExist, enc)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %s", ErrAmbiguous, strings.Join(found, ", "))
}

// RestoreTrash moves a trash entry back to the path it had and returns
// that path. ref is the entry's name in .trash/ or the document path
// (then the newest entry of that path). A document that exists again at
// that path is not overwritten (ErrExist). The move is journaled as a
// creation.
func (s *Store) RestoreTrash(ref string) (string, error) {
	rel, release, _, err := s.restoreLocked(ref, nil)
	if err != nil {
		return "", err
	}
	release()
	return rel, nil
}

// restoreLocked is RestoreTrash by a caller that holds the lockers' locks
// keys. It takes the rest of the restored path's (an item's lock, a
// channel's: a restore is a write of the document, as Update), and
// returns with them held (release; all are keys and those), for
// RestoreTrashAll to bring back what the document owns under them too;
// on an error it has released them.
func (s *Store) restoreLocked(ref string, keys []string) (rel string, release func(), all []string, err error) {
	entries, err := s.Trash()
	if err != nil {
		return "", nil, nil, err
	}
	e, err := findTrash(ref, entries)
	if err != nil {
		return "", nil, nil, err
	}
	for try := 0; ; try++ {
		// The lockers see the trashed copy: the document is at no path
		// yet (a gate names its item only in the file).
		release, all, err = s.moreWriterLocks(e.Path, s.trashedDoc(e), keys)
		if err != nil {
			return "", nil, nil, err
		}
		// Listed again under the locks: another restore may have taken
		// the entry meanwhile, and another entry of its path be the one
		// ref names now (its lockers may differ: a gate of another item).
		if entries, err = s.Trash(); err == nil {
			var now *TrashEntry
			if now, err = findTrash(ref, entries); err == nil && now.Name != e.Name && try < 3 {
				release()
				e = now
				continue
			}
			rel, err = s.restoreTrash(ref, entries)
		}
		if err != nil {
			release()
			return "", nil, nil, err
		}
		return rel, release, all, nil
	}
}

// trashedDoc is trash entry e parsed as the document at its path, or nil
// if it does not parse (it names nothing then, as at its path).
func (s *Store) trashedDoc(e *TrashEntry) *Doc {
	data, err := os.ReadFile(filepath.Join(s.root, trashDir, e.Name))
	if err != nil {
		return nil
	}
	d, err := Parse(e.Path, data)
	if err != nil {
		return nil
	}
	s.classify(d)
	return d
}

// RestoreTrashAll is RestoreTrash that also brings back what the restored
// document owns (AddOwner: an item's gates, a channel's messages) and is
// missing, each from its newest trash entry removed no earlier than the
// document: what DeleteAll removed with it. It returns the
// paths it restored, the document's first; on an error, those restored
// before it.
func (s *Store) RestoreTrashAll(ref string) ([]string, error) {
	return s.restoreTrashAll(ref, nil)
}

// restoreTrashAll is RestoreTrashAll by a caller that holds the lockers'
// locks keys.
func (s *Store) restoreTrashAll(ref string, keys []string) ([]string, error) {
	entries, err := s.Trash()
	if err != nil {
		return nil, err
	}
	var since time.Time
	if e, err := findTrash(ref, entries); err == nil {
		since = e.Deleted.Time
	}
	// The lockers' locks are held until what rel owns is back too: a
	// claim in between would take an item whose claim gate is still in
	// the trash.
	rel, release, keys, err := s.restoreLocked(ref, keys)
	if err != nil {
		return nil, err
	}
	defer release()
	entries, err = s.Trash()
	if err != nil {
		return []string{rel}, err
	}
	restored := []string{rel}
	d, err := s.Get(rel)
	if err != nil {
		return restored, nil // a file that does not parse owns nothing
	}
	for _, p := range s.owned(d) {
		if _, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(p))); err == nil {
			continue // there (never removed, or restored by hand)
		}
		// Removed with it, so after it: an entry older than the owner's
		// went with an earlier copy of it (a channel removed, made
		// again and removed again), which stays in the trash.
		if !slices.ContainsFunc(entries, func(e TrashEntry) bool { return e.Path == p && !e.Deleted.Before(since) }) {
			continue // not in the trash: nothing to bring back
		}
		got, err := s.restoreTrashAll(p, keys)
		restored = append(restored, got...)
		if err != nil {
			return restored, err
		}
	}
	return restored, nil
}

// CheckRestore says whether a RestoreTrash of ref would be refused (no
// such entry, or a document at its path again) without restoring
// anything: a command that restores several asks for each first, so one
// refused leaves every file as it was.
func (s *Store) CheckRestore(ref string) error {
	entries, err := s.Trash()
	if err != nil {
		return err
	}
	e, err := findTrash(ref, entries)
	if err != nil {
		return err
	}
	full, err := s.abs(e.Path)
	if err != nil {
		return pathErr("restore", e.Path, err)
	}
	if _, err := os.Lstat(full); err == nil {
		return pathErr("restore", e.Path, errThereAgain)
	}
	return nil
}

var errThereAgain = fmt.Errorf("%w: a document is there again (rm it first to restore this one)", ErrExist)

// findTrash is the entry ref names (its name, its path, or its path
// without .md), the first of entries (newest first) that does.
func findTrash(ref string, entries []TrashEntry) (*TrashEntry, error) {
	var e *TrashEntry
	for i := range entries {
		if entries[i].Name == ref || entries[i].Path == ref || entries[i].Path == ref+".md" {
			e = &entries[i]
			break
		}
	}
	if e == nil {
		return nil, pathErr("restore", ref, fmt.Errorf("%w in .trash/%s", ErrNotExist, trashHint(ref, entries)))
	}
	if e.Path == "" {
		return nil, pathErr("restore", e.Name, fmt.Errorf("%w: cannot tell the path it had", ErrNotExist))
	}
	return e, nil
}

func (s *Store) restoreTrash(ref string, entries []TrashEntry) (string, error) {
	e, err := findTrash(ref, entries)
	if err != nil {
		return "", err
	}
	rel := e.Path
	l, err := s.Lock(DocLockKey(rel))
	if err != nil {
		return "", err
	}
	defer l.Unlock()
	full, err := s.abs(rel)
	if err != nil {
		return "", pathErr("restore", rel, err)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", err
	}
	from := filepath.Join(s.root, trashDir, e.Name)
	// link+unlink, not rename: rename would replace a document that
	// appeared at rel in the meantime.
	if err := os.Link(from, full); err != nil {
		err = unwrapLink(err)
		if errors.Is(err, ErrExist) {
			err = errThereAgain
		}
		return "", pathErr("restore", rel, err)
	}
	if err := os.Remove(from); err != nil {
		return "", err
	}
	if err := s.syncDir(filepath.Dir(full)); err != nil {
		return "", err
	}
	if err := s.syncDir(filepath.Dir(from)); err != nil {
		return "", err
	}
	d, err := s.Get(rel)
	if err == nil {
		s.notify(Mutation{Op: "create", Path: rel, Doc: d})
	}
	return rel, nil
}

// trashHint is " (did you mean P?)" for a ref that names no entry: the
// paths of entries whose document has that name (frothy for
// agents/frothy.md), else the paths near it.
func trashHint(ref string, entries []TrashEntry) string {
	var named, paths []string
	for _, e := range entries {
		if e.Path == "" || slices.Contains(paths, e.Path) {
			continue
		}
		paths = append(paths, e.Path)
		if strings.TrimSuffix(path.Base(e.Path), ".md") == ref {
			named = append(named, e.Path)
		}
	}
	if len(named) == 0 {
		// By reference (agents/bbo) as by path (agents/bbo.md): restore
		// takes either.
		refs := make([]string, len(paths))
		for i, p := range paths {
			refs[i] = strings.TrimSuffix(p, ".md")
		}
		for _, r := range schema.Near(strings.TrimSuffix(ref, ".md"), refs) {
			named = append(named, paths[slices.Index(refs, r)])
		}
	}
	if len(named) == 0 {
		return ""
	}
	return " (did you mean " + schema.NearList(named) + "?)"
}
