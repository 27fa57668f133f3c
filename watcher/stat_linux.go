package watcher

import (
	"io/fs"
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
