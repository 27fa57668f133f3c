package gitsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

func mustSync(t *testing.T, s *docstore.Store) *Report {
	t.Helper()
	sy, err := Open(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil || rep.Offline != "" {
		t.Fatalf("sync: %v %+v", err, rep)
	}
	return rep
}

// lastSet is the updated time the last set wrote. Each set writes a later
// one, a millisecond (updated's resolution) after it at least, so that the
// order of the calls is the order of the writes: on tmpfs two calls fell
// in one millisecond, tied, and the merge kept the wrong side. The tests
// that call set are not parallel.
var lastSet time.Time

func set(t *testing.T, s *docstore.Store, k, v string) {
	t.Helper()
	at := time.Now().UTC().Truncate(time.Millisecond)
	if !at.After(lastSet) {
		at = lastSet.Add(time.Millisecond)
	}
	lastSet = at
	if _, err := s.Update("agents/ann.md", func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: k, Value: v}, {Key: "updated", Value: at}})
	}); err != nil {
		t.Fatal(err)
	}
}

// A document the engine changes locally while a round is between its
// merge and its write is not overwritten: the round defers it, and the
// next round merges the local change with what the first one brought.
func TestApplyDefersConcurrentLocalChange(t *testing.T) {
	a, b := annOnTwoMachines(t)
	set(t, b, "model", "x")
	set(t, a, "queue", "q")
	mustSync(t, a)
	testHookBeforeApply = func() { set(t, b, "role", "late") }
	rep := mustSync(t, b)
	testHookBeforeApply = nil
	if len(rep.Deferred) != 1 || rep.Deferred[0] != "agents/ann.md" {
		t.Fatalf("deferred %v", rep.Deferred)
	}
	got, _ := b.Get("agents/ann.md")
	if got.String("role") != "late" || got.String("model") != "x" || got.String("queue") != "" {
		t.Fatalf("b's copy was overwritten:\n%s", got.Bytes())
	}
	mustSync(t, b)
	mustSync(t, a)
	for _, s := range []*docstore.Store{a, b} {
		got, _ := s.Get("agents/ann.md")
		if got.String("role") != "late" || got.String("model") != "x" || got.String("queue") != "q" {
			t.Fatalf("%s after the deferred merge:\n%s", s.Root(), got.Bytes())
		}
	}
}

// killedSync runs a round that dies after its merge and push, before it
// writes the store or saves its state: as a SIGKILL there would (the
// round's lock goes with the process).
func killedSync(t *testing.T, s *docstore.Store) {
	t.Helper()
	killedSyncAt(t, s, &testHookBeforeApply)
}

// killedSyncAt runs a round that dies where hook is called.
func killedSyncAt(t *testing.T, s *docstore.Store, hook *func()) {
	t.Helper()
	sy, err := Open(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	type killed struct{}
	*hook = func() { panic(killed{}) }
	defer func() {
		*hook = nil
		if r := recover(); r != (killed{}) {
			t.Fatalf("the round was not killed: %v", r)
		}
	}()
	_, _ = sy.Sync(context.Background())
}

// conflicts returns the sync.conflict events of s's own journal.
func conflicts(t *testing.T, s *docstore.Store) []journal.Event {
	t.Helper()
	var out []journal.Event
	if _, err := journal.Read(s.Root(), journal.Filter{Types: []string{EventConflict}}, func(e journal.Event, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A round killed after it merged, journaled and pushed, and one killed
// after it saved the values its merge dropped but before it journaled
// them: the next round journals each dropped value once, naming the
// machine each side came from, for a merge of the remote and for the
// merge of a path deferred by an earlier round. Before, the next round
// merged the same sides again and journaled them again, this machine
// named for both sides when its own pushed merge was the other side.
func TestKilledRoundJournalsEachLossOnce(t *testing.T) {
	a, b := annOnTwoMachines(t)
	// want checks the journal's conflicts: each "lost:loser/kept:keeper".
	want := func(lost ...string) {
		t.Helper()
		evs := conflicts(t, b)
		var got []string
		for _, e := range evs {
			got = append(got, fmt.Sprintf("%v:%v/%v:%v", e.Data["lost"], e.Data["lost_machine"], e.Data["kept"], e.Data["kept_machine"]))
		}
		if !slices.Equal(got, lost) {
			t.Fatalf("sync.conflict events %q, want %q", got, lost)
		}
	}

	// 1. Killed after journaling and pushing the merge.
	set(t, b, "role", "b1")
	set(t, a, "role", "a1") // later: kept
	mustSync(t, a)
	killedSync(t, b)
	mustSync(t, b)
	mustSync(t, b)
	want("b1:beta/a1:alpha")

	// 2. Killed after saving the dropped values, before journaling them
	// (and so before pushing: the round pushes its journal with them).
	set(t, b, "role", "b2")
	set(t, a, "role", "a2")
	mustSync(t, a)
	killedSyncAt(t, b, &testHookBeforeJournal)
	mustSync(t, b)
	mustSync(t, b)
	want("b1:beta/a1:alpha", "b2:beta/a2:alpha")

	// 3. A path changed while a round ran is merged by the next round
	// (the deferred merge), which is killed.
	set(t, a, "role", "a3")
	mustSync(t, a)
	testHookBeforeApply = func() { set(t, b, "role", "b3") } // before a4: a4 is the later write
	mustSync(t, b)
	testHookBeforeApply = nil
	set(t, a, "role", "a4")
	mustSync(t, a)
	killedSync(t, b)
	mustSync(t, b)
	mustSync(t, b)
	mustSync(t, a)
	for _, s := range []*docstore.Store{a, b} {
		got, _ := s.Get("agents/ann.md")
		if got.String("role") != "a4" {
			t.Fatalf("%s: role %q, want a4", s.Root(), got.String("role"))
		}
	}
	want("b1:beta/a1:alpha", "b2:beta/a2:alpha", "a3:alpha/b3:beta", "b3:beta/a4:alpha")
}

// annOnTwoMachines is a store on machine alpha with one agent, ann,
// synced through a git server and cloned on machine beta.
func annOnTwoMachines(t *testing.T) (a, b *docstore.Store) {
	t.Helper()
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644)
	a.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.SetYAML("sync", "{remote: '"+url+"'}") })
	d, _ := docstore.New(schema.Agent, []docstore.Field{{Key: schema.VersionField, Value: 1}, {Key: "name", Value: "ann"}, {Key: "updated", Value: time.Now().UTC()}}, nil)
	if err := a.Create("agents/ann.md", d); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	b, err = Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.Root(), queues.MachineFile), []byte("beta\n"), 0o644)
	return a, b
}
