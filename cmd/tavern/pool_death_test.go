package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A SIGKILLed `pool run` left its drones running: idle ones waited out
// their --wait, a busy one ran its command on with nobody to supervise
// it. They are now interrupted as by a second Ctrl-C (Linux Pdeathsig):
// the busy drone's command gets SIGTERM and its item is released, not
// failed, the idle one claims nothing, and no process of theirs remains.
// The store needs doctor only for the pool's own document (dead-pool),
// and the item is then done exactly once by the next run.
func TestPoolKilledTakesItsDrones(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	var added struct{ ID string }
	p.json(&added, "queue", "add", "q", "--title", "x")
	busy := filepath.Join(t.TempDir(), "busy")
	pool := p.tavern("pool", "run", "p", "--queue", "q", "--min", "2", "--max", "2", "--on-empty", "idle", "--idle-wait", "5m", "--quiet",
		"--", "sh", "-c", "echo $$ > "+busy+".tmp && mv "+busy+".tmp "+busy+" && exec sleep 300")
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Process.Kill(); _ = pool.Wait() })
	var drones []int
	cmdPid := 0
	poll(t, "two drones, one running the item's command", func() bool {
		drones = childPids(pool.Process.Pid)
		data, err := os.ReadFile(busy)
		if err == nil {
			cmdPid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		return len(drones) == 2 && err == nil
	})
	procs := append(drones, cmdPid)
	// Pidfds before the kill: a pid reused meanwhile is not waited for.
	fds := pidfds(t, procs)
	t.Cleanup(func() { // on failure, nothing left behind
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	_ = pool.Process.Kill()
	_ = pool.Wait()
	// Bounded: kill-grace (10s) is the longest a drone may take.
	if left := awaitExits(fds, 30*time.Second); len(left) > 0 {
		t.Fatalf("processes of the pool's drones still running 30s after it was SIGKILLed: %v (drones %v, command %d)", left, drones, cmdPid)
	}

	var it itemShow
	p.json(&it, "item", "show", added.ID)
	if it.State != "pending" || it.Fields.Last_error != "" || it.Fields.Attempts != 0 {
		t.Fatalf("item after its pool was killed: %+v, want pending, released (no failure)", it)
	}
	for _, name := range []string{"p-1", "p-2"} {
		if st := p.agentState(name); st == "working" || st == "failed" {
			t.Errorf("agent %s after its pool was killed: %s, want the state of an interrupted run", name, st)
		}
	}
	r := p.fails(5, "doctor")
	if strings.Count(strings.TrimSpace(r.out), "\n") != 0 || !strings.Contains(r.out, "dead-pool pools/p.md") {
		t.Fatalf("doctor after the pool was killed: want the dead pool only\n%s", r)
	}
	p.ok("doctor", "--fix")
	if r := p.run("doctor"); r.code != 0 || r.out != "" || !strings.Contains(r.err, "nothing found") {
		t.Fatalf("doctor after --fix (want nothing on stdout, nothing found on stderr):\n%s", r)
	}
	var mt struct{ Items_done int }
	out := p.ok("pool", "run", "p", "--queue", "q", "--on-empty", "terminate", "--json", "--", "true")
	if err := json.Unmarshal([]byte(out), &mt); err != nil {
		t.Fatalf("pool run --json: %v\n%s", err, out)
	}
	if mt.Items_done != 1 {
		t.Fatalf("the next run of the pool did %d items, want 1", mt.Items_done)
	}
	if log := p.ok("log", "--type", "item.completed", "--json"); strings.Count(log, `"item":"`+added.ID+`"`) != 1 {
		t.Fatalf("item %s completed other than once:\n%s", added.ID, log)
	}
}

// itemShow is what the tests read of `item show --json`.
type itemShow struct {
	State  string
	Fields struct {
		Last_error string
		Attempts   int
	}
}

// childPids lists the processes whose parent is pid (from /proc).
func childPids(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
			out = append(out, n)
		}
	}
	return out
}

// pidfds opens a pidfd of each process (closed when the test ends).
func pidfds(t *testing.T, pids []int) map[int]int {
	t.Helper()
	fds := map[int]int{}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open %d: %v", pid, err)
		}
		fds[pid] = fd
		t.Cleanup(func() { unix.Close(fd) })
	}
	return fds
}

// awaitExits waits up to d for the processes of fds (pid -> pidfd) to
// exit (a pidfd polls readable then, zombie or reaped) and returns those
// still running.
func awaitExits(fds map[int]int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	var left []int
	for pid, fd := range fds {
		for {
			ms := int(time.Until(deadline).Milliseconds())
			if ms < 0 {
				ms = 0
			}
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
			if err == unix.EINTR {
				continue
			}
			if n == 0 || err != nil {
				left = append(left, pid)
			}
			break
		}
	}
	return left
}
