package docstore

import (
	"cmp"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Spare files: Retire removes a document's name but keeps its inode, as
// a nameless-to-readers file in .tmp/, and the next create reuses it
// (overwrite from offset 0, truncate, fsync, rename into place) instead
// of allocating a new inode. On a disk mounted with `discard` and no
// journal, freeing a file's blocks waits for a synchronous discard
// (~0.2 ms); a queue cycle freed two files. A spare keeps its blocks:
// overwriting allocated blocks frees nothing while the size stays within
// them.
//
// Safety: a spare is reused only after an fsync of its old directory that
// started after it left that directory has finished, so a crash can
// never bring the old name back pointing at rewritten content. Until
// then it waits in the pool; once spareKick are waiting, a background
// goroutine fsyncs their directories (shared with other writers, group
// commit) and makes them reusable. Writers never wait for it: a create
// that finds no ready spare makes a new file instead. (They used to
// force that fsync themselves; with 8 writers each forced fsync stalled
// all of them, a third of their blocked time.) In relaxed mode the same
// rule holds (those batched directory fsyncs are the only fsyncs relaxed
// mode makes). Spares belong to the process that retired them: one left
// by a dead process is an ordinary stale temp file (removed by Open
// after StaleTemp), never reused.

const (
	spareMax  = 256 // retired files kept; beyond this Retire unlinks
	spareKick = 16  // waiting spares that start a background directory fsync
	// spareWarmup is how many files a Store retires (unlinks) before it
	// starts keeping spares: a short-lived process (a CLI take or done
	// retires one or two) would leave its spares in .tmp/ for nobody,
	// since spares belong to the process that retired them.
	spareWarmup = spareKick
)

type spare struct {
	name string     // base name in .tmp/
	dir  *dirSyncer // the directory it left
	need uint64     // reusable when dir.done >= need
	path string     // that directory's path, for the fsync
}

type sparePool struct {
	retired atomic.Int64 // files retired so far (spareWarmup)
	warmup  int64        // retires that unlink before spares are kept; set by Open

	mu      sync.Mutex
	ready   []spare
	wait    []spare
	syncing chan struct{} // non-nil while syncSpares runs; closed when it ends
	failed  time.Time     // last failed fsync: no new attempt for a second
}

// Retire removes the document rel like a delete that skips .trash/ (for
// superseded copies the caller has written elsewhere), keeping the file
// for reuse. The removal of the name is not fsynced here. A missing rel
// is not an error. Observers see a "delete" mutation: a watcher must
// know the engine removed the name.
func (s *Store) Retire(rel string) error {
	full, err := s.abs(rel)
	if err != nil {
		return pathErr("retire", rel, err)
	}
	if err := s.retire(unix.AT_FDCWD, full, filepath.Dir(full)); err != nil {
		return pathErr("retire", rel, err)
	}
	s.notify(Mutation{Op: "delete", Path: rel})
	return nil
}

// RetireAbs is Retire for a path the caller already made absolute and
// checked (queues builds item paths from validated names).
func (s *Store) RetireAbs(full string) error {
	if err := s.retire(unix.AT_FDCWD, full, filepath.Dir(full)); err != nil {
		return pathErr("retire", full, err)
	}
	if rel, err := filepath.Rel(s.root, full); err == nil {
		s.notify(Mutation{Op: "delete", Path: filepath.ToSlash(rel)})
	}
	return nil
}

// retire renames name (relative to dirfd) into .tmp/ as a spare, or
// unlinks it when the pool is full. dirPath is the absolute path of its
// directory: its fsync makes the spare reusable.
func (s *Store) retire(dirfd int, name, dirPath string) error {
	p := &s.spares
	p.mu.Lock()
	n := len(p.ready) + len(p.wait)
	p.mu.Unlock()
	tfd := s.tmpFD()
	if n >= spareMax || noTmpfile.Load() || tfd < 0 || p.retired.Add(1) <= p.warmup {
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
			return err
		}
		return nil
	}
	base := tempName()
	ds := s.dirSyncer(dirPath)
	if err := unix.Renameat2(dirfd, name, tfd, base, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && err != unix.ENOENT {
			return err
		}
		return nil
	}
	// The rename is done: only an fsync of dirPath that starts from now
	// on makes the removal durable.
	need := ds.next()
	p.mu.Lock()
	p.wait = append(p.wait, spare{name: base, dir: ds, need: need, path: dirPath})
	kick := len(p.wait) >= spareKick && p.syncing == nil && time.Since(p.failed) > time.Second
	if kick {
		p.syncing = make(chan struct{})
	}
	p.mu.Unlock()
	if kick {
		go s.syncSpares()
	}
	return nil
}

// syncSpares fsyncs the directories the waiting spares left and makes
// them ready, until fewer than spareKick are waiting.
func (s *Store) syncSpares() {
	p := &s.spares
	for {
		p.mu.Lock()
		dirs := map[string]*dirSyncer{}
		for _, sp := range p.wait {
			dirs[sp.path] = sp.dir
		}
		p.mu.Unlock()
		var err error
		for path, ds := range dirs {
			if e := ds.sync(path); e != nil {
				err = e
			}
		}
		p.mu.Lock()
		p.promote()
		if err != nil {
			p.failed = time.Now()
		}
		if err != nil || len(p.wait) < spareKick {
			close(p.syncing)
			p.syncing = nil
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// promote moves the waiting spares whose directory has been fsynced
// since they left to ready. The caller holds p.mu.
func (p *sparePool) promote() {
	keep := p.wait[:0]
	for _, sp := range p.wait {
		if sp.dir.synced(sp.need) {
			p.ready = append(p.ready, sp)
		} else {
			keep = append(keep, sp)
		}
	}
	p.wait = keep
}

// waitSync waits for a running background fsync of spares to end.
func (p *sparePool) waitSync() {
	p.mu.Lock()
	ch := p.syncing
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// takeSpare returns a spare file whose old name is durably gone, or "".
func (s *Store) takeSpare() string {
	p := &s.spares
	p.mu.Lock()
	if len(p.ready) == 0 && len(p.wait) > 0 {
		p.promote() // directories fsynced since by other writes
	}
	if len(p.ready) == 0 {
		p.mu.Unlock()
		return ""
	}
	sp := p.ready[len(p.ready)-1]
	p.ready = p.ready[:len(p.ready)-1]
	p.mu.Unlock()
	return sp.name
}

// linkSpare creates t (which must not exist) with data by rewriting a
// spare file and renaming it into place (no replace). ok is false when
// no spare is ready.
func (s *Store) linkSpare(t target, data []byte, perm uint32) (ok bool, err error) {
	name := s.takeSpare()
	if name == "" {
		return false, nil
	}
	tfd := s.tmpFD() // open: spares exist only once it was
	if opened, err := rewriteAt(tfd, name, data, s.durable, cmp.Or(perm, newFilePerm())); err != nil {
		unix.Unlinkat(tfd, name, 0)
		if !opened {
			return false, nil
		}
		return true, err
	}
	if err := unix.Renameat2(tfd, name, t.dirfd, t.name, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EEXIST {
			s.spares.mu.Lock()
			s.spares.ready = append(s.spares.ready, spare{name: name})
			s.spares.mu.Unlock()
			return true, ErrExist
		}
		unix.Unlinkat(tfd, name, 0)
		return false, nil // target directory gone, or no RENAME_NOREPLACE: the other paths say
	}
	return true, nil
}

func (s *Store) dirSyncer(dir string) *dirSyncer { return dirSyncerOf(dir) }

// dirSyncerOf returns the shared syncer of dir, allocating only the first
// time (LoadOrStore alone would allocate a new one on every call).
func dirSyncerOf(dir string) *dirSyncer {
	if v, ok := dirSyncers.Load(dir); ok {
		return v.(*dirSyncer)
	}
	v, _ := dirSyncers.LoadOrStore(dir, &dirSyncer{})
	return v.(*dirSyncer)
}

// next is the number of the first fsync of the directory that starts
// after now.
func (d *dirSyncer) next() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started + 1
}

// synced reports whether fsync number need has finished without error.
func (d *dirSyncer) synced(need uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done >= need && !(d.err != nil && d.errGen >= need)
}
