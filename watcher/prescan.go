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
	lists map[string]listing
	stats map[string]FileState
}

// listing is a directory's entries that the walk does not skip, with
// their paths.
type listing struct {
	dev, ino uint64 // the directory listed: a directory replaced since is listed again
	ents     []fs.DirEntry
	rels     []string
}

// testHookPrescanned, when set, runs after a watcher's prescan (tests).
var testHookPrescanned func()

// prescan arms the watches of the tree and lists and stats it, with the
// walk's rules for what it skips. smu is held. Errors are left to the
// reconcile, which does again whatever failed here.
func (w *FSWatcher) prescan() *prescan {
	pre := &prescan{lists: map[string]listing{}}
	var files []string
	var scan func(dir string)
	scan = func(dir string) {
		fi, err := os.Lstat(w.abs(dir))
		if err != nil || !fi.IsDir() {
			return
		}
		w.watchDir(dir, w.dirEntry(dir), fi)
		ents, err := readDir(w.abs(dir))
		if err != nil {
			return
		}
		l := listing{ents: ents[:0], rels: make([]string, 0, len(ents))}
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
			l.ents, l.rels = append(l.ents, e), append(l.rels, child)
			switch {
			case t.IsDir():
				scan(child)
			case t.IsRegular():
				files = append(files, child)
			}
		}
		pre.lists[dir] = l
	}
	scan("")
	sts, ok := lstatAll(w.root, files, w.opt.Workers)
	if testHookPrescanned != nil {
		defer testHookPrescanned()
	}
	pre.stats = make(map[string]FileState, len(files))
	for i, p := range files {
		if ok[i] {
			pre.stats[p] = sts[i]
		}
	}
	return pre
}

// listing returns dir's entries that the walk does not skip and their
// paths, if they were listed from the directory fi describes (and forgets
// them: they are used once), or nils.
func (pre *prescan) listing(dir string, fi fs.FileInfo) ([]fs.DirEntry, []string) {
	if pre == nil {
		return nil, nil
	}
	l, ok := pre.lists[dir]
	if !ok {
		return nil, nil
	}
	delete(pre.lists, dir)
	var st FileState
	fillStat(&st, fi)
	if l.dev != st.Dev || l.ino != st.Ino {
		return nil, nil
	}
	return l.ents, l.rels
}

// lstatAll is the package's lstatAll, answered from the prescan's stats
// where it has them.
func (pre *prescan) lstatAll(root string, paths []string, workers int) ([]FileState, []bool) {
	if pre == nil {
		return lstatAll(root, paths, workers)
	}
	sts := make([]FileState, len(paths))
	ok := make([]bool, len(paths))
	var miss []string
	var at []int
	for i, p := range paths {
		if st, found := pre.stats[p]; found {
			sts[i], ok[i] = st, true
			continue
		}
		miss, at = append(miss, p), append(at, i)
	}
	if len(miss) > 0 {
		msts, mok := lstatAll(root, miss, workers)
		for j, i := range at {
			sts[i], ok[i] = msts[j], mok[j]
		}
	}
	return sts, ok
}

// readDir lists a directory.
func readDir(abs string) ([]fs.DirEntry, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
