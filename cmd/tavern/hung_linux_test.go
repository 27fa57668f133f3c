//go:build linux

package main

import (
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
