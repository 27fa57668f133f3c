package docstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

// Lock is an exclusive flock on a lock file under .tavern/.locks/. The
// kernel drops it when the holding process dies, which is how the engine
// tells a dead claim holder from a live one.
//
// Most acquisitions go through the Store's cache of one descriptor per
// lock file (lockcache.go): the slot's mutex excludes this Store's
// goroutines, the flock on the shared descriptor everyone else. The
// others (LockContext with a cancellable context, keys beyond the cache's
// bound) open their own file description with gofrs/flock, whose
// instances are re-entrant and so are never shared between acquisitions.
type Lock struct {
	fl   *flock.Flock
	file *os.File  // instead of fl: an inheritable lock's descriptor (locktree.go)
	slot *lockSlot // instead of fl: a cached descriptor (lockcache.go)
	s    *Store    // keeps the Store, and so the slot's descriptor, alive while held
	Key  string
	path string
}

// DocLockKey is the lock key that serialises writers of one document.
func DocLockKey(rel string) string { return "docs/" + rel }

// lockExistingDoc takes the writers' lock of document rel if rel names
// something; if not, it fails as the read after it would (op) without
// taking it, so a mistyped path leaves no lock file, nor the directories
// of its path, under .locks/. A document created between the check and
// the lock is missed, as it would be by a write a moment earlier.
func (s *Store) lockExistingDoc(op, rel string) (*Lock, error) {
	full, err := s.abs(rel)
	if err != nil {
		return nil, pathErr(op, rel, err)
	}
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
		return nil, pathErr(op, rel, unwrapPath(err))
	}
	return s.Lock(DocLockKey(rel))
}

// DropDocLock removes the document lock file of rel, a path a document
// just left (moved away), if there is one and nobody holds it: without
// this, every path ever written keeps its lock file. It is best effort
// (a held or busy lock stays; doctor reports what is left) and costs one
// lstat when rel was never locked, the common case. It never waits, so a
// caller may hold other locks.
func (s *Store) DropDocLock(rel string) {
	key := DocLockKey(rel)
	path, err := s.lockPath(key)
	if err != nil {
		return
	}
	if _, err := os.Lstat(path); err != nil {
		return
	}
	l, ok, err := s.TryLock(key)
	if err != nil || !ok {
		return
	}
	s.removeDocLock(l, rel)
}

// removeDocLock deletes l, the held lock of document rel, unless a
// document is at rel again (then it only unlocks). Removing under the
// lock is safe: every acquirer checks that the file it locked is still
// linked (lockcache.go, tryLock) and retries on the new one.
func (s *Store) removeDocLock(l *Lock, rel string) (bool, error) {
	full, err := s.abs(rel)
	if err != nil {
		return false, l.Unlock()
	}
	if _, err := os.Lstat(full); !errors.Is(err, fs.ErrNotExist) {
		return false, l.Unlock()
	}
	return true, l.Remove()
}

func (s *Store) lockPath(key string) (string, error) {
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsRune(part, 0) {
			return "", pathErr("lock", key, ErrUnsafePath)
		}
	}
	return filepath.Join(s.root, locksDir, filepath.FromSlash(key)+".lock"), nil
}

// Lock blocks until it holds the lock for key.
func (s *Store) Lock(key string) (*Lock, error) {
	return s.LockContext(context.Background(), key)
}

// LockContext is Lock that gives up when ctx is done.
func (s *Store) LockContext(ctx context.Context, key string) (*Lock, error) {
	if ctx.Done() == nil {
		if l, _, cached, err := s.cachedLock(key, true); cached {
			return l, err
		}
	}
	for {
		l, ok, err := s.tryLock(key, func(fl *flock.Flock) (bool, error) {
			if ctx.Done() == nil {
				return true, fl.Lock()
			}
			return fl.TryLockContext(ctx, time.Millisecond)
		})
		if err != nil || ok {
			return l, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// TryLock takes the lock for key if it is free. ok is false if another
// holder has it. Probes (LockFree) are not holders: a lock busy only
// because of them is tried again (pastProbes).
func (s *Store) TryLock(key string) (l *Lock, ok bool, err error) {
	return s.pastProbes(key, func() (*Lock, bool, error) {
		if l, ok, cached, err := s.cachedLock(key, false); cached {
			return l, ok, err
		}
		return s.tryLock(key, func(fl *flock.Flock) (bool, error) { return fl.TryLock() })
	})
}

// probeRetries bounds how often a try that found the lock busy, with only
// probes on it, is tried again: a probe holds its shared lock for the
// time of two system calls.
const probeRetries = 64

// pastProbes runs try, a non-blocking exclusive acquisition of key, and
// when it finds the lock busy asks who has it: only probes (LockFree,
// which share) or a holder (which is exclusive). Probes go away at once,
// so try runs again; a holder makes ok false.
func (s *Store) pastProbes(key string, try func() (*Lock, bool, error)) (*Lock, bool, error) {
	for i := 0; ; i++ {
		l, ok, err := try()
		if err != nil || ok || i == probeRetries {
			return l, ok, err
		}
		if onlyProbes, err := s.LockFree(key); err != nil || !onlyProbes {
			return nil, false, nil
		}
		if i > 4 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// cachedLock takes the lock for key through the Store's open lock file
// (lockcache.go). cached is false when the cache is full: use the
// uncached path.
func (s *Store) cachedLock(key string, wait bool) (l *Lock, ok, cached bool, err error) {
	path, err := s.lockPath(key)
	if err != nil {
		return nil, false, true, err
	}
	sl := s.lockSlot(path)
	if sl == nil {
		return nil, false, false, nil
	}
	ok, err = sl.acquire(wait)
	if err != nil {
		return nil, false, true, pathErr("lock", key, err)
	}
	if !ok {
		return nil, false, true, nil
	}
	return &Lock{slot: sl, s: s, Key: key, path: path}, true, true, nil
}

func (s *Store) tryLock(key string, acquire func(*flock.Flock) (bool, error)) (*Lock, bool, error) {
	path, err := s.lockPath(key)
	if err != nil {
		return nil, false, err
	}
	for {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return nil, false, pathErr("lock", key, err)
		}
		fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o666))
		ok, err := acquire(fl)
		if err != nil {
			fl.Close()
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, false, err
			}
			return nil, false, pathErr("lock", key, err)
		}
		if !ok {
			fl.Close()
			return nil, false, nil
		}
		// The lock file may have been removed (by Remove, under its lock)
		// between our open and our flock: then we hold a lock on an
		// orphaned inode that nobody else will see. Check and retry.
		if sameInode(fl, path) {
			return &Lock{fl: fl, Key: key, path: path}, true, nil
		}
		fl.Unlock()
		fl.Close()
	}
}

func sameInode(fl *flock.Flock, path string) bool {
	held, err := fl.Stat()
	if err != nil {
		return false
	}
	cur, err := os.Stat(path)
	if err != nil {
		return false
	}
	hs, ok1 := held.Sys().(*syscall.Stat_t)
	cs, ok2 := cur.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && hs.Ino == cs.Ino && hs.Dev == cs.Dev && hs.Nlink > 0
}

// Unlock releases the lock. It is safe to call more than once.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	if l.slot != nil {
		err := l.slot.release()
		l.slot, l.s = nil, nil
		return err
	}
	if l.file != nil {
		err := unix.Flock(int(l.file.Fd()), unix.LOCK_UN)
		l.file.Close()
		l.file = nil
		return err
	}
	if l.fl == nil {
		return nil
	}
	err := l.fl.Unlock()
	l.fl.Close()
	l.fl = nil
	return err
}

// Remove deletes the lock file and releases the lock. Only the holder may
// remove it; acquirers re-check the inode, so a removal never lets two
// processes hold the "same" lock.
func (l *Lock) Remove() error {
	if l == nil || l.fl == nil && l.slot == nil && l.file == nil {
		return nil
	}
	err := os.Remove(l.path)
	if l.slot != nil {
		// The descriptor is on the removed inode now: close it (which
		// releases the flock) so the next acquisition opens the new file.
		l.slot.drop()
		l.slot.mu.Unlock()
		l.slot, l.s = nil, nil
		return err
	}
	if uerr := l.Unlock(); err == nil {
		err = uerr
	}
	return err
}

// Held reports whether this Lock is still held by us.
func (l *Lock) Held() bool {
	return l != nil && (l.slot != nil || l.file != nil || l.fl != nil && l.fl.Locked())
}
