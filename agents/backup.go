package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Backup and restore.
//
// A backup is a plain copy of .tavern/ without the engine-private
// directories (.tmp, .locks, .trash, .index and anything else starting with
// a dot at the top). It is consistent file by file: every document is
// replaced atomically by rename, so opening and reading it yields a whole
// old or whole new version, never a torn one. Message chunks are copied
// under their channel's lock, so each channel is a consistent snapshot and
// every message acknowledged before the backup started is in it (chunks are
// append-only: any later version of a chunk still holds it). Journal files
// are append-only JSON lines; the copy stops at the last complete line.
//
// The copy is written under DEST/<name>.partial, fsynced, and renamed to
// its final name only when complete, so a backup directory without the
// suffix is always whole.

// BackupResult describes a finished backup.
type BackupResult struct {
	Dir   string `json:"dir"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// BackupName is the directory name of a backup taken at t.
func BackupName(t time.Time) string { return "tavern-" + t.UTC().Format("20060102T150405.000Z") }

// Backup copies the store into a new directory BackupName(now) under dest
// (created if needed) and returns it.
func Backup(s *docstore.Store, dest string, now time.Time) (*BackupResult, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(absDest, BackupName(now))
	if rel, err := filepath.Rel(s.Root(), final); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, &fs.PathError{Op: "backup", Path: dest, Err: errors.New("destination is inside the store")}
	}
	tmp := final + ".partial"
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	res := &BackupResult{Dir: final}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	root := s.Root()
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case docstore.Private(name):
			continue
		case name == "messages" && e.IsDir():
			if err := backupMessages(s, filepath.Join(root, name), filepath.Join(tmp, name), res); err != nil {
				return nil, err
			}
		default:
			if err := copyTree(filepath.Join(root, name), filepath.Join(tmp, name), res); err != nil {
				return nil, err
			}
		}
	}
	if err := docstore.SyncDir(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	if err := docstore.SyncDir(absDest); err != nil {
		return nil, err
	}
	ok = true
	return res, nil
}

// backupMessages copies each channel's chunks while holding its lock.
func backupMessages(s *docstore.Store, src, dst string, res *BackupResult) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() || messages.ValidChannel(e.Name()) != nil {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), res); err != nil {
				return err
			}
			continue
		}
		l, err := s.Lock(schema.ChannelLockKey(e.Name()))
		if err != nil {
			return err
		}
		err = copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), res)
		l.Unlock()
		if err != nil {
			return err
		}
	}
	return docstore.SyncDir(dst)
}

// copyTree copies src (file or directory) to dst, skipping dot entries,
// symlinks and special files.
func copyTree(src, dst string, res *BackupResult) error {
	fi, err := os.Lstat(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we copied
		}
		return err
	}
	switch {
	case fi.IsDir():
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if docstore.Private(e.Name()) {
				continue
			}
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), res); err != nil {
				return err
			}
		}
		return docstore.SyncDir(dst)
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(src)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a queue item moved on: its new path is copied or was
			}
			return err
		}
		if strings.HasSuffix(src, ".jsonl") {
			// An append-only journal: drop a line still being written.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		if err := writeSynced(dst, data, fi.Mode().Perm()); err != nil {
			return err
		}
		res.Files++
		res.Bytes += int64(len(data))
	}
	return nil
}

func writeSynced(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RestoreResult describes a finished restore.
type RestoreResult struct {
	Dir   string `json:"dir"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Previous is where the store that was replaced now lives ("" if
	// there was none). Restore never deletes data.
	Previous string `json:"previous,omitempty"`
}

// Restore replaces the store directory target (a .tavern directory, which
// need not exist) with the backup src. It refuses with ErrNotEmpty when
// target holds documents besides tavern.md, unless force is set. The new
// store is assembled next to target and renamed into place; a replaced
// store is kept beside it as <target>.before-restore-<time>.
func Restore(src, target string, force bool, now time.Time) (*RestoreResult, error) {
	if _, err := os.Stat(filepath.Join(src, docstore.ConfigFile)); err != nil {
		if _, err2 := os.Stat(filepath.Join(src, docstore.DirName, docstore.ConfigFile)); err2 == nil {
			src = filepath.Join(src, docstore.DirName)
		} else {
			return nil, &fs.PathError{Op: "restore", Path: src, Err: fmt.Errorf("%w: not a backup (no %s)", docstore.ErrNoStore, docstore.ConfigFile)}
		}
	}
	target, err := filepath.Abs(target)
	if err != nil {
		return nil, err
	}
	exists := false
	if _, err := os.Stat(target); err == nil {
		exists = true
		docs, err := storeHasDocs(target)
		if err != nil {
			return nil, err
		}
		if docs && !force {
			return nil, &fs.PathError{Op: "restore", Path: target, Err: ErrNotEmpty}
		}
	}
	stamp := now.UTC().Format("20060102T150405.000Z")
	tmp := target + ".restore-" + stamp
	res := &RestoreResult{Dir: target}
	var bres BackupResult
	if err := copyTree(src, tmp, &bres); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	res.Files, res.Bytes = bres.Files, bres.Bytes
	if exists {
		res.Previous = target + ".before-restore-" + stamp
		if err := os.Rename(target, res.Previous); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		return nil, err
	}
	if err := docstore.SyncDir(filepath.Dir(target)); err != nil {
		return nil, err
	}
	return res, nil
}

// storeHasDocs reports whether dir holds any file besides tavern.md
// outside the engine-private directories.
func storeHasDocs(dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && docstore.Private(e.Name()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.IsDir() && p != filepath.Join(dir, docstore.ConfigFile) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}
