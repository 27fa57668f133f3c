package main

// Multi-process CLI tests of supervision (issue 13): a SIGKILLed spawn
// wrapper, seen by queue ls and reaped by a running watch.

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
)

// After a wrapper is SIGKILLed, queue ls shows its holder dead, and a
// running `tavern watch` returns the item to pending (and marks the agent
// failed) without anyone taking or reaping.
func TestDeadHolderShownAndReapedInBackground(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	id := strings.TrimSpace(p.ok("queue", "add", "q"))
	w := p.tavern("spawn", "--name", "d1", "--queue", "q", "--", "sleep", "600")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	exists := func(rel string) bool { _, err := os.Stat(p.path(rel)); return err == nil }
	poll(t, "the claim", func() bool { return exists("queues/q/claimed/" + id + ".md") })
	poll(t, "the child", func() bool { return strings.Contains(p.read("agents/d1.md"), "\npid: ") })
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	poll(t, "queue ls to show the holder dead", func() bool {
		var stats []struct {
			DeadOwners map[string]int `json:"dead_owners"`
		}
		if err := json.Unmarshal([]byte(p.ok("queue", "ls", "q", "--json")), &stats); err != nil {
			t.Fatal(err)
		}
		return stats[0].DeadOwners["d1"] == 1
	})
	if out := p.ok("queue", "ls", "q"); !strings.Contains(out, "d1(1, 1 dead)") {
		t.Errorf("queue ls does not show d1 dead:\n%s", out)
	}
	watch := p.tavern("watch")
	stderr, _ := watch.StderrPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { watch.Process.Kill(); watch.Wait() }()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	poll(t, "watch to reap the item", func() bool { return exists("queues/q/pending/" + id + ".md") })
	if st := p.agentState("d1"); st != "failed" {
		t.Errorf("agent d1 is %s after the reap, want failed", st)
	}
}
