package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// A spawn of an agent whose last wrapper was killed, made while a reaper
// holds the agent's lock to mark it failed (a pool replacing a crashed
// drone while its own reaper runs), waits for the reaper instead of
// refusing: the lock is not a live wrapper's, and "busy" would be a lie
// (a pool counts the refused drone as crashed and backs off).
func TestSpawnWaitsForReaper(t *testing.T) {
	p := newProject(t)
	// A wrapper killed mid-run: the document still says working on this
	// host, the instance it names is over.
	if r := p.run("spawn", "--name", "d", "--", "sh", "-c", "kill -9 $PPID"); r.code == 0 {
		t.Fatalf("the wrapper was not killed: %s", r)
	}
	if st := p.agentState("d"); st != "working" {
		t.Fatalf("state after the wrapper was killed: %s, want working", st)
	}
	s, err := docstore.Open(p.path(""))
	if err != nil {
		t.Fatal(err)
	}
	// What a reaper does before it takes the agent's lock: the dead
	// instance's tree is gone (here: the child, killed with its wrapper).
	var a struct{ Fields struct{ Instance string } }
	p.json(&a, "show", "agents/d")
	poll(t, "the dead instance's tree to exit", func() bool {
		free, err := s.LockFree(schema.InstanceLockKey(a.Fields.Instance))
		return err == nil && free
	})
	key := schema.AgentLockKey("d")
	reaper, err := s.Lock(key) // this test is the reaper, mid-reap
	if err != nil {
		t.Fatal(err)
	}
	w := p.tavern("spawn", "--name", "d", "--json", "--", "true")
	var out, errb bytes.Buffer // read after Wait
	w.Stdout, w.Stderr = &out, &errb
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.Wait() }()
	lockFile := p.path(".locks/agents/d.lock")
	var werr error
	done := false
	poll(t, "the spawn to try the agent's lock", func() bool {
		select {
		case werr = <-exited:
			done = true
			return true
		default:
		}
		return hasOpen(w.Process.Pid, lockFile)
	})
	if done {
		t.Fatalf("spawn gave up while a reaper held the lock: %v\nstdout:\n%s\nstderr:\n%s", werr, out.String(), errb.String())
	}
	reaper.Unlock()
	if werr = <-exited; werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			t.Fatalf("spawn after the reaper: exit %d\nstdout:\n%s\nstderr:\n%s", ee.ExitCode(), out.String(), errb.String())
		}
		t.Fatal(werr)
	}
	if st := p.agentState("d"); st != "done" {
		t.Fatalf("state after the spawn: %s, want done", st)
	}
}

// hasOpen reports whether process pid has file open.
func hasOpen(pid int, file string) bool {
	want, err := os.Stat(file)
	if err != nil {
		return false
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, _ := os.ReadDir(dir)
	for _, fd := range fds {
		if fi, err := os.Stat(filepath.Join(dir, fd.Name())); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}
