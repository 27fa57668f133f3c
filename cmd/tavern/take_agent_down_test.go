package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An agent whose spawn wrapper died (SIGKILL: it could not say so) is
// still working in its document until a reaper marks it failed; a take
// for it meanwhile is refused (exit 4) as a failed agent's is, naming the
// dead wrapper and how to revive it; the item stays pending. After the
// reap it is failed (still refused), and a spawn of the name revives it
// and takes. The take claimed the item for an agent nobody runs.
func TestTakeRefusesDeadAgent(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	id := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "one"))
	ready := filepath.Join(t.TempDir(), "ready")
	w := p.tavern("spawn", "--name", "bob", "--", "sh", "-c", `touch "$READY"; exec sleep 60`)
	w.Env = append(w.Env, "READY="+ready)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the child to start", func() bool { _, err := os.Stat(ready); return err == nil })
	kids := childPids(w.Process.Pid)
	w.Process.Signal(syscall.SIGKILL)
	_ = w.Wait()
	// The child dies with its wrapper (Pdeathsig): the instance's lock is
	// free once it has.
	poll(t, "the child to die with its wrapper", func() bool {
		for _, pid := range kids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	if st := p.agentState("bob"); st != "working" {
		t.Fatalf("bob is %s after its wrapper died, want working (not reaped yet)", st)
	}

	r := p.fails(4, "queue", "take", "q", "--as", "bob")
	for _, want := range []string{"agent is down: bob is working but its spawn wrapper", "is gone", "tavern agent reap", "tavern spawn --name bob"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("take's error %q does not say %q", r.err, want)
		}
	}
	if _, err := os.Stat(p.path("queues/q/pending/" + id + ".md")); err != nil {
		t.Fatalf("the item is not pending after the refused take: %v", err)
	}

	p.ok("agent", "reap")
	r = p.fails(4, "queue", "take", "q", "--as", "bob")
	if !strings.Contains(r.err, "agent is down: bob is failed") {
		t.Errorf("take's error after the reap %q does not say the agent is failed", r.err)
	}

	p.ok("spawn", "--name", "bob", "--queue", "q", "--", "true")
	if doc := p.read("queues/q/done/" + id + ".md"); !strings.Contains(doc, "claimed_by: bob") {
		t.Fatalf("the respawned agent did not do the item:\n%s", doc)
	}
}
