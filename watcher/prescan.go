package watcher

import (
	"io/fs"
	"os"
)

// prescan holds what the first scan of a watcher found before its known
// states were loaded: each directory's listing, taken after its watch was
// armed, and the lstat of each regular file in it, taken after that. The
// first reconcile uses them instead of the same system calls again, so
// they overlap the loading of the index (see FSOptions.LoadKnown). Both
// are as good as the reconcile's own: a change after them is an event
// the watcher processes next.
type prescan struct {
	lists map[string]*listing
	sts   []FileState // by file number (listing.file)
	ok    []bool
}

// listing is a directory's entries that the walk does not skip, with
// their paths and, for regular files, their number in the prescan's
// stats (-1 for others).
type listing struct {
	pre      *prescan
	dev, ino uint64 // the directory listed: a directory replaced since is listed again
	ents     []dirent
	rels     []string
	file     []int32
}

// testHookPrescanned, when set, runs after a watcher's prescan (tests).
var testHookPrescanned func()

// prescan arms the watches of the tree and lists and stats it, with the
// walk's rules for what it skips. It reads only the options and adds
// watches (the notifier has its own lock): it runs beside WatchFS's own
// goroutine, and the reconcile's watchDir records the watches (adding a
// watch again is a no-op). Errors are left to the reconcile, which does
// again whatever failed here.
func (w *FSWatcher) prescan() *prescan {
	pre := &prescan{lists: map[string]*listing{}}
	var files []string
	var scan func(dir string)
	scan = func(dir string) {
		fi, err := os.Lstat(w.abs(dir))
		if err != nil || !fi.IsDir() {
			return
		}
		if !w.polling.Load() {
			_ = w.nt.add(w.abs(dir))
		}
		ents, err := readDir(w.abs(dir), 0)
		if err != nil {
			return
		}
		l := &listing{pre: pre, ents: ents[:0], rels: make([]string, 0, len(ents)), file: make([]int32, 0, len(ents))}
		var st FileState
		fillStat(&st, fi)
		l.dev, l.ino = st.Dev, st.Ino
		for _, e := range ents {
			name := e.Name()
			child := joinRel(dir, name)
			t := e.Type()
			if IgnoredName(name) || (w.opt.Ignore != nil && w.opt.Ignore(child, t.IsDir())) {
				continue
			}
			n := int32(-1)
			switch {
			case t.IsDir():
				scan(child)
			case t.IsRegular():
				n = int32(len(files))
				files = append(files, child)
			}
			l.ents, l.rels, l.file = append(l.ents, e), append(l.rels, child), append(l.file, n)
		}
		pre.lists[dir] = l
	}
	scan("")
	pre.sts, pre.ok = lstatAll(w.root, files, w.opt.Workers, nil)
	if testHookPrescanned != nil {
		defer testHookPrescanned()
	}
	return pre
}

// listing returns dir's listing if it was taken of the directory fi
// describes (and forgets it: it is used once), or nil; replaced reports
// a listing of another directory that was at this path.
func (pre *prescan) listing(dir string, fi fs.FileInfo) (l *listing, replaced bool) {
	if pre == nil {
		return nil, false
	}
	l = pre.lists[dir]
	if l == nil {
		return nil, false
	}
	delete(pre.lists, dir)
	var st FileState
	fillStat(&st, fi)
	if l.dev != st.Dev || l.ino != st.Ino {
		return nil, true
	}
	return l, false
}

// stat returns the prescan's lstat of entry i, if it has one.
func (l *listing) stat(i int) (FileState, bool) {
	if l == nil || l.file[i] < 0 || !l.pre.ok[l.file[i]] {
		return FileState{}, false
	}
	return l.pre.sts[l.file[i]], true
}
