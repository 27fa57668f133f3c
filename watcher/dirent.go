package watcher

import "io/fs"

// dirent is a directory entry as the walk needs it: a name and the type
// bits of fs.DirEntry.Type, without fs.DirEntry's per-entry allocation
// (a full rescan lists every directory every reconcile period).
type dirent struct {
	name string
	typ  fs.FileMode
}

func (e dirent) Name() string      { return e.name }
func (e dirent) Type() fs.FileMode { return e.typ }

// statScratch is lstatAll's working memory, which a watcher keeps for its
// batches of lstats (up to 4*maxBatch files each).
type statScratch struct {
	sts   []FileState
	ok    []bool
	dirOf []int32
}

// reset returns sc's results sized and zeroed for n files.
func (sc *statScratch) reset(n int) ([]FileState, []bool) {
	sc.sts, sc.ok = growTo(sc.sts, n), growTo(sc.ok, n)
	clear(sc.sts)
	clear(sc.ok)
	return sc.sts, sc.ok
}

// growTo returns s with length n, reusing its array when it is big enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
