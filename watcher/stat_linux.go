package watcher

import (
	"io/fs"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags: never follow a link swapped in after lstat, never block on a
// FIFO swapped in after lstat.
const openFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// fillStat copies the identity fields of fi into st.
func fillStat(st *FileState, fi fs.FileInfo) {
	st.Size = fi.Size()
	st.MTime = fi.ModTime().UnixNano()
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Dev = uint64(s.Dev)
		st.Ino = s.Ino
		st.CTime = s.Ctim.Sec*1e9 + s.Ctim.Nsec
	}
}

// remoteMagic lists filesystems where inotify does not see writes made by
// other clients (network and FUSE filesystems), so only polling is correct.
var remoteMagic = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x65735546: "fuse",
	0x00c36400: "ceph",
	0x01021997: "9p",
	0x5346414f: "afs",
	0x73757245: "coda",
	0x564c:     "ncp",
	0x7461636f: "ocfs2",
	0x01161970: "gfs2",
	0x0bd00bd0: "lustre",
	0x47504653: "gpfs",
}

// remoteFS reports the name of the filesystem type at path when it is one
// where inotify is blind to other machines' writes, or "" otherwise.
func remoteFS(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return ""
	}
	return remoteMagic[int64(st.Type)&0xffffffff]
}

// lstatAll lstats every root/paths[i] in parallel, relative to an open
// descriptor of each file's directory: one path lookup per directory
// rather than a walk of the whole path per file. paths are grouped by
// directory (a walk's order). ok[i] is false when the file could not be
// stat'ed or is not a regular file. The results live in sc, reused by the
// next call with the same sc (nil: new memory).
func lstatAll(root string, paths []string, workers int, sc *statScratch) (sts []FileState, ok []bool) {
	if sc == nil {
		sc = new(statScratch)
	}
	sts, ok = sc.reset(len(paths))
	sc.dirOf = growTo(sc.dirOf, len(paths))
	dirOf := sc.dirOf
	var fds []int
	last := "\x00"
	for i, p := range paths {
		if d := parentOf(p); d != last {
			fd, err := unix.Open(filepath.Join(root, filepath.FromSlash(d)), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				fd = -1
			}
			fds, last = append(fds, fd), d
		}
		dirOf[i] = int32(len(fds) - 1)
	}
	defer func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	parallel(len(paths), workers, func(i int) {
		fd := fds[dirOf[i]]
		if fd < 0 {
			return
		}
		var s unix.Stat_t
		if err := unix.Fstatat(fd, baseOf(paths[i]), &s, unix.AT_SYMLINK_NOFOLLOW); err != nil || s.Mode&unix.S_IFMT != unix.S_IFREG {
			return
		}
		sts[i] = FileState{Dev: uint64(s.Dev), Ino: s.Ino, Size: s.Size,
			MTime: s.Mtim.Sec*1e9 + s.Mtim.Nsec, CTime: s.Ctim.Sec*1e9 + s.Ctim.Nsec}
		ok[i] = true
	})
	return sts, ok
}
