package docstore

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var tmpSeq atomic.Uint64

// WriteFile is the one durable write path of the engine: a temp file in
// .tavern/.tmp/, write, fsync, rename over rel, fsync of rel's directory.
// A crash at any instant leaves the old or the new version of rel, never a
// torn or empty one. With `durability: relaxed` the fsyncs are skipped:
// still atomic, no longer durable across power loss.
func (s *Store) WriteFile(rel string, data []byte) error {
	return s.publish(rel, data, false)
}

// createFile is WriteFile that fails with ErrExist instead of replacing.
func (s *Store) createFile(rel string, data []byte) error {
	return s.publish(rel, data, true)
}

func (s *Store) publish(rel string, data []byte, exclusive bool) (err error) {
	op := "write"
	if exclusive {
		op = "create"
	}
	full, err := s.abs(rel)
	if err != nil {
		return pathErr(op, rel, err)
	}
	if err := s.mkdirAll(filepath.Dir(full)); err != nil {
		return pathErr(op, rel, err)
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return pathErr(op, rel, ErrUnsafePath)
	}
	tmp, err := s.writeTemp(data)
	if err != nil {
		return pathErr(op, rel, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if exclusive {
		err = renameNoReplace(tmp, full)
	} else {
		err = os.Rename(tmp, full)
	}
	if err != nil {
		return pathErr(op, rel, unwrapLink(err))
	}
	return s.syncDir(filepath.Dir(full))
}

// writeTemp writes data to a new file in .tmp/ and fsyncs it.
func (s *Store) writeTemp(data []byte) (name string, err error) {
	name = filepath.Join(s.root, tmpDir, strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(tmpSeq.Add(1), 10)+".tmp")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil && s.durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

func (s *Store) syncDir(dir string) error {
	if !s.durable {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// renameNoReplace renames old to new unless new exists (EEXIST). It uses
// renameat2(RENAME_NOREPLACE) and falls back to link+unlink where the
// filesystem lacks it.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.ENOTSUP) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}

func unwrapLink(err error) error {
	var le *os.LinkError
	if errors.As(err, &le) {
		if errors.Is(le.Err, syscall.EEXIST) {
			return ErrExist
		}
		if errors.Is(le.Err, syscall.ENOENT) {
			return ErrNotExist
		}
		return le.Err
	}
	return err
}

// mkdirAll creates dir (inside the store) and its parents.
func (s *Store) mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// New directory entries must survive a crash too.
	return s.syncDir(filepath.Dir(dir))
}

// StaleTemp is how old a file in .tmp/ must be before Open removes it. A
// write holds its temp file for milliseconds; one this old was left by a
// process killed between creating and renaming it. Age decides, not the
// pid in the name: on a shared filesystem the pid may be another host's,
// and pids are reused.
const StaleTemp = 15 * time.Minute

// removeStaleTemps deletes leftover temp files older than StaleTemp. It is
// best effort: a failure only leaves garbage that nothing reads (.tmp/ is
// never listed as documents).
func (s *Store) removeStaleTemps(now time.Time) {
	dir := filepath.Join(s.root, tmpDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		fi, err := e.Info()
		if err == nil && now.Sub(fi.ModTime()) > StaleTemp {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
