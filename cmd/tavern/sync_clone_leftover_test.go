package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// leftover makes the .tavern.clone-<pid>/ a `sync --clone` of process
// pid, killed mid-way, leaves next to where .tavern/ goes.
func leftover(t *testing.T, dir string, pid int) string {
	t.Helper()
	p := filepath.Join(dir, ".tavern.clone-"+strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(p, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "agents", "ann.md"), []byte("---\nname: ann\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A killed `sync --clone` left .tavern.clone-<pid>/ (a whole copy of the
// store) for ever: the next clone there removes a dead process's
// leftover, and doctor reports one next to a store (--fix removes it).
// A live process's (a clone under way) is left alone by both.
func TestSyncCloneLeftover(t *testing.T) {
	t.Parallel()
	remote := bareRemote(t)
	p := newProject(t)
	p.env = append(p.env, "TAVERN_SYNC_REMOTE="+remote)
	p.ok("sync")

	q := &project{t: t, dir: t.TempDir()}
	dead := leftover(t, q.dir, deadPID(t))
	alive := leftover(t, q.dir, os.Getpid())
	q.ok("sync", "--clone", remote)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("clone: a dead clone's leftover %s is still there (%v)", dead, err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("clone: a live clone's directory was removed: %v", err)
	}

	dead = leftover(t, p.dir, deadPID(t))
	leftover(t, p.dir, os.Getpid())
	var rep struct {
		Findings []struct{ Kind, Path string }
	}
	r := p.run("doctor", "--json")
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 5 || len(rep.Findings) != 1 || rep.Findings[0].Kind != "clone-leftover" {
		t.Fatalf("doctor: got %+v (%v), want one clone-leftover finding, exit 5: %s", rep.Findings, err, r)
	}
	p.ok("doctor", "--fix")
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("doctor --fix: leftover %s is still there (%v)", dead, err)
	}
}
