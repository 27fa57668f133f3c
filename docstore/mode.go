package docstore

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// File modes. A rewrite keeps the permission bits of the file it
// replaces (a document someone made 0600 stays 0600 through set, claims,
// moves and appends); a new file gets 0666 minus the process umask, like
// any file a shell creates, so a store shared by a group (umask 002)
// stays writable by the group. Lock files follow the umask too.

// newFilePerm is the mode of a new file: 0666 &^ umask.
func newFilePerm() uint32 { return 0o666 &^ processUmask() }

// processUmask reads the umask without changing it (Linux 4.7+ reports
// it in /proc/self/status); elsewhere it sets and restores it once, at
// first use.
var processUmask = sync.OnceValue(func() uint32 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	m := unix.Umask(0o022)
	unix.Umask(m)
	return uint32(m)
})

// permOf is the permission bits a write of d must give its file: the
// mode of the file d was read from, or the new-file mode.
func permOf(d *Doc) uint32 {
	if d != nil && d.perm != 0 {
		return d.perm & 0o777
	}
	return newFilePerm()
}

// fchmodTo sets fd's permission bits to perm unless they are already.
func fchmodTo(fd int, perm uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&0o777 == perm {
		return nil
	}
	for {
		if err := unix.Fchmod(fd, perm); err != unix.EINTR {
			return err
		}
	}
}
