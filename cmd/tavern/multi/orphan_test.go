package multi

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const orphanHelperEnv = "TAVERN_MULTI_ORPHAN_HELPER"

// TestOrphanHelper is not a test of its own: TestWorkersDieWithTest runs
// it in a child test process, which starts a worker loop the way
// cluster.run does, prints its pid and waits to be killed.
func TestOrphanHelper(t *testing.T) {
	if os.Getenv(orphanHelperEnv) == "" {
		t.Skip("run by TestWorkersDieWithTest")
	}
	root := t.TempDir()
	c := &cluster{t: t, root: root, stop: root + "/STOP", log: root + "/log"}
	m := &machine{name: "m0", dir: root}
	w := c.start(m, []string{"TAVERN=/bin/false", "LOG=" + c.log, "STOP=" + c.stop, "W=m0.0", "ERRLOG=/dev/null"},
		"sh", "-c", workerScript)
	fmt.Printf("worker %d\n", w.Process.Pid)
	select {}
}

// TestWorkersDieWithTest: a test process that dies without its cleanups
// (killed, or a timeout's panic) takes its worker loops with it. They
// used to run on for ever, orphaned, after `go test`'s timeout killed
// TestMultiMachineDies*.
func TestWorkersDieWithTest(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "worker ")))
	if err != nil {
		t.Fatalf("helper printed %q", line)
	}
	// Whatever happens below, the worker goes.
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("worker %d not running before its test process was killed", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d still running 10s after its test process was killed", pid)
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for a reaper has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
