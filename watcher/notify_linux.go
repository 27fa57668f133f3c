//go:build linux

package watcher

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inotify is the Linux event source, inotify used directly rather than
// through fsnotify, for what telling a finished write from a torn one
// needs: IN_CLOSE_WRITE (a writer closed the file), IN_CREATE told apart
// from IN_MOVED_TO (a file created in place is being written; one renamed
// into place is complete), rename cookies (a document renamed within the
// tree is a move, not a removal to wait on), and the errno of
// inotify_add_watch (ENOSPC: out of watches, poll instead).
type inotify struct {
	f       *os.File
	fd      int
	rc      syscall.RawConn
	closing atomic.Bool
	onEvent func(rawEvent)
	onError func(error)

	mu     sync.Mutex
	byWd   map[int32]string // watch descriptor -> absolute directory
	byPath map[string]int32

	// rmu is held while events are taken from the queue and handed on,
	// by the reader or by drain: once drain holds it, no event taken
	// from the queue is still on its way.
	rmu sync.Mutex
	buf [64 << 10]byte // guarded by rmu

	done chan struct{} // the reader has returned
}

// Not IN_EXCL_UNLINK: it also hides the events of unnamed files
// (O_TMPFILE), and the close of the one docstore links in place as a new
// document is what tells that the document is complete (FSWatcher's
// linkedClosed); without it every engine create waited out the settle
// time.
const inotifyMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// Replaceable by tests, to inject the kernel's failures at the system
// call boundary (ENOSPC from a watch limit, EMFILE from an instance
// limit) without lowering a limit shared by the whole machine.
var (
	inotifyInit     = func() (int, error) { return unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC) }
	inotifyAddWatch = unix.InotifyAddWatch
)

func newNotifier(onEvent func(rawEvent), onError func(error)) (notifier, error) {
	fd, err := inotifyInit()
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	n := &inotify{
		// Non-blocking: the runtime's poller wakes the reader, and Close
		// interrupts it.
		f: os.NewFile(uintptr(fd), "inotify"), fd: fd,
		onEvent: onEvent, onError: onError,
		byWd: map[int32]string{}, byPath: map[string]int32{},
		done: make(chan struct{}),
	}
	if n.rc, err = n.f.SyscallConn(); err != nil {
		n.f.Close()
		return nil, err
	}
	go n.read()
	return n, nil
}

func (n *inotify) closeInfo() bool { return true }

func (n *inotify) add(dir string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	wd, err := inotifyAddWatch(n.fd, dir, inotifyMask)
	if err != nil {
		return os.NewSyscallError("inotify_add_watch", err)
	}
	w := int32(wd)
	if old, ok := n.byWd[w]; ok && old != dir {
		// The same directory under a new name (moved): one watch.
		delete(n.byPath, old)
	}
	n.byWd[w] = dir
	n.byPath[dir] = w
	return nil
}

func (n *inotify) remove(dir string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w, ok := n.byPath[dir]
	if !ok {
		return
	}
	delete(n.byPath, dir)
	delete(n.byWd, w)
	_, _ = unix.InotifyRmWatch(n.fd, uint32(w))
}

// pending reports whether events are queued in the kernel.
func (n *inotify) pending() bool {
	c, err := unix.IoctlGetInt(n.fd, unix.TIOCINQ) // FIONREAD
	return err == nil && c > 0
}

func (n *inotify) close() error {
	n.closing.Store(true)
	err := n.f.Close()
	<-n.done
	return err
}

// read hands on events as they come. It waits for the descriptor to be
// readable without holding rmu, so drain never waits for a new event.
func (n *inotify) read() {
	defer close(n.done)
	var rerr error
	err := n.rc.Read(func(fd uintptr) bool {
		n.rmu.Lock()
		rerr = n.readQueued(int(fd))
		n.rmu.Unlock()
		return rerr != nil // nil: queue empty, wait until readable
	})
	if err == nil {
		err = rerr
	}
	if n.closing.Load() || errors.Is(err, os.ErrClosed) {
		return
	}
	n.onError(os.NewSyscallError("read", err))
}

// drain hands on every queued event now (see notifier).
func (n *inotify) drain() {
	_ = n.rc.Control(func(fd uintptr) { // fails only once closed
		n.rmu.Lock()
		defer n.rmu.Unlock()
		_ = n.readQueued(int(fd)) // an error is the reader's to report
	})
}

// readQueued reads and hands on events until the queue is empty. rmu
// is held.
func (n *inotify) readQueued(fd int) error {
	for {
		c, err := unix.Read(fd, n.buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil
		case err != nil:
			return err
		case c <= 0:
			return errors.New("inotify: empty read")
		}
		for off := 0; off+unix.SizeofInotifyEvent <= c; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&n.buf[off]))
			name := n.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			n.handle(ev.Wd, ev.Mask, ev.Cookie, string(name))
		}
	}
}

func (n *inotify) handle(wd int32, mask, cookie uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		n.onError(ErrOverflow)
		return
	}
	n.mu.Lock()
	dir, ok := n.byWd[wd]
	if mask&unix.IN_IGNORED != 0 && ok {
		// The watch is gone (its directory was deleted, or removed).
		delete(n.byWd, wd)
		if n.byPath[dir] == wd {
			delete(n.byPath, dir)
		}
	}
	n.mu.Unlock()
	if !ok || mask&unix.IN_IGNORED != 0 {
		return
	}
	path := dir
	if name != "" {
		path = dir + "/" + name
	}
	var op evOp
	if mask&unix.IN_ISDIR != 0 {
		op |= evDir
	}
	if mask&unix.IN_CREATE != 0 {
		op |= evCreate
	}
	if mask&unix.IN_MOVED_TO != 0 {
		op |= evMovedIn
	}
	if mask&unix.IN_MODIFY != 0 {
		op |= evWrite
	}
	if mask&unix.IN_CLOSE_WRITE != 0 {
		op |= evCloseWrite
	}
	if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
		op |= evRemove
	}
	if mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
		op |= evMovedOut
	}
	if mask&unix.IN_ATTRIB != 0 {
		op |= evAttrib
	}
	n.onEvent(rawEvent{path: path, op: op, cookie: cookie})
}
