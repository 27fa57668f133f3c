package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe raises the capacity of f, when it is a pipe, to hold n bytes
// (at most 1 MiB, the unprivileged limit): a listing of megabytes
// written into a 64 KiB pipe stalls at every 64 KiB until the reader
// (jq, a test harness) has drained it. Not a pipe, or not allowed: a
// no-op.
func growPipe(f *os.File, n int) {
	const most = 1 << 20
	if n <= 64<<10 {
		return
	}
	_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, min(n, most))
}
