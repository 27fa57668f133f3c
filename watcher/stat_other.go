//go:build !linux

package watcher

import (
	"io/fs"
	"os"
)

const openFlags = os.O_RDONLY

func fillStat(st *FileState, fi fs.FileInfo) {
	st.Size = fi.Size()
	st.MTime = fi.ModTime().UnixNano()
}

// remoteFS: detection is implemented for Linux only; elsewhere pass an
// explicit poll interval for network filesystems.
func remoteFS(path string) string { return "" }
