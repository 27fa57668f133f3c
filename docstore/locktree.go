package docstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Inheritable locks. A flock belongs to an open file description, which
// a child process shares when it inherits the descriptor: the lock then
// stays held until every process holding that description has closed it
// or died. The spawn wrapper takes its instance's liveness lock this way
// and hands the descriptor to its child (and so to the child's whole
// tree), so a claim tied to the lock stays alive exactly as long as any
// process that may still be executing it.

// TryLockInheritable takes the lock for key if it is free, on a
// descriptor of its own (never the Store's lock cache) that File returns
// for a child to inherit (exec.Cmd.ExtraFiles). Unlock releases the lock
// for every process sharing the descriptor; Remove deletes the file too.
func (s *Store) TryLockInheritable(key string) (l *Lock, ok bool, err error) {
	return s.pastProbes(key, func() (*Lock, bool, error) { return s.tryLockInheritable(key) })
}

func (s *Store) tryLockInheritable(key string) (l *Lock, ok bool, err error) {
	path, err := s.lockPath(key)
	if err != nil {
		return nil, false, err
	}
	for {
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return nil, false, pathErr("lock", key, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return nil, false, pathErr("lock", key, err)
		}
		err = flockNB(int(f.Fd()))
		if err == unix.EWOULDBLOCK {
			f.Close()
			return nil, false, nil
		}
		if err != nil {
			f.Close()
			return nil, false, pathErr("lock", key, err)
		}
		// Removed (by Remove, under its lock) between our open and our
		// flock: a lock on an orphaned inode. Retry on the new file.
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) == nil && st.Nlink > 0 {
			return &Lock{file: f, Key: key, path: path}, true, nil
		}
		f.Close()
	}
}

func flockNB(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

// HandOff closes this process's descriptor of a lock taken with
// TryLockInheritable without unlocking it: flock belongs to the open file
// description, which a child that inherited the descriptor keeps open, so
// the lock stays held — by the child alone now (Unlock would release it
// for the child too). For other locks it is Unlock.
func (l *Lock) HandOff() error {
	if l == nil || l.file == nil {
		return l.Unlock()
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// AdoptLock takes over a lock a parent took with TryLockInheritable and
// handed down as f: it checks that f is key's lock file (same inode) and
// that its open file description holds the flock (locking it again is a
// no-op for the holder and fails for anyone else), and returns it as a
// Lock; Unlock closes f. Anything else is an error and f is closed.
func (s *Store) AdoptLock(key string, f *os.File) (*Lock, error) {
	path, err := s.lockPath(key)
	if err != nil {
		f.Close()
		return nil, err
	}
	var want, got unix.Stat_t
	if err := unix.Stat(path, &want); err != nil {
		f.Close()
		return nil, pathErr("adopt lock", key, err)
	}
	if err := unix.Fstat(int(f.Fd()), &got); err != nil || got.Ino != want.Ino || got.Dev != want.Dev {
		f.Close()
		return nil, pathErr("adopt lock", key, fmt.Errorf("%w: the descriptor handed down is not this lock's file", ErrLost))
	}
	if err := flockNB(int(f.Fd())); err != nil {
		f.Close()
		return nil, pathErr("adopt lock", key, fmt.Errorf("%w: the descriptor handed down does not hold the lock", ErrLost))
	}
	return &Lock{file: f, Key: key, path: path}, nil
}

// File returns the descriptor of a lock taken with TryLockInheritable (nil
// for other locks), for a child process to inherit.
func (l *Lock) File() *os.File {
	if l == nil {
		return nil
	}
	return l.file
}

// ErrNoProc is returned by LockHolders where processes' open files
// cannot be listed (no /proc: not Linux).
var ErrNoProc = errors.New("cannot list the processes holding a file open (no /proc)")

// LockHolders returns the ids of the processes that hold the lock of key:
// those with a descriptor of the open file description that holds the
// flock (Linux: /proc/<pid>/fd and fdinfo, whose "lock:" line the kernel
// shows only for the locked description; ErrNoProc elsewhere). A process
// that merely has the lock file open (a liveness check, a cached
// descriptor) is not a holder. Processes this one may not inspect
// (another user's, without privileges) are not listed.
func (s *Store) LockHolders(key string) ([]int, error) {
	path, err := s.lockPath(key)
	if err != nil {
		return nil, err
	}
	var want unix.Stat_t
	if err := unix.Stat(path, &want); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, pathErr("lock", key, err)
	}
	if runtime.GOOS != "linux" {
		return nil, ErrNoProc
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, ErrNoProc
	}
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + p.Name()
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue // gone, or not ours to look at
		}
		for _, fd := range fds {
			var st unix.Stat_t
			if unix.Stat(dir+"/fd/"+fd.Name(), &st) != nil || st.Ino != want.Ino || st.Dev != want.Dev {
				continue
			}
			if holdsFlock(dir + "/fdinfo/" + fd.Name()) {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}

// holdsFlock reports whether an fdinfo file lists a flock held through
// that descriptor's open file description.
func holdsFlock(fdinfo string) bool {
	data, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "lock:") && strings.Contains(line, "FLOCK") {
			return true
		}
	}
	return false
}

// KillLockHolders SIGKILLs the processes other than this one that hold
// the lock of key, and the process groups they lead (a spawn child's
// group, whose members may have closed the descriptor), then waits up to
// grace for the lock to come free. It returns the pids killed, and
// whether the lock is free at the end. A reaper that takes a claim from a
// holder that is alive but hung (a stopped wrapper: its child may still
// be executing the item) uses it so that the item is never handed out
// while an earlier execution runs. ErrNoProc where holders cannot be
// found (not Linux).
func (s *Store) KillLockHolders(key string, grace time.Duration) ([]int, bool, error) {
	var killed []int
	deadline := time.Now().Add(grace)
	for {
		holders, err := s.LockHolders(key)
		if err != nil {
			return killed, false, err
		}
		holders = slices.DeleteFunc(holders, func(p int) bool { return p == os.Getpid() })
		if len(holders) == 0 {
			free, err := s.LockFree(key)
			return killed, err == nil && free, err
		}
		if time.Now().After(deadline) {
			return killed, false, nil
		}
		for _, p := range holders {
			if !slices.Contains(killed, p) {
				killed = append(killed, p)
			}
			if g, err := unix.Getpgid(p); err == nil && g == p {
				_ = unix.Kill(-g, unix.SIGKILL)
			}
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond) // SIGKILLed processes release their files as they exit
	}
}
