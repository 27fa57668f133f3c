//go:build !linux

package watcher

import (
	"io/fs"
	"os"
	"path/filepath"
)

const openFlags = os.O_RDONLY

func fillStat(st *FileState, fi fs.FileInfo) {
	st.Size = fi.Size()
	st.MTime = fi.ModTime().UnixNano()
}

// remoteFS: detection is implemented for Linux only; elsewhere pass an
// explicit poll interval for network filesystems.
func remoteFS(path string) string { return "" }

// lstatAll lstats every root/paths[i] in parallel; ok[i] is false when
// the file could not be stat'ed or is not a regular file. The results
// live in sc (nil: new memory).
func lstatAll(root string, paths []string, workers int, sc *statScratch) (sts []FileState, ok []bool) {
	if sc == nil {
		sc = new(statScratch)
	}
	sts, ok = sc.reset(len(paths))
	parallel(len(paths), workers, func(i int) {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(paths[i])))
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		fillStat(&sts[i], fi)
		ok[i] = true
	})
	return sts, ok
}
