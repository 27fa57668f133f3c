package docstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// A lock's note is a few bytes its holder writes into the lock file, for
// others to read while it holds it: a pool run's digest of its drones'
// admission token (agents.CheckPoolAdmission). The flock is on the
// inode, so the file's content is free; nothing else writes it.

// maxLockNote bounds a note: a digest, not a document.
const maxLockNote = 4096

// WriteNote replaces the note of a lock this Lock holds (nil clears it).
func (l *Lock) WriteNote(note []byte) error {
	if !l.Held() {
		return pathErr("lock note", l.Key, ErrLost)
	}
	if len(note) > maxLockNote {
		return pathErr("lock note", l.Key, ErrNoteTooLarge)
	}
	// No O_CREAT: the file is the held lock's, never a new one.
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return pathErr("lock note", l.Key, unwrapPath(err))
	}
	if _, err := f.Write(note); err != nil {
		f.Close()
		return pathErr("lock note", l.Key, err)
	}
	return f.Close()
}

// LockNote reads the note of the lock of key ("" when the lock file does
// not exist or has none). It does not say whether the lock is held: ask
// LockFree.
func (s *Store) LockNote(key string) ([]byte, error) {
	path, err := s.lockPath(key)
	if err != nil {
		return nil, err
	}
	fd, err := openRaw(path, unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, pathErr("lock note", key, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	buf := make([]byte, maxLockNote+1)
	n, err := f.Read(buf)
	if n == 0 && err != nil {
		return nil, nil // empty
	}
	return buf[:n], nil
}
