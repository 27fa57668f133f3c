package gitsync

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
)

// Paths that never travel: engine-private dot names (.tmp/, .locks/,
// .trash/, .index, .sync/, .machine, tuple staging .taken/), editor
// swap and backup files (watcher.Ignored), and anything that is not a
// regular file.
func private(rel string) bool { return watcher.Ignored(rel) }

// Own journal files, events/<day>.jsonl, are committed as
// events/<machine>/<day>.jsonl: one writer per file in the shared tree,
// so journals never conflict, and every machine's journal reaches every
// clone under events/<that machine>/ (greppable; `tavern log` reads this
// machine's own).
func ownJournal(rel string) bool {
	return strings.HasPrefix(rel, docstore.JournalDir+"/") && strings.Count(rel, "/") == 1 && strings.HasSuffix(rel, ".jsonl")
}

// treePath maps a worktree path to its path in the shared tree.
func (sy *Syncer) treePath(rel string) string {
	if ownJournal(rel) {
		return docstore.JournalDir + "/" + sy.machine + "/" + strings.TrimPrefix(rel, docstore.JournalDir+"/")
	}
	return rel
}

// workPath maps a shared-tree path back ("" for this machine's own
// journal, which only this machine writes).
func (sy *Syncer) workPath(p string) string {
	if strings.HasPrefix(p, docstore.JournalDir+"/"+sy.machine+"/") {
		return ""
	}
	return p
}

// statKey is what says a file has not changed since it was hashed.
type statKey struct {
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"`
	Ctime int64  `json:"c"`
	Ino   uint64 `json:"i"`
	Mode  string `json:"x"`
	OID   string `json:"o"`
	Seen  int64  `json:"t"` // when it was hashed (racy-git rule)
}

func statOf(fi fs.FileInfo) statKey {
	k := statKey{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: "100644"}
	if fi.Mode()&0o111 != 0 {
		k.Mode = "100755"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.Ino = st.Ino
		k.Ctime = st.Ctim.Nano()
	}
	return k
}

func (k statKey) same(o statKey) bool {
	return k.Size == o.Size && k.Mtime == o.Mtime && k.Ctime == o.Ctime && k.Ino == o.Ino && k.Mode == o.Mode
}

// snapshot is the worktree as a flat tree: shared-tree path -> entry,
// plus the worktree bytes' ids by worktree path (for the apply check).
type snapshot struct {
	files map[string]entry // by tree path
	bad   []error          // symlinks and other files that cannot travel
}

// snapshotWork hashes the worktree (only files whose stat changed since
// they were last hashed are read; the cache is .sync/stat.json).
func (sy *Syncer) snapshotWork() (*snapshot, error) {
	cache := map[string]statKey{}
	if b, err := os.ReadFile(sy.statFile); err == nil {
		_ = json.Unmarshal(b, &cache)
	}
	now := time.Now()
	snap := &snapshot{files: map[string]entry{}}
	fresh := map[string]statKey{}
	var toHash []string // worktree paths
	var journals []string
	root := sy.s.Root()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if private(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			snap.bad = append(snap.bad, &SyncError{Op: "snapshot", Path: rel, Err: errors.New("not a regular file: not synced")})
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ownJournal(rel) {
			journals = append(journals, rel)
			return nil
		}
		k := statOf(fi)
		if c, ok := cache[rel]; ok && c.same(k) && c.OID != "" && time.Duration(c.Seen-k.Mtime) > 2*time.Second {
			fresh[rel] = c
			snap.files[sy.treePath(rel)] = entry{mode: c.Mode, oid: c.OID}
			return nil
		}
		k.Seen = now.UnixNano()
		fresh[rel] = k
		toHash = append(toHash, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	abs := make([]string, len(toHash))
	for i, rel := range toHash {
		abs[i] = filepath.Join(root, filepath.FromSlash(rel))
	}
	ids, err := sy.repo.hashFiles(abs)
	if err != nil {
		// A file removed between the walk and the hash: walk again.
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "No such file") {
			return sy.snapshotWork()
		}
		return nil, err
	}
	for i, rel := range toHash {
		k := fresh[rel]
		k.OID = ids[i]
		fresh[rel] = k
		snap.files[sy.treePath(rel)] = entry{mode: k.Mode, oid: ids[i]}
	}
	jfiles, err := sy.journalEntries(journals)
	if err != nil {
		return nil, err
	}
	for p, e := range jfiles {
		snap.files[p] = e
	}
	if b, err := json.Marshal(fresh); err == nil {
		tmp := sy.statFile + ".tmp"
		if os.WriteFile(tmp, b, 0o644) == nil {
			os.Rename(tmp, sy.statFile)
		}
	}
	return snap, nil
}

// journalEntries writes this machine's journal days (worktree paths
// events/<day>.jsonl) as blobs, up to their last complete line (an append
// may be in progress), and returns them by tree path.
func (sy *Syncer) journalEntries(journals []string) (map[string]entry, error) {
	var jblobs [][]byte
	var read []string
	for _, rel := range journals {
		b, err := os.ReadFile(filepath.Join(sy.s.Root(), filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
		jblobs = append(jblobs, b)
		read = append(read, rel)
	}
	jids, err := sy.repo.writeBlobs(jblobs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entry, len(read))
	for i, rel := range read {
		out[sy.treePath(rel)] = entry{mode: "100644", oid: jids[i]}
	}
	return out, nil
}

// withJournal returns a commit on top of c whose tree has this machine's
// journal days as they are now, or c if it has them already. A round
// whose merge dropped values journals them (sync.conflict) after its
// snapshot: pushed as they were in c, they would reach other machines a
// round late, only with this machine's next round.
func (sy *Syncer) withJournal(c string) (string, error) {
	ents, err := os.ReadDir(filepath.Join(sy.s.Root(), docstore.JournalDir))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil // nothing journaled here
	}
	if err != nil {
		return "", err
	}
	var journals []string
	for _, e := range ents {
		if rel := docstore.JournalDir + "/" + e.Name(); e.Type().IsRegular() && ownJournal(rel) {
			journals = append(journals, rel)
		}
	}
	jfiles, err := sy.journalEntries(journals)
	if err != nil {
		return "", err
	}
	files, err := sy.repo.readTree(c)
	if err != nil {
		return "", err
	}
	changed := false
	for p, e := range jfiles {
		if files[p] != e {
			files[p], changed = e, true
		}
	}
	if !changed {
		return c, nil
	}
	t, err := sy.repo.writeTree(files)
	if err != nil {
		return "", err
	}
	return sy.repo.commitTree(t, "tavern sync: "+sy.machine+" journal\n", c)
}
