package docstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
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
// still atomic, no longer durable across power loss. Observers see an
// "update" mutation with the revision written.
//
// The new version keeps the permission bits of the file it replaces; a
// new file gets 0666 minus the umask (mode.go).
func (s *Store) WriteFile(rel string, data []byte) error {
	if err := s.publish(rel, data, false, 0); err != nil {
		return err
	}
	s.notify(Mutation{Op: "update", Path: rel, Rev: Revision(data)})
	return nil
}

// createFile is WriteFile that fails with ErrExist instead of replacing.
// perm is the new file's permission bits (0: the new-file mode).
func (s *Store) createFile(rel string, data []byte, perm uint32) error {
	return s.publish(rel, data, true, perm)
}

func (s *Store) publish(rel string, data []byte, exclusive bool, perm uint32) (err error) {
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
	if exclusive {
		// Linking an unnamed temp file in place cannot follow or replace
		// anything at full (EEXIST), so no symlink check is needed; nor
		// for a no-replace rename of a spare file.
		t := pathTarget(full)
		ok, err := s.linkSpare(t, data, perm)
		if !ok {
			ok, err = s.linkNew(t, data, perm)
		}
		if ok {
			if err != nil {
				return pathErr(op, rel, err)
			}
			return s.syncDir(filepath.Dir(full))
		}
	}
	if fi, err := os.Lstat(full); err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			return pathErr(op, rel, ErrUnsafePath)
		}
		if !exclusive {
			perm = uint32(fi.Mode().Perm()) // a rewrite keeps the mode
		}
	}
	tmp, err := s.writeTemp(data, perm)
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

// writeTemp writes data to a new file in .tmp/ and fsyncs it. perm is
// its permission bits (0: the new-file mode, by the umask).
func (s *Store) writeTemp(data []byte, perm uint32) (name string, err error) {
	var f *os.File
	for try := 0; ; try++ {
		name = filepath.Join(s.root, tmpDir, tempName())
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		// A name taken by a temp file that a killed process left behind
		// under the same pid (pids are reused): take the next one.
		if err == nil || !errors.Is(err, fs.ErrExist) || try == 100 {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if perm != 0 {
		err = f.Chmod(fs.FileMode(perm))
	}
	if err == nil {
		_, err = f.Write(data)
	}
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

// noTmpfile is set once O_TMPFILE or linking it by /proc/self/fd turned
// out not to work here: creates then go through .tmp/ and a rename.
var noTmpfile atomic.Bool

// linkNew creates t (which must not exist) with data: an unnamed file
// (O_TMPFILE) in t's directory is written, fsynced, then linked in
// place. The name appears complete or not at all, like with a temp file
// and a rename, but with no rename: a rename across directories takes the
// filesystem-wide rename lock (s_vfs_rename_mutex), which other processes'
// renames hold while their replaced files are discarded; and no .tmp/
// name is created and removed. ok is false when this is not supported
// (the caller falls back to writeTemp and a rename).
func (s *Store) linkNew(t target, data []byte, perm uint32) (ok bool, err error) {
	if noTmpfile.Load() {
		return false, nil
	}
	var fd int
	for {
		fd, err = unix.Openat(t.dirfd, t.dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o666)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			if !errors.Is(err, unix.ENOENT) {
				noTmpfile.Store(true)
			}
			return false, nil
		}
		return true, err
	}
	defer unix.Close(fd)
	if perm != 0 && perm != newFilePerm() {
		if err := fchmodTo(fd, perm); err != nil {
			return true, err
		}
	}
	if err := writeAll(fd, data); err != nil {
		return true, err
	}
	if s.durable {
		if err := fdatasync(fd); err != nil {
			return true, err
		}
	}
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), t.dirfd, t.name, unix.AT_SYMLINK_FOLLOW)
	if err == unix.ENOENT && !haveProcFD() || err == unix.EPERM || err == unix.EACCES {
		// No /proc: AT_EMPTY_PATH (needs CAP_DAC_READ_SEARCH before 6.10).
		err = unix.Linkat(fd, "", t.dirfd, t.name, unix.AT_EMPTY_PATH)
	}
	switch {
	case err == nil:
		return true, nil
	case err == unix.EEXIST:
		return true, ErrExist
	case err == unix.ENOENT && haveProcFD():
		// The target directory was removed since it was opened or
		// checked: a real error, not a missing feature.
		return true, err
	case err == unix.EPERM || err == unix.EACCES || err == unix.EXDEV || err == unix.EOPNOTSUPP || err == unix.ENOENT:
		noTmpfile.Store(true) // linking an unnamed file is not allowed here
		return false, nil
	}
	return true, err
}

// haveProcFD reports whether /proc/self/fd is there to link unnamed
// files by.
var haveProcFD = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

// writeAll writes data to fd from its current offset.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		m, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if m == 0 {
			return unix.EIO
		}
		data = data[m:]
	}
	return nil
}

// syncDir fsyncs dir. Concurrent callers for one directory share
// fsyncs (group commit): a caller waits for the next fsync that starts
// after it arrived, which covers every entry it changed before calling;
// one fsync then serves every writer that queued behind the one running.
func (s *Store) syncDir(dir string) error {
	if !s.durable {
		return nil
	}
	return dirSyncerOf(dir).sync(dir)
}

// syncDirFD is syncDir for a directory the caller has open as fd (a Dir):
// the fsync uses fd instead of opening the path.
func (s *Store) syncDirFD(dir string, fd int) error {
	if !s.durable {
		return nil
	}
	return dirSyncerOf(dir).run(func() error { return fsyncFD(fd) })
}

var dirSyncers sync.Map // directory path -> *dirSyncer

type dirSyncer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	started uint64 // fsyncs started
	done    uint64 // fsyncs finished (the one numbered done is over)
	errGen  uint64 // the last fsync that failed
	err     error
}

func (d *dirSyncer) sync(dir string) error {
	return d.run(func() error { return fsyncDir(dir) })
}

// run waits for an fsync of the directory (done by fsync) that starts
// after the call, starting one if none is running.
func (d *dirSyncer) run(fsync func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cond == nil {
		d.cond = sync.NewCond(&d.mu)
	}
	// The fsync running now may have started before our change: we need
	// the one after it.
	need := d.started + 1
	for d.done < need {
		if !d.running {
			d.running = true
			d.started++
			gen := d.started
			d.mu.Unlock()
			err := fsync()
			d.mu.Lock()
			d.running = false
			d.done = gen
			if err != nil {
				d.errGen, d.err = gen, err
			}
			d.cond.Broadcast()
			continue
		}
		d.cond.Wait()
	}
	if d.err != nil && d.errGen >= need {
		return d.err
	}
	return nil
}

func fsyncDir(dir string) error {
	fd, err := openRaw(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	err = fsyncFD(fd)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	return nil
}

func fsyncFD(fd int) error {
	for {
		if err := unix.Fsync(fd); err != unix.EINTR {
			return err
		}
	}
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

// MkdirAll creates the directory rel inside the store, and its parents,
// durably: every new directory entry is fsynced into its parent.
func (s *Store) MkdirAll(rel string) error {
	full, err := s.abs(rel)
	if err != nil {
		return pathErr("mkdir", rel, err)
	}
	if err := s.mkdirAll(full); err != nil {
		return pathErr("mkdir", rel, err)
	}
	return nil
}

// mkdirAll creates dir (an absolute path inside the store) and its parents.
func (s *Store) mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	top := dir // the highest directory this call creates
	for {
		parent := filepath.Dir(top)
		if _, err := os.Stat(parent); err == nil || parent == top {
			break
		}
		top = parent
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	// New directory entries must survive a crash too, at every level.
	for d := dir; ; d = filepath.Dir(d) {
		if err := s.syncDir(filepath.Dir(d)); err != nil {
			return err
		}
		if d == top {
			return nil
		}
	}
}

// SyncDir fsyncs a directory so that the entries created, renamed or
// removed in it survive a crash. Store methods do this themselves; it is
// for writers outside a store, such as backups.
func SyncDir(dir string) error { return fsyncDir(dir) }

// SyncFS makes everything written to the filesystem holding path durable
// (syncfs(2)): data, inodes and directory entries of every file, in one
// call. A writer of many files (a backup) writes them without a sync each
// and calls it once.
func SyncFS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

// StaleTemp is how old a file in .tmp/ must be before Open removes it. A
// write holds its temp file for milliseconds; one this old was left by a
// process killed between creating and renaming it. Age decides, not the
// pid in the name: on a shared filesystem the pid may be another host's,
// and pids are reused.
const StaleTemp = 15 * time.Minute

// MaxTemps bounds the files .tmp/ keeps: past it, Open removes the
// oldest ones that are older than MinTempAge, whatever StaleTemp says
// (the spares of killed long-running processes, up to spareMax each).
const MaxTemps = 4 * spareMax

// MinTempAge is the age under which a file in .tmp/ is never removed by
// the count bound: a write in flight holds its temp file for
// milliseconds.
const MinTempAge = 10 * time.Second

// removeStaleTemps deletes leftover temp files older than StaleTemp, and
// the oldest beyond MaxTemps that are older than MinTempAge. It is best
// effort: a failure only leaves garbage that nothing reads (.tmp/ is
// never listed as documents). Removing a live process's spare is
// harmless: its next create finds the name gone and makes a new file.
func (s *Store) removeStaleTemps(now time.Time) {
	dir := filepath.Join(s.root, tmpDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type temp struct {
		name string
		mod  time.Time
	}
	var keep []temp
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if now.Sub(fi.ModTime()) > StaleTemp {
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		keep = append(keep, temp{e.Name(), fi.ModTime()})
	}
	if len(keep) <= MaxTemps {
		return
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].mod.Before(keep[j].mod) })
	for _, t := range keep[:len(keep)-MaxTemps] {
		if now.Sub(t.mod) > MinTempAge {
			os.Remove(filepath.Join(dir, t.name))
		}
	}
}
