package docstore

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// A lockCache keeps one open descriptor per lock file (up to
// maxCachedLocks per Store), so taking a lock costs a flock and an fstat
// (the link re-check) instead of a mkdir check, an open (with Go's
// netpoller probing: four fcntl and an epoll_ctl), the flock, two stats
// and a close.
//
// flock belongs to the open file description, which all goroutines share
// through the cached descriptor, so a slot's mutex excludes the
// goroutines of this process and the flock excludes other processes (and
// other Stores and uncached acquisitions in this one, which open their
// own descriptions). The re-check is kept, as a link count: a lock file removed
// (Lock.Remove) while we opened or waited is an orphan, so the slot
// drops its descriptor and reopens the path.
type lockCache struct {
	mu    sync.Mutex
	slots map[string]*lockSlot
}

type lockSlot struct {
	mu   sync.Mutex // held from acquisition to Unlock
	path string
	fd   int // -1: not open
}

// maxCachedLocks bounds the descriptors a Store keeps open (256 item-lock
// stripes per queue, plus document and holder locks); further keys take
// the uncached path.
const maxCachedLocks = 1024

func (s *Store) lockSlot(path string) *lockSlot {
	s.lockOnce.Do(func() {
		c := &lockCache{slots: map[string]*lockSlot{}}
		s.lockc = c
		// A Store has no Close: release the descriptors when it is
		// garbage. The cache does not point back at the Store.
		runtime.AddCleanup(s, func(c *lockCache) { c.closeAll() }, c)
	})
	c := s.lockc
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.slots[path]
	if sl == nil {
		if len(c.slots) >= maxCachedLocks {
			return nil
		}
		sl = &lockSlot{path: path, fd: -1}
		c.slots[path] = sl
	}
	return sl
}

func (c *lockCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sl := range c.slots {
		// A held Lock keeps its Store reachable, so a slot still locked
		// here belongs to a Lock that is garbage too: closing drops its
		// flock, as the finalizer of an uncached lock's file would.
		if sl.fd >= 0 {
			unix.Close(sl.fd)
			sl.fd = -1
		}
	}
}

// acquire takes the slot's mutex (blocking, or failing at once when
// !wait) and then its flock. ok is false when another holder has it.
func (sl *lockSlot) acquire(wait bool) (ok bool, err error) {
	if wait {
		sl.mu.Lock()
	} else if !sl.mu.TryLock() {
		return false, nil
	}
	for {
		if sl.fd < 0 {
			if err := sl.open(); err != nil {
				sl.mu.Unlock()
				return false, err
			}
		}
		how := unix.LOCK_EX
		if !wait {
			how |= unix.LOCK_NB
		}
		err := unix.Flock(sl.fd, how)
		for err == unix.EINTR {
			err = unix.Flock(sl.fd, how)
		}
		if err == unix.EWOULDBLOCK {
			sl.mu.Unlock()
			return false, nil
		}
		if err != nil {
			sl.mu.Unlock()
			return false, err
		}
		// The file may have been removed (by Remove, under its lock)
		// before or while we locked: then this lock is on an orphaned
		// inode that nobody else will see. Reopen and retry. A removed
		// file has no links left, which fstat tells without walking the
		// path again (lock files are only ever created and removed, never
		// renamed, so a linked inode is the one at the path).
		var st unix.Stat_t
		if unix.Fstat(sl.fd, &st) == nil && st.Nlink > 0 {
			return true, nil
		}
		sl.drop()
	}
}

func (sl *lockSlot) open() error {
	if err := os.MkdirAll(filepath.Dir(sl.path), 0o777); err != nil {
		return err
	}
	fd, err := openRaw(sl.path, unix.O_RDWR|unix.O_CREAT, 0o666) // the umask decides, like any file
	if err != nil {
		return err
	}
	sl.fd = fd
	return nil
}

// drop closes the descriptor (which releases its flock); the caller holds
// sl.mu.
func (sl *lockSlot) drop() {
	if sl.fd >= 0 {
		unix.Close(sl.fd)
		sl.fd = -1
	}
}

// release unlocks the flock and the slot.
func (sl *lockSlot) release() error {
	err := unix.Flock(sl.fd, unix.LOCK_UN)
	if err != nil {
		sl.drop() // closing releases it for sure
	}
	sl.mu.Unlock()
	return err
}
