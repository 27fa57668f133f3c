package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// A store made by init joins the team's store on its first sync
// (adopt), which replaces its journal's day file under every process
// reading it. A `tavern watch` running there read on from its offset in
// the old file: the new one's first entries (the documents the sync
// brought, journaled as external naming the machine) were skipped, or
// read from the middle of a line, so the watcher journaled each of them
// again as a hand edit naming no machine, and `log --follow` printed a
// torn line and never showed them. Now both tell the rewrite and read the
// new file from its start: every entry once, no torn line.
func TestWatchAcrossAdopt(t *testing.T) {
	t.Parallel()
	remote := bareRemote(t)
	a := newProject(t)
	a.env = append(a.env, "TAVERN_MACHINE=alpha", "TAVERN_SYNC_REMOTE="+remote)
	var anns []string
	for i := range 6 {
		name := fmt.Sprintf("ann%d", i)
		a.ok("new", "agent", name)
		anns = append(anns, "agents/"+name+".md")
	}
	a.ok("sync")

	b := newProject(t)
	b.env = append(b.env, "TAVERN_MACHINE=beta", "TAVERN_SYNC_REMOTE="+remote, "TAVERN_DAEMON=off")
	// A journal longer than what the adopt journals first: a reader at
	// its end is past those entries in the new day file.
	for i := range 20 {
		b.ok("set", "tavern.md", fmt.Sprintf("external_grace=%dms", 400+i))
	}
	b.ok("set", "tavern.md", "external_grace="+journalGrace, "settle="+journalSettle)

	follow := b.tavern("log", "--follow", "--json")
	var fout, ferr lockedBuffer
	follow.Stdout, follow.Stderr = &fout, &ferr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { follow.Process.Kill(); follow.Wait() }()
	w := watchJSON(t, b)

	if out := b.ok("sync"); !strings.Contains(out, "joined the remote's store") {
		t.Fatalf("sync did not adopt the remote's store:\n%s", out)
	}
	ext := fence(t, b)
	got := map[string][]string{}
	for _, e := range ext {
		m, _ := e.Data["machine"].(string)
		got[e.Path] = append(got[e.Path], m)
	}
	for _, rel := range anns {
		if !slices.Equal(got[rel], []string{"alpha"}) {
			t.Errorf("%s: external entries naming %q, want one naming alpha\n%s", rel, got[rel], describeEvents(ext))
		}
	}

	// The follower has read up to the fence (the last entry) once it
	// prints it; then it has printed every entry of the new journal once.
	var want []string
	if _, err := journal.Read(b.path(""), journal.Filter{}, func(e journal.Event, err error) bool {
		if err != nil {
			t.Errorf("journal: %v", err)
		}
		want = append(want, e.ID)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	last := want[len(want)-1]
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(fout.String(), last) {
		if time.Now().After(deadline) {
			t.Fatalf("log --follow never printed the journal's last entry %s; stderr:\n%s", last, ferr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(fout.String()), "\n") {
		var e journal.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log --follow: bad line %q: %v", line, err)
		}
		seen[e.ID]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("log --follow printed entry %s %d times, want once", id, seen[id])
		}
	}
	if strings.Contains(ferr.String(), "json:") || !strings.Contains(ferr.String(), "rewritten") {
		t.Errorf("log --follow stderr: want the rewrite told, no torn line:\n%s", ferr.String())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		if msg, _ := e.Data["error"].(string); e.Type == journal.TypeError && !strings.Contains(msg, "rewritten") {
			t.Errorf("watch printed an error other than the rewrite: %s", msg)
		}
	}
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
