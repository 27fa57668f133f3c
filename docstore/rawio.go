package docstore

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Raw file I/O for the hot paths. os.OpenFile on Linux tries to register
// every file with the netpoller: four fcntl and a failing epoll_ctl per
// open of a regular file, more than the open itself. Documents are read
// and spares rewritten with plain syscalls instead.

func openRaw(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// ReadFileAbs reads the regular file at full (an absolute path the caller
// has already checked is inside the store), refusing anything else and
// files over MaxDocSize. Errors are bare errnos or messages; callers add
// Op and Path. It opens with O_NONBLOCK so a FIFO cannot block the open,
// and checks the type on the open descriptor before reading.
func ReadFileAbs(full string) ([]byte, error) {
	fd, err := openRaw(full, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	data, _, err := readFD(fd)
	return data, err
}

// readFD reads the regular file open at fd and closes fd. perm is the
// file's permission bits (a rewrite keeps them).
func readFD(fd int) (data []byte, perm uint32, err error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return nil, 0, errors.New("is a directory")
	default:
		return nil, 0, errNotRegular
	}
	if st.Size > MaxDocSize {
		return nil, 0, errTooLarge{st.Size}
	}
	perm = st.Mode & 0o777
	data, err = readAllFD(fd, st.Size)
	return data, perm, err
}

// readAllFD reads fd (a regular file of size bytes by fstat) to its end.
func readAllFD(fd int, size int64) ([]byte, error) {
	buf := make([]byte, size+1) // +1: see EOF in one read when the size is right
	n := 0
	for {
		if n == len(buf) {
			if len(buf) > MaxDocSize {
				return nil, errTooLarge{int64(n)}
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
		if n < len(buf) {
			// A short read of a regular file is its end: no second read
			// to see 0 (the file is as long as fstat said, or shorter).
			break
		}
	}
	if n > MaxDocSize {
		return nil, errTooLarge{int64(n)}
	}
	return buf[:n], nil
}

var errNotRegular = errors.New("not a regular file")

type errTooLarge struct{ n int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("%d bytes is larger than the %d byte limit", e.n, MaxDocSize)
}

// rewriteAt overwrites the existing file name (relative to dirfd) with
// data from offset 0, truncates it to len(data) and, if sync, fsyncs it.
// opened is false when the open failed.
func rewriteAt(dirfd int, name string, data []byte, sync bool, perm uint32) (opened bool, err error) {
	var fd int
	for {
		fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return false, err
	}
	off := 0
	for off < len(data) {
		m, werr := unix.Pwrite(fd, data[off:], int64(off))
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			err = werr
			break
		}
		if m == 0 {
			err = unix.EIO
			break
		}
		off += m
	}
	if err == nil {
		// Shorten only a longer file: ftruncate costs more than the
		// fstat, and the new document is usually the longer one (a claim
		// or a completion adds fields to the copy it replaces).
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil && st.Size != int64(len(data)) {
			err = unix.Ftruncate(fd, int64(len(data)))
		}
		// A spare keeps the mode of the document it was: give it the
		// new document's.
		if err == nil && st.Mode&0o777 != perm {
			err = unix.Fchmod(fd, perm)
		}
	}
	if err == nil && sync {
		// fdatasync: the data and the size (needed to read it back) are
		// durable; only the timestamps may not be, which nothing reads.
		err = fdatasync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	return true, err
}

func fdatasync(fd int) error {
	for {
		if err := unix.Fdatasync(fd); err != unix.EINTR {
			return err
		}
	}
}
