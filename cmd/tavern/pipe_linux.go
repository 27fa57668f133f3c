package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe raises the capacity of f, when it is a pipe, to hold n bytes
// (at most 1 MiB, the unprivileged limit): a listing of megabytes
// written into a 64 KiB pipe stalls at every 64 KiB until the reader
// (jq, a test harness) has drained it. Never lowered: the reader may have
// made it bigger. Not a pipe, or not allowed: a no-op.
func growPipe(f *os.File, n int) {
	const most = 1 << 20
	if n <= 64<<10 {
		return
	}
	fd, want := f.Fd(), min(n, most)
	if size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err != nil || size >= want {
		return
	}
	_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, want)
}
