package docstore

import (
	"errors"
	"io/fs"
	"syscall"
	"time"

	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/schema"
)

// Dir is an open directory of the store, for callers that make many
// changes in a few directories (the queue broker's pending/, claimed/,
// done/ and dead/). Its methods name files relative to the open
// descriptor: the kernel resolves one component instead of the whole
// absolute path, and no symlink check per call is needed, because the
// directory was reached without following any (each component opened with
// O_NOFOLLOW) and the final component is never followed either
// (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, renameat2 never follows).
//
// A Dir keeps naming the directory it opened: if that directory is
// renamed or removed later, its methods act on (or fail in) the old
// directory, not on whatever now has its path. Callers that may see the
// tree rearranged under them check Stale and reopen.
type Dir struct {
	s    *Store
	rel  string // slash-separated, relative to the root
	full string
	fd   int
	ino  uint64
	dev  uint64
	// cleanup closes fd if d is dropped without Close.
	cleanup runtime.Cleanup
}

// OpenDir opens the existing directory rel. It fails with ErrUnsafePath
// if any component of rel is a symlink (or not a directory), and with an
// error matching fs.ErrNotExist if rel does not exist.
func (s *Store) OpenDir(rel string) (*Dir, error) {
	full, err := s.abs(rel)
	if err != nil {
		return nil, pathErr("opendir", rel, err)
	}
	fd, err := openBeneath(s.root, filepath.ToSlash(filepath.Clean(rel)))
	if err != nil {
		return nil, pathErr("opendir", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, pathErr("opendir", rel, err)
	}
	d := &Dir{s: s, rel: filepath.ToSlash(filepath.Clean(rel)), full: full, fd: fd, ino: st.Ino, dev: st.Dev}
	d.cleanup = runtime.AddCleanup(d, func(fd int) { unix.Close(fd) }, fd)
	return d, nil
}

// openBeneath opens root/rel as a directory without following a symlink
// at any component.
func openBeneath(root, rel string) (int, error) {
	fd, err := openRaw(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR {
				return -1, ErrUnsafePath
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// Rel returns the document path of name in d.
func (d *Dir) Rel(name string) string { return d.rel + "/" + name }

// Path returns the directory's path relative to the store root.
func (d *Dir) Path() string { return d.rel }

// Close closes the directory handle.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	d.cleanup.Stop()
	fd := d.fd
	d.fd = -1
	return unix.Close(fd)
}

// Stale reports whether d's path no longer leads to the directory d has
// open (it was removed, renamed or replaced), or cannot be checked.
func (d *Dir) Stale() bool {
	var st unix.Stat_t
	if err := unix.Lstat(d.full, &st); err != nil {
		return true
	}
	return st.Ino != d.ino || st.Dev != d.dev || st.Mode&unix.S_IFMT != unix.S_IFDIR
}

// removed reports whether d's directory has been removed.
func (d *Dir) removed() bool {
	var st unix.Stat_t
	defer runtime.KeepAlive(d)
	return unix.Fstat(d.fd, &st) == nil && st.Nlink == 0
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return ErrUnsafePath
	}
	return nil
}

// Lstat returns the FileInfo of name in d, not following a symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, pathErr("lstat", d.Rel(name), err)
	}
	fi := &fileStat{name: name}
	defer runtime.KeepAlive(d)
	if err := unix.Fstatat(d.fd, name, &fi.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, pathErr("lstat", d.Rel(name), err)
	}
	return fi, nil
}

// fileStat is fs.FileInfo over a unix.Stat_t (Sys returns *syscall.Stat_t
// like os.Lstat's, so callers reading the inode work with either).
type fileStat struct {
	name string
	st   unix.Stat_t
}

func (f *fileStat) Name() string { return f.name }
func (f *fileStat) Size() int64  { return f.st.Size }
func (f *fileStat) Mode() fs.FileMode {
	m := fs.FileMode(f.st.Mode & 0o777)
	switch f.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
func (f *fileStat) ModTime() time.Time { return time.Unix(f.st.Mtim.Unix()) }
func (f *fileStat) IsDir() bool        { return f.Mode().IsDir() }
func (f *fileStat) Sys() any {
	return &syscall.Stat_t{Dev: f.st.Dev, Ino: f.st.Ino, Nlink: f.st.Nlink, Mode: f.st.Mode, Uid: f.st.Uid, Gid: f.st.Gid,
		Rdev: f.st.Rdev, Size: f.st.Size, Blksize: f.st.Blksize, Blocks: f.st.Blocks}
}

// Exists reports whether name exists in d (a symlink counts; it is not
// followed).
func (d *Dir) Exists(name string) bool {
	if checkName(name) != nil {
		return false
	}
	var st unix.Stat_t
	defer runtime.KeepAlive(d)
	return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// ReadFile reads the regular file name in d, like Store.ReadFile.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	data, _, err := d.readFile(name)
	return data, err
}

// readFile is ReadFile that also returns the file's permission bits. A
// name that is not a regular file is refused (*OddFileError) from its
// lstat, before any open: a FIFO is never opened.
func (d *Dir) readFile(name string) ([]byte, uint32, error) {
	rel := d.Rel(name)
	if err := checkName(name); err != nil {
		return nil, 0, pathErr("read", rel, err)
	}
	var fd int
	var err error
	defer runtime.KeepAlive(d)
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, 0, pathErr("read", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, oddErr(rel, st.Mode, nil)
	}
	for {
		// O_NONBLOCK: a FIFO swapped in since the lstat cannot block.
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, oddErr(rel, 0, err)
	}
	data, perm, err := readFD(fd)
	if err != nil {
		var tl errTooLarge
		switch {
		case errors.As(err, &tl):
			return nil, 0, &ParseError{Path: rel, Msg: tl.Error(), Err: ErrTooLarge}
		case errors.Is(err, errNotRegular):
			return nil, 0, &OddFileError{Op: "read", Path: rel, What: "not a regular file"}
		}
		return nil, 0, pathErr("read", rel, err)
	}
	return data, perm, nil
}

// Get reads and parses the document name in d, like Store.Get.
func (d *Dir) Get(name string) (*Doc, error) {
	data, perm, err := d.readFile(name)
	if err != nil {
		return nil, err
	}
	doc, err := Parse(d.Rel(name), data)
	if err != nil {
		return nil, err
	}
	doc.perm = perm
	d.s.classify(doc)
	return doc, nil
}

// Create writes a new document name in d, failing with ErrExist if there
// is one, like Store.Create: validated first, durable on return (unless
// the store is relaxed), observers notified.
func (d *Dir) Create(name string, doc *Doc) error {
	rel := d.Rel(name)
	if err := checkName(name); err != nil {
		return pathErr("create", rel, err)
	}
	doc.Path = rel
	d.s.classify(doc)
	if doc.Kind == nil {
		return &schema.UnknownKindError{Path: rel}
	}
	if errs := doc.Validate(false); len(errs) > 0 {
		return &ValidationError{Path: rel, Errors: errs}
	}
	data := doc.Bytes()
	defer runtime.KeepAlive(d)
	t := target{dirfd: d.fd, dir: ".", name: name, syncPath: d.full}
	perm := permOf(doc)
	ok, err := d.s.linkSpare(t, data, perm)
	if !ok {
		ok, err = d.s.linkNew(t, data, perm)
	}
	if !ok {
		// Neither a spare nor O_TMPFILE: a temp file in .tmp/ and a
		// no-replace rename into d.
		var tmp string
		if tmp, err = d.s.writeTemp(data, perm); err == nil {
			err = unix.Renameat2(unix.AT_FDCWD, tmp, d.fd, name, unix.RENAME_NOREPLACE)
			if err != nil {
				os.Remove(tmp)
			}
			if err == unix.EEXIST {
				err = ErrExist
			}
		}
	}
	if err != nil {
		if err != ErrExist && d.removed() {
			err = unix.ENOENT // the kernel says EPERM for O_TMPFILE there
		}
		return pathErr("create", rel, err)
	}
	if err := d.s.syncDirFD(d.full, d.fd); err != nil {
		return pathErr("create", rel, err)
	}
	doc.Rev = Revision(data)
	d.s.notify(Mutation{Op: "create", Path: rel, Doc: doc})
	return nil
}

// Retire is Store.Retire for name in d.
func (d *Dir) Retire(name string) error {
	if err := checkName(name); err != nil {
		return pathErr("retire", d.Rel(name), err)
	}
	defer runtime.KeepAlive(d)
	if err := d.s.retire(d.fd, name, d.full); err != nil {
		return err
	}
	d.s.notify(Mutation{Op: "delete", Path: d.Rel(name)})
	return nil
}

// target names where a create lands: name relative to dirfd (AT_FDCWD
// and an absolute path for path-based callers, a Dir's descriptor and a
// plain name for Dir). dir is the directory to open for O_TMPFILE,
// relative to dirfd; syncPath its absolute path, which keys the group
// fsync and is opened by it.
type target struct {
	dirfd    int
	dir      string
	name     string
	syncPath string
}

func pathTarget(full string) target {
	return target{dirfd: unix.AT_FDCWD, dir: filepath.Dir(full), name: full, syncPath: filepath.Dir(full)}
}

// tmpFD returns a descriptor of .tmp/, opened once per Store, or -1.
func (s *Store) tmpFD() int {
	s.tmpOnce.Do(func() {
		s.tmpfd = -1
		fd, err := openBeneath(s.root, tmpDir)
		if err != nil {
			return
		}
		s.tmpfd = fd
		runtime.AddCleanup(s, func(fd int) { unix.Close(fd) }, fd)
	})
	return s.tmpfd
}

// pid is this process's id, for temp file names (os.Getpid is a
// system call each time).
var pid = strconv.Itoa(os.Getpid())

func tempName() string {
	return pid + "-" + strconv.FormatUint(tmpSeq.Add(1), 10) + ".tmp"
}
