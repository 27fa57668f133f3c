package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/watcher/journal"
)

// A change that arrives from another machine through `tavern sync` is on
// `tavern watch` as `external` naming that machine (issue 20, README
// "Several machines"). Plain `watch` printed only the watcher's own
// doc.updated line, with no machine, and dropped the sync's external
// entry as a repeat of it: only `watch --type external` named the machine.
func TestWatchNamesSyncingMachine(t *testing.T) {
	t.Parallel()
	a, b := annOnAlphaAndBeta(t)

	w := watchJSON(t, a)
	b.ok("set", "agents/ann", "role=reviewer")
	b.ok("sync")
	a.ok("sync")

	// The round's own event is journaled after the changes it applied, and
	// the watch follows the journal in order: once it is printed, so is
	// (or is dropped) the external entry.
	w.waitEvent("the sync round", func(e journal.Event) bool { return e.Type == gitsync.EventSynced })
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if e.Type == journal.TypeExternal && e.Path == "agents/ann.md" && e.Data["machine"] == "beta" {
			return
		}
	}
	t.Errorf("watch printed no external entry naming beta for agents/ann.md:\n%s", describeEvents(w.events))
}

// waitEvent waits until the watch has printed an event (of any type)
// that satisfies pred.
func (w *watchProc) waitEvent(what string, pred func(journal.Event) bool) {
	w.t.Helper()
	deadline := time.After(120 * time.Second)
	for {
		w.mu.Lock()
		ended := w.ended
		for _, e := range w.events {
			if pred(e) {
				w.mu.Unlock()
				return
			}
		}
		w.mu.Unlock()
		if ended {
			w.t.Fatalf("watch ended while waiting for %s; stderr:\n%s", what, w.errText())
		}
		select {
		case <-w.change:
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			w.t.Fatalf("waiting for %s:\n%s", what, describeEvents(w.events))
		}
	}
}

// The documents `tavern sync --clone` brings are journaled by the clone
// as arrivals from the machine that last changed each (external, via
// clone), as a round journals what it applies. They were journaled by
// nobody: the clone's first watcher (watch, pool run, serve) took every
// document of the store for a hand edit, journaling an external
// doc.created naming no machine for each, which its next round pushed
// to every machine.
func TestCloneNotTakenForHandEdits(t *testing.T) {
	t.Parallel()
	_, b := annOnAlphaAndBeta(t)
	b.ok("set", "tavern.md", "external_grace="+journalGrace, "settle="+journalSettle)

	watchJSON(t, b)
	var got []journal.Event
	for _, e := range fence(t, b) {
		if e.Path == "agents/ann.md" {
			got = append(got, e)
		}
	}
	if len(got) != 1 || got[0].Data["machine"] != "alpha" || got[0].Data["op"] != journal.TypeCreated {
		t.Errorf("externals of agents/ann.md in the clone: want one doc.created from alpha, got:\n%s", describeEvents(got))
	}
}

// bareRemote is a new bare git repository for stores to sync through;
// it skips the test where git is not installed.
func bareRemote(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	remote := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return remote
}

// annOnAlphaAndBeta is machine alpha's store with agent ann, synced
// through a bare remote, and machine beta's clone of it.
func annOnAlphaAndBeta(t *testing.T) (a, b *project) {
	t.Helper()
	remote := bareRemote(t)
	a = newProject(t)
	a.env = append(a.env, "TAVERN_MACHINE=alpha", "TAVERN_SYNC_REMOTE="+remote)
	a.ok("new", "agent", "ann")
	a.ok("sync")
	b = &project{t: t, dir: t.TempDir(), env: []string{"TAVERN_MACHINE=beta"}}
	b.ok("sync", "--clone", remote)
	return a, b
}
