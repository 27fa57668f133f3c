package storetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchDir returns a fresh, empty directory on the work disk for one
// benchmark run: under $TAVERN_BENCH_DIR if set, else under
// <module root>/.bench/tmp (gitignored), next to the code on the disk a
// store would live on. The directory is deliberately not removed (see the
// package caveats). It falls back to b.TempDir() if no module root is
// found, and logs when the directory is on tmpfs, where the figures are
// not disk figures.
func BenchDir(b *testing.B) string {
	b.Helper()
	base := os.Getenv("TAVERN_BENCH_DIR")
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			b.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				base = filepath.Join(d, ".bench", "tmp")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if base == "" {
		return b.TempDir()
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		b.Fatal(err)
	}
	name := strings.NewReplacer("/", "_", "=", "").Replace(b.Name())
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		b.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && st.Type == 0x01021994 { // TMPFS_MAGIC
		b.Logf("%s is on tmpfs: fsync costs nothing here, figures are not disk figures", dir)
	}
	return dir
}

// ReportOpsPerSec reports ops/s over the benchmark timer's elapsed time,
// so setup done with the timer stopped is excluded. cmd/benchreport pairs
// benchmarks by this metric.
func ReportOpsPerSec(b *testing.B, ops int) {
	b.Helper()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(ops)/s, "ops/s")
	}
}

// CPU is the process's CPU time so far, user and system apart: with
// the system calls of two protocols alike, the user part is what an
// implementation's own work costs.
type CPU struct{ User, Sys time.Duration }

// CPUNow reads the process's CPU time (getrusage RUSAGE_SELF).
func CPUNow(tb testing.TB) CPU {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return CPU{User: time.Duration(ru.Utime.Nano()), Sys: time.Duration(ru.Stime.Nano())}
}

// ReportCPU reports the CPU time since start per op: cpu-µs/op (user
// plus system; CPU per cycle moves far less than cycles/s when other
// work shares the machine) and user-µs/op.
func ReportCPU(b *testing.B, start CPU, ops int) {
	b.Helper()
	if ops <= 0 {
		return
	}
	now := CPUNow(b)
	user, sys := now.User-start.User, now.Sys-start.Sys
	b.ReportMetric(float64((user+sys).Microseconds())/float64(ops), "cpu-µs/op")
	b.ReportMetric(float64(user.Microseconds())/float64(ops), "user-µs/op")
}

// helperEnv names a helper process's role. One name for every package:
// a test binary is only ever re-executed by its own tests.
const helperEnv = "TAVERN_TEST_HELPER"

// HelperRole returns the role this process was started in by
// HelperCommand, or "" in an ordinary test run.
func HelperRole() string { return os.Getenv(helperEnv) }

// HelperCommand returns a command that runs this test binary again as a
// helper process in role. run is the -test.run pattern of the helper's
// entry point: its TestXxxHelper function, or "^$" when TestMain
// dispatches on HelperRole. env (KEY=VALUE) is added to this process's
// environment. The helper's stderr is the test's; set cmd.Stderr to
// capture it instead.
func HelperCommand(tb testing.TB, run, role string, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	return cmd
}
