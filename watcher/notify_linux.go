//go:build linux

package watcher

import (
	"errors"
	"os"
	"sync"
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
	onEvent func(rawEvent)
	onError func(error)

	mu     sync.Mutex
	byWd   map[int32]string // watch descriptor -> absolute directory
	byPath map[string]int32

	done chan struct{} // the reader has returned
}

const inotifyMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

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
	err := n.f.Close()
	<-n.done
	return err
}

func (n *inotify) read() {
	defer close(n.done)
	var buf [64 << 10]byte
	for {
		c, err := n.f.Read(buf[:])
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			n.onError(err)
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= c; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
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
