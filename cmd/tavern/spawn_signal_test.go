package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSpawn starts `tavern spawn args...` and returns it with a channel
// of its exit code (-1: it did not run to an exit).
func startSpawn(t *testing.T, p *project, args ...string) (*exec.Cmd, <-chan int, *bytes.Buffer) {
	t.Helper()
	w := p.tavern(append([]string{"spawn"}, args...)...)
	var errb bytes.Buffer
	w.Stderr = &errb
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Process.Kill() })
	exited := make(chan int, 1)
	go func() {
		err := w.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			exited <- 0
		case errors.As(err, &ee):
			exited <- ee.ExitCode()
		default:
			exited <- -1
		}
	}()
	return w, exited, &errb
}

// readPid polls file for the pid a child wrote.
func readPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	poll(t, "the child to start", func() bool {
		data, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// awaitExit waits for the wrapper's exit, bounded: the bug was a wrapper
// that never exits.
func awaitExit(t *testing.T, exited <-chan int, errb *bytes.Buffer, bound time.Duration) int {
	t.Helper()
	select {
	case code := <-exited:
		return code
	case <-time.After(bound):
		t.Fatalf("the wrapper did not exit within %s\n%s", bound, errb.String())
	}
	return 0
}

// A SIGTERM to the wrapper of a stopped child (SIGSTOP, Ctrl-Z) was
// forwarded without SIGCONT: the child kept it pending, and the wrapper
// waited for ever. Now the child gets SIGCONT after it and exits.
func TestSpawnInterruptStoppedChild(t *testing.T) {
	p := newProject(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	w, exited, errb := startSpawn(t, p, "--name", "s", "--kill-grace", "0", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
	child := readPid(t, pidFile)
	if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the child to stop", func() bool {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil {
			return false
		}
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		return len(f) > 0 && f[0] == "T"
	})
	_ = w.Process.Signal(syscall.SIGTERM)
	if code := awaitExit(t, exited, errb, 20*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d\n%s", code, 128+int(syscall.SIGTERM), errb.String())
	}
	if st := p.agentState("s"); st != "idle" {
		t.Fatalf("agent state %s, want idle", st)
	}
}

// A child that ignores SIGTERM kept its wrapper (and a pool's second
// Ctrl-C) waiting with no end: after --kill-grace the wrapper SIGKILLs
// its group, and the run is interrupted (its item released).
func TestSpawnKillGraceEscalates(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q", "--title", "x")
	pidFile := filepath.Join(t.TempDir(), "pid")
	w, exited, errb := startSpawn(t, p, "--name", "d", "--queue", "q", "--kill-grace", "1s", "--",
		"sh", "-c", "trap '' TERM; echo $$ > "+pidFile+"; while :; do sleep 1; done")
	readPid(t, pidFile)
	_ = w.Process.Signal(syscall.SIGTERM)
	if code := awaitExit(t, exited, errb, 20*time.Second); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d, want %d (killed after the grace)\n%s", code, 128+int(syscall.SIGKILL), errb.String())
	}
	if !strings.Contains(errb.String(), "released") {
		t.Fatalf("the run was not released:\n%s", errb.String())
	}
	if out := p.ok("queue", "ls", "q", "--json"); !strings.Contains(out, `"ready":1`) && !strings.Contains(out, `"ready": 1`) {
		t.Fatalf("the item is not back in the queue:\n%s", out)
	}
}
