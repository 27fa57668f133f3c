//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A stopped spawn wrapper (SIGSTOP) stops renewing its claim while its
// child keeps executing the item. Once the lease and the queue's
// lease_grace have passed the reaper takes the item back, and it must
// kill the instance's tree first: handed out with the child still
// running, the item would run twice at once (issue 13: "an item is never
// handed out while an earlier execution can still be running").
func TestHungWrapperTreeKilledBeforeReclaim(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q", "--lease", "1s", "--lease-grace", "1s")
	id := strings.TrimSpace(p.ok("queue", "add", "q"))
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	w := p.tavern("spawn", "--name", "st", "--queue", "q", "--", "sh", "-c", "echo $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; exec sleep 60")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	t.Cleanup(func() {
		w.Process.Kill()
		w.Wait()
		if child > 0 {
			syscall.Kill(child, syscall.SIGKILL)
		}
	})
	poll(t, "the child to start", func() bool {
		data, err := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && child > 0
	})
	if err := w.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pending := p.path("queues/q/pending/" + id + ".md")
	poll(t, "the reaper to take the hung item back", func() bool {
		p.ok("reap")
		_, err := os.Stat(pending)
		return err == nil
	})
	if alive(child) {
		t.Fatalf("item %s went back to pending while its execution (pid %d) still runs", id, child)
	}
	if data := p.read("queues/q/pending/" + id + ".md"); !strings.Contains(data, "were killed") {
		t.Fatalf("last_error does not say the hung tree was killed:\n%s", data)
	}
}

// `tavern doctor` after kill -9 of a spawn wrapper whose child's tree
// outlived it (Pdeathsig reaches the child only; a grandchild in its
// group keeps the instance lock and the item): doctor reports the dead
// wrapper and the orphaned processes (orphan-process), exits 5, changes
// nothing, and --fix kills them.
func TestDoctorReportsOrphanOfKilledWrapper(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q")
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	w := p.tavern("spawn", "--name", "o", "--queue", "q", "--", "sh", "-c", "sleep 60 & echo $! > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; wait")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var orphan int
	t.Cleanup(func() {
		if orphan > 0 {
			syscall.Kill(orphan, syscall.SIGKILL)
		}
	})
	poll(t, "the grandchild to start", func() bool {
		data, err := os.ReadFile(pidFile)
		orphan, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && orphan > 0
	})
	w.Process.Kill()
	w.Wait()
	if !alive(orphan) {
		t.Skip("the grandchild died with the wrapper: nothing outlived it")
	}
	r := p.run("doctor", "--json")
	if r.code != 5 {
		t.Fatalf("doctor: %v", r)
	}
	var rep struct {
		Findings []struct{ Kind, Path string }
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range rep.Findings {
		kinds[f.Kind+" "+f.Path] = true
	}
	if !kinds["dead-wrapper agents/o.md"] || !kinds["orphan-process agents/o.md"] {
		t.Fatalf("doctor findings %+v, want dead-wrapper and orphan-process of agents/o.md", rep.Findings)
	}
	if !alive(orphan) {
		t.Fatal("doctor without --fix killed the orphan")
	}
	p.ok("doctor", "--fix")
	if alive(orphan) {
		t.Fatalf("orphan %d still runs after doctor --fix", orphan)
	}
	if r := p.run("doctor"); r.code != 0 {
		t.Fatalf("doctor after --fix: %v", r)
	}
}
