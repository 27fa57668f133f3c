package watcher

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"
)

// direntBufs holds getdents64 buffers.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDir lists the directory abs (without "." and ".."), in the order
// the kernel gives. hint is the number of entries expected (the known
// children), to size the result once. An entry the filesystem gives no
// type for is lstat'ed, as os.ReadDir does; one gone by then is left out.
func readDir(abs string, hint int) ([]dirent, error) {
	fd, err := openDir(abs)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	defer unix.Close(fd)
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	ents := make([]dirent, 0, hint+8)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: abs, Err: err}
		}
		if n <= 0 {
			return ents, nil
		}
		for b := buf[:n]; len(b) >= direntNameOff; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < direntNameOff || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: abs, Err: unix.EIO}
			}
			name := b[direntNameOff:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ, dt := fs.FileMode(0), b[18]
			b = b[reclen:]
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			if dt == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if err == unix.ENOENT {
						continue
					}
					return nil, &fs.PathError{Op: "lstat", Path: abs + "/" + string(name), Err: err}
				}
				dt = uint8((st.Mode & unix.S_IFMT) >> 12)
			}
			switch dt {
			case unix.DT_REG:
			case unix.DT_DIR:
				typ = fs.ModeDir
			case unix.DT_LNK:
				typ = fs.ModeSymlink
			case unix.DT_FIFO:
				typ = fs.ModeNamedPipe
			case unix.DT_SOCK:
				typ = fs.ModeSocket
			case unix.DT_CHR:
				typ = fs.ModeDevice | fs.ModeCharDevice
			case unix.DT_BLK:
				typ = fs.ModeDevice
			default:
				typ = fs.ModeIrregular
			}
			ents = append(ents, dirent{name: string(name), typ: typ})
		}
	}
}

// direntNameOff is where the name starts in a linux_dirent64.
const direntNameOff = 19

func openDir(abs string) (int, error) {
	for {
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
