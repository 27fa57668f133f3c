package agents

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Backup and restore.
//
// A backup is a plain copy of .tavern/ without the engine-private
// directories (.tmp, .locks, .trash, .index and anything else starting with
// a dot, but the .gitignore). It holds regular files and directories
// only: a symlink is never followed (nothing outside .tavern/ is read,
// even through a file or directory swapped for a link while the backup
// runs) nor copied as a link, and a FIFO, socket or device is not a
// document; each is left out and reported (Skipped), and the backup goes
// on. Restore copies a backup the same way.
//
// A backup is consistent file by file: every
// document is replaced atomically by rename, so opening and reading it
// yields a whole old or whole new version, never a torn one. Message
// chunks are copied under their channel's lock, so each channel is a
// consistent snapshot and every message acknowledged before the backup
// started is in it (chunks are append-only: any later version of a chunk
// still holds it). Journal files are append-only JSON lines; the copy
// stops at the last complete line.
//
// The copy is written under DEST/<name>.partial without a sync per file,
// then made durable at once (one syncfs of the destination's filesystem:
// data, inodes and directory entries), and renamed to its final name only
// then, with an fsync of DEST: a backup directory without the suffix is
// always whole. An fsync per file made a backup of 20k documents take 45 s.

// BackupResult describes a finished backup.
type BackupResult struct {
	Dir   string `json:"dir"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Skipped lists what was not copied (never nil): symlinks and
	// special files.
	Skipped []SkippedFile `json:"skipped"`
}

// SkippedFile is an entry of the store a backup or restore did not copy
// because it is not a regular file or directory.
type SkippedFile struct {
	Path   string `json:"path"`   // slash-separated, relative to the store
	Reason string `json:"reason"` // what it is, e.g. "symlink to alice.md"
}

func (f SkippedFile) String() string { return f.Path + ": " + f.Reason }

// BackupOptions tune BackupWith.
type BackupOptions struct {
	Now time.Time // names the backup; zero: time.Now()
	// Progress, if set, is called after each file copied with the count
	// so far and the total (for a progress display; it must be quick).
	Progress func(done, total int)
}

// BackupName is the directory name of a backup taken at t.
func BackupName(t time.Time) string { return "tavern-" + t.UTC().Format("20060102T150405.000Z") }

// BackupsDir is the default directory of the backups of the project
// whose store is root: <project>/.tavern-backups, outside .tavern/. It is
// created with a .gitignore that ignores the directory itself, so backups
// never show up in the project's git status.
func BackupsDir(root string) (string, error) {
	dir := filepath.Join(filepath.Dir(root), ".tavern-backups")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return dir, nil
	}
	if err != nil {
		return "", err
	}
	_, err = f.WriteString("# Tavern backups (tavern backup, tavern restore): not part of the project.\n*\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return dir, err
}

// Backup copies the store into a new directory BackupName(now) under dest
// (created if needed) and returns it.
func Backup(s *docstore.Store, dest string, now time.Time) (*BackupResult, error) {
	return BackupWith(s, dest, BackupOptions{Now: now})
}

// BackupWith is Backup with options.
func BackupWith(s *docstore.Store, dest string, opt BackupOptions) (*BackupResult, error) {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	// Refused before anything is created there (also through a symlink).
	if s.Contains(dest) {
		return nil, &fs.PathError{Op: "backup", Path: dest, Err: docstore.ErrInsideStore}
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(absDest, BackupName(opt.Now))
	if rel, err := filepath.Rel(s.Root(), final); err == nil && !strings.HasPrefix(rel, "..") {
		return nil, &fs.PathError{Op: "backup", Path: dest, Err: docstore.ErrInsideStore}
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
	plan, skipped, err := planCopy(s.Root(), tmp)
	if err != nil {
		return nil, err
	}
	if testHookAfterPlan != nil {
		testHookAfterPlan()
	}
	c := &copier{total: plan.files(), progress: opt.Progress, res: res, skipped: skipped}
	// A channel's chunks are copied under its lock: a consistent
	// snapshot of each channel.
	lock := func(channel string) (func(), error) {
		l, err := s.Lock(schema.ChannelLockKey(channel))
		if err != nil {
			return nil, err
		}
		return func() { l.Unlock() }, nil
	}
	if err := c.run(plan, lock); err != nil {
		return nil, err
	}
	res.Skipped = c.sortedSkipped()
	if err := docstore.SyncFS(tmp); err != nil {
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

// testHookAfterPlan runs between the plan of a backup and its copy.
var testHookAfterPlan func()

// copyStep copies the regular files files of the directory rel (relative
// to root; "" is root itself) into dst (which it creates); channel, if
// set, names the channel whose lock the copy holds.
type copyStep struct {
	root, rel, dst string
	files          []string
	channel        string
}

type copyPlan []copyStep

func (p copyPlan) files() int {
	n := 0
	for _, s := range p {
		n += len(s.files)
	}
	return n
}

// planCopy lists what a copy of the store directory src to dst does:
// every directory and its regular files, without dot names (but the
// top-level .gitignore). Symlinks and special files are returned as
// skipped; a directory is opened without following a link. Each
// directory of messages/ named like a channel is tagged with its channel.
func planCopy(src, dst string) (copyPlan, []SkippedFile, error) {
	var plan copyPlan
	var skipped []SkippedFile
	var walk func(rel, out string) error
	walk = func(rel, out string) error {
		fd, err := openDirNoFollow(src, rel)
		if err != nil {
			switch {
			case rel == "":
				return err
			case errors.Is(err, fs.ErrNotExist):
				return nil // removed while we looked
			case errors.Is(err, errNotDir):
				// Swapped for a link or a file since its parent was read.
				skipped = append(skipped, SkippedFile{Path: filepath.ToSlash(rel), Reason: "no longer a directory (changed during the copy)"})
				return nil
			}
			return err
		}
		dir := os.NewFile(uintptr(fd), filepath.Join(src, rel))
		ents, err := dir.ReadDir(-1)
		if err != nil {
			dir.Close()
			return err
		}
		step := copyStep{root: src, rel: rel, dst: out}
		if filepath.Dir(rel) == "messages" && messages.ValidChannel(filepath.Base(rel)) == nil {
			step.channel = filepath.Base(rel)
		}
		var dirs []string
		for _, e := range ents {
			name := e.Name()
			if docstore.Private(name) && !(rel == "" && name == ".gitignore") {
				continue
			}
			switch {
			case e.IsDir():
				dirs = append(dirs, name)
			case e.Type().IsRegular():
				step.files = append(step.files, name)
			default:
				skipped = append(skipped, SkippedFile{Path: filepath.ToSlash(filepath.Join(rel, name)), Reason: oddFile(fd, name, e.Type())})
			}
		}
		dir.Close()
		plan = append(plan, step)
		for _, name := range dirs {
			if err := walk(filepath.Join(rel, name), filepath.Join(out, name)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", dst); err != nil {
		return nil, nil, err
	}
	return plan, skipped, nil
}

// openDirNoFollow opens root/rel as a directory without following a
// symlink at any component of rel (root is the store, or the backup,
// as given).
func openDirNoFollow(root, rel string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == "" {
			continue
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = errNotDir
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: filepath.Join(root, rel), Err: err}
		}
		fd = next
	}
	return fd, nil
}

// oddFile says what the entry name of the directory dirfd is, for an
// entry that is not a regular file or directory.
func oddFile(dirfd int, name string, mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			return "symlink to " + string(buf[:n]) + " (not followed)"
		}
		return "symlink (not followed)"
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe, not a regular file"
	case mode&fs.ModeSocket != 0:
		return "socket, not a regular file"
	case mode&fs.ModeDevice != 0:
		return "device, not a regular file"
	}
	return "not a regular file"
}

// copier copies the files of a plan without syncing each (the caller
// syncs the filesystem once), with a few workers: creating a file costs
// a round trip to the disk's metadata, and they overlap.
type copier struct {
	mu          sync.Mutex
	done, total int
	progress    func(done, total int)
	res         *BackupResult
	skipped     []SkippedFile // from the plan, and what changed since
}

// sortedSkipped returns what was skipped, by path, never nil.
func (c *copier) sortedSkipped() []SkippedFile {
	out := append([]SkippedFile{}, c.skipped...)
	slices.SortFunc(out, func(a, b SkippedFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// copyWorkers copy files at once; copyChunk files are one unit of work.
const (
	copyWorkers = 8
	copyChunk   = 256
)

// run copies plan. Directories are made first; then the files go in
// chunks to the workers, a channel's files (if lock is set) in one chunk
// under lock(channel).
func (c *copier) run(plan copyPlan, lock func(channel string) (func(), error)) error {
	var units []copyStep
	for _, step := range plan {
		if err := os.MkdirAll(step.dst, 0o755); err != nil {
			return err
		}
		if step.channel != "" && lock != nil {
			units = append(units, step)
			continue
		}
		for i := 0; i < len(step.files); i += copyChunk {
			u := step
			u.channel = ""
			u.files = step.files[i:min(i+copyChunk, len(step.files))]
			units = append(units, u)
		}
	}
	work := make(chan copyStep)
	errs := make(chan error, copyWorkers)
	var wg sync.WaitGroup
	for range copyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				err := func() error {
					if u.channel != "" {
						unlock, err := lock(u.channel)
						if err != nil {
							return err
						}
						defer unlock()
					}
					return c.copy(u)
				}()
				if err != nil {
					errs <- err
					for range work { // drain: the others stop too
					}
					return
				}
			}
		}()
	}
	for _, u := range units {
		select {
		case work <- u:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (c *copier) copy(step copyStep) error {
	// Through a descriptor opened without following links: a file or
	// directory swapped for a link since the plan is skipped, and what
	// it points at is never read.
	dirfd, err := openDirNoFollow(step.root, step.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // a directory removed since the plan
	case errors.Is(err, errNotDir):
		c.skip(SkippedFile{Path: filepath.ToSlash(step.rel), Reason: "no longer a directory (changed during the copy)"})
		return nil
	case err != nil:
		return err
	}
	defer unix.Close(dirfd)
	for _, name := range step.files {
		data, skip, err := readNoFollow(dirfd, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a queue item moved on: its new path is copied or was
		}
		if err != nil {
			return &fs.PathError{Op: "read", Path: filepath.Join(step.root, step.rel, name), Err: err}
		}
		if skip != "" {
			c.skip(SkippedFile{Path: filepath.ToSlash(filepath.Join(step.rel, name)), Reason: skip})
			continue
		}
		if strings.HasSuffix(name, ".jsonl") {
			// An append-only journal: drop a line still being written.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		if err := os.WriteFile(filepath.Join(step.dst, name), data, 0o644); err != nil {
			return err
		}
		c.mu.Lock()
		c.res.Files++
		c.res.Bytes += int64(len(data))
		c.done++
		if c.progress != nil {
			c.progress(c.done, c.total)
		}
		c.mu.Unlock()
	}
	return nil
}

func (c *copier) skip(f SkippedFile) {
	c.mu.Lock()
	c.skipped = append(c.skipped, f)
	c.mu.Unlock()
}

// readNoFollow reads the regular file name of the directory dirfd. skip
// says why it is not read if it is not (any more) a regular file: a
// symlink is never opened, nor a FIFO or device seen by the lstat (one
// swapped in after it is opened with O_NONBLOCK, so the open cannot
// block, and not read).
func readNoFollow(dirfd int, name string) (data []byte, skip string, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, oddFile(dirfd, name, modeType(st.Mode)), nil
	}
	var fd int
	for {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ELOOP {
		return nil, oddFile(dirfd, name, fs.ModeSymlink), nil
	}
	if err != nil {
		return nil, "", err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, oddFile(dirfd, name, modeType(st.Mode)), nil
	}
	// Plain reads, sized by the fstat: an os.File would register the
	// descriptor with the netpoller first (see docstore/rawio.go).
	data = make([]byte, 0, st.Size+1)
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, cap(data))
		}
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if n == 0 {
			return data, "", nil
		}
		data = data[:len(data)+n]
	}
}

// modeType is the fs.FileMode type bits of a stat mode.
func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFDIR:
		return fs.ModeDir
	}
	return fs.ModeIrregular
}

// RestoreResult describes a finished restore.
type RestoreResult struct {
	Dir   string `json:"dir"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Previous is where the store that was replaced now lives ("" if
	// there was none). Restore never deletes data.
	Previous string `json:"previous,omitempty"`
	// Skipped lists what the backup held that was not copied (never
	// nil): symlinks and special files, as Backup skips them.
	Skipped []SkippedFile `json:"skipped"`
}

// RestoreOptions tune RestoreWith.
type RestoreOptions struct {
	Force    bool      // replace a store that holds documents
	Now      time.Time // names the kept previous store; zero: time.Now()
	Progress func(done, total int)
}

// Restore replaces the store directory target (a .tavern directory, which
// need not exist) with the backup src. A src named *.partial (a backup
// interrupted before it was whole) is ErrNotBackup. It refuses with ErrNotEmpty when
// target holds documents besides tavern.md, unless force is set. The new
// store is assembled next to target and renamed into place; a replaced
// store is kept in the project's backups directory (BackupsDir) as
// before-restore-<time>, out of git's view.
func Restore(src, target string, force bool, now time.Time) (*RestoreResult, error) {
	return RestoreWith(src, target, RestoreOptions{Force: force, Now: now})
}

// RestoreWith is Restore with options.
func RestoreWith(src, target string, opt RestoreOptions) (*RestoreResult, error) {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	// A backup is renamed from .partial only once whole: with the suffix
	// it is a copy killed midway, any part of the store (tavern.md first).
	if strings.HasSuffix(filepath.Base(filepath.Clean(src)), ".partial") {
		return nil, &fs.PathError{Op: "restore", Path: src, Err: fmt.Errorf("%w: an interrupted backup (.partial), not whole", ErrNotBackup)}
	}
	if _, err := os.Stat(filepath.Join(src, docstore.ConfigFile)); err != nil {
		if _, err2 := os.Stat(filepath.Join(src, docstore.DirName, docstore.ConfigFile)); err2 == nil {
			src = filepath.Join(src, docstore.DirName)
		} else {
			return nil, &fs.PathError{Op: "restore", Path: src, Err: fmt.Errorf("%w (no %s)", ErrNotBackup, docstore.ConfigFile)}
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
		if docs && !opt.Force {
			return nil, &fs.PathError{Op: "restore", Path: target, Err: ErrNotEmpty}
		}
	}
	stamp := opt.Now.UTC().Format("20060102T150405.000Z")
	// The pid names the process assembling it: doctor tells a killed
	// restore's leftover (RestoreLeftovers) from one still running.
	tmp := target + restoreInfix + stamp + "-" + strconv.Itoa(os.Getpid())
	res := &RestoreResult{Dir: target}
	plan, skipped, err := planCopy(src, tmp)
	if err != nil {
		return nil, err
	}
	var bres BackupResult
	c := &copier{total: plan.files(), progress: opt.Progress, res: &bres, skipped: skipped}
	if err := c.run(plan, nil); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	res.Skipped = c.sortedSkipped()
	if err := docstore.SyncFS(tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	res.Files, res.Bytes = bres.Files, bres.Bytes
	if exists {
		keep, err := BackupsDir(target)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		res.Previous = filepath.Join(keep, "before-restore-"+stamp)
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

// restoreInfix is in the name of the new store a restore assembles next to
// the store: .tavern.restore-<time>-<pid>.
const restoreInfix = ".restore-"

// RestoreLeftovers lists the new stores that killed restores left next to
// the store directory target: .tavern.restore-<time>-<pid> whose process
// is gone (a restore running now, or a name without a pid, is not listed).
func RestoreLeftovers(target string) []string {
	target = filepath.Clean(target)
	ents, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), filepath.Base(target)+restoreInfix)
		if !ok || !e.IsDir() {
			continue
		}
		i := strings.LastIndexByte(rest, '-')
		if i < 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[i+1:])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			out = append(out, filepath.Join(filepath.Dir(target), e.Name()))
		}
	}
	return out
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
