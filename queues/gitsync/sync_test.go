package gitsync_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// newOrigin makes the first machine's store, configured to sync with url.
func newOrigin(t *testing.T, root, machine, url string) *docstore.Store {
	t.Helper()
	dir := filepath.Join(root, machine, ".tavern")
	s, _, err := docstore.Init(dir, "proj")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		return d.SetYAML("sync", "{remote: '"+url+"'}")
	}); err != nil {
		t.Fatal(err)
	}
	setMachine(t, s, machine)
	return s
}

func setMachine(t *testing.T, s *docstore.Store, machine string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Root(), queues.MachineFile), []byte(machine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func clone(t *testing.T, root, machine, url string) *docstore.Store {
	t.Helper()
	dir := filepath.Join(root, machine, ".tavern")
	os.MkdirAll(filepath.Dir(dir), 0o755)
	s, err := gitsync.Clone(dir, url, "")
	if err != nil {
		t.Fatal(err)
	}
	setMachine(t, s, machine)
	return s
}

func syncOnce(t *testing.T, s *docstore.Store) *gitsync.Report {
	t.Helper()
	sy, err := gitsync.Open(s, gitsync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Offline != "" {
		t.Fatalf("sync of %s offline: %s", s.Root(), rep.Offline)
	}
	return rep
}

// tree lists a store's synced files (documents and others' journals) and
// their content hashes.
func tree(t *testing.T, s *docstore.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := s.Root()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(rel, "events/") {
			return nil
		}
		b, _ := os.ReadFile(p)
		h := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(h[:8])
		return nil
	})
	return out
}

func sameTrees(t *testing.T, stores ...*docstore.Store) {
	t.Helper()
	want := tree(t, stores[0])
	for _, s := range stores[1:] {
		got := tree(t, s)
		var diff []string
		for p, h := range want {
			if got[p] != h {
				diff = append(diff, p)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				diff = append(diff, p+" (extra)")
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			t.Fatalf("%s and %s differ: %v", stores[0].Root(), s.Root(), diff)
		}
	}
}

// checkClean is `tavern check` on every document: parse and validate.
func checkClean(t *testing.T, s *docstore.Store) {
	t.Helper()
	for _, k := range schema.Kinds() {
		if _, errs := s.List(k); len(errs) > 0 {
			t.Fatalf("%s: %v", s.Root(), errs)
		}
	}
	filepath.WalkDir(s.Root(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") && !strings.Contains(p, "/.") {
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "<<<<<<<") || strings.Contains(string(b), ">>>>>>>") {
				t.Errorf("conflict markers in %s", p)
			}
		}
		return nil
	})
}

func newAgent(t *testing.T, s *docstore.Store, name string) {
	t.Helper()
	now := time.Now().UTC()
	d, err := docstore.New(schema.Agent, []docstore.Field{{Key: schema.VersionField, Value: 1}, {Key: "name", Value: name},
		{Key: "role", Value: "coder"}, {Key: "state", Value: "idle"}, {Key: "created", Value: now}, {Key: "updated", Value: now}}, []byte("\nNotes.\n\nline two\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create("agents/"+name+".md", d); err != nil {
		t.Fatal(err)
	}
}

func setField(t *testing.T, s *docstore.Store, path, k string, v any, at time.Time) {
	t.Helper()
	if _, err := s.Update(path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: k, Value: v}, {Key: "updated", Value: at}})
	}); err != nil {
		t.Fatal(err)
	}
}

func events(t *testing.T, s *docstore.Store, typ string) []journal.Event {
	t.Helper()
	var out []journal.Event
	journal.Read(s.Root(), journal.Filter{Types: []string{typ}}, func(e journal.Event, err error) bool {
		if err == nil {
			out = append(out, e)
		}
		return true
	})
	return out
}

func TestCloneAndConverge(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	b0, err := queues.Open(a, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b0.CreateQueue("q", queues.QueueOptions{})
	for i := 0; i < 5; i++ {
		if _, err := b0.Add("q", queues.AddOptions{Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	b0.Close()
	rep := syncOnce(t, a)
	if !rep.Committed || !rep.Pushed {
		t.Fatalf("first sync %+v", rep)
	}
	b := clone(t, root, "beta", url)
	c := clone(t, root, "gamma", url)
	sameTrees(t, a, b, c)
	// beta adds an agent, gamma an item; after every machine synced
	// (twice: the first to sync cannot see the last's changes) all agree.
	newAgent(t, b, "bob")
	bc, _ := queues.Open(c, queues.Options{})
	bc.Add("q", queues.AddOptions{Title: "from gamma"})
	bc.Close()
	for round := 0; round < 2; round++ {
		for _, s := range []*docstore.Store{a, b, c} {
			syncOnce(t, s)
		}
	}
	sameTrees(t, a, b, c)
	for _, s := range []*docstore.Store{a, b, c} {
		checkClean(t, s)
		if _, err := os.Stat(filepath.Join(s.Root(), "agents/bob.md")); err != nil {
			t.Fatal(err)
		}
	}
	// Each machine's journal reached the others under events/<machine>/.
	if _, err := os.Stat(filepath.Join(a.Root(), "events", "gamma")); err != nil {
		t.Fatalf("gamma's journal on alpha: %v", err)
	}
	// Engine-private files never travel.
	if _, err := os.Stat(filepath.Join(b.Root(), ".machine")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(b.Root(), ".machine")); strings.TrimSpace(string(b)) != "beta" {
		t.Fatalf("beta's .machine is %q", b)
	}
	ext := events(t, a, journal.TypeExternal)
	found := false
	for _, e := range ext {
		if e.Path == "agents/bob.md" && e.Data["machine"] == "beta" {
			found = true
		}
	}
	if !found {
		t.Fatalf("alpha did not journal beta's agent as external from beta: %v", ext)
	}
}

// Two machines edit one agent document: different fields merge; the same
// field takes the later `updated` and journals the other value.
func TestConcurrentFieldEdits(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	t0 := time.Now().UTC()
	setField(t, a, "agents/ann.md", "model", "opus", t0)
	setField(t, b, "agents/ann.md", "queue", "build", t0.Add(time.Second))
	syncOnce(t, a)
	rep := syncOnce(t, b)
	if !rep.Merged || len(rep.Conflicts) != 0 {
		t.Fatalf("different fields: %+v", rep)
	}
	syncOnce(t, a)
	sameTrees(t, a, b)
	d, err := a.Get("agents/ann.md")
	if err != nil {
		t.Fatal(err)
	}
	if d.String("model") != "opus" || d.String("queue") != "build" {
		t.Fatalf("merged doc:\n%s", d.Bytes())
	}
	if !strings.Contains(string(d.Body()), "Notes.") {
		t.Fatalf("body lost:\n%s", d.Bytes())
	}
	// The same field, and the body at both ends: beta writes last.
	t1 := time.Now().UTC().Add(time.Minute)
	setField(t, a, "agents/ann.md", "role", "reviewer", t1)
	setField(t, b, "agents/ann.md", "role", "tester", t1.Add(time.Second))
	if _, err := a.Update("agents/ann.md", func(d *docstore.Doc) error {
		d.SetBody([]byte("\nNotes from alpha.\n\nline two\n"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update("agents/ann.md", func(d *docstore.Doc) error {
		d.SetBody([]byte("\nNotes.\n\nline two\nline three from beta\n"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	syncOnce(t, b)
	rep = syncOnce(t, a)
	syncOnce(t, b)
	sameTrees(t, a, b)
	d, _ = b.Get("agents/ann.md")
	if d.String("role") != "tester" {
		t.Fatalf("role %q, want the later writer's tester", d.String("role"))
	}
	if body := string(d.Body()); !strings.Contains(body, "from alpha") || !strings.Contains(body, "from beta") {
		t.Fatalf("non-overlapping body edits not merged:\n%s", body)
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "role" || rep.Conflicts[0].Lost != "reviewer" || rep.Conflicts[0].LostFrom != "alpha" {
		t.Fatalf("conflicts %+v", rep.Conflicts)
	}
	ev := events(t, a, gitsync.EventConflict)
	if len(ev) != 1 || ev[0].Path != "agents/ann.md" || ev[0].Data["lost"] != "reviewer" || ev[0].Data["kept"] != "tester" {
		t.Fatalf("journaled conflicts %+v", ev)
	}
	// The round that merged pushed its sync.conflict: beta has it after
	// one more round of its own, not only after alpha's next round.
	days, _ := filepath.Glob(filepath.Join(b.Root(), docstore.JournalDir, "alpha", "*.jsonl"))
	got := 0
	for _, p := range days {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got += strings.Count(string(data), `"type":"`+gitsync.EventConflict+`"`)
	}
	if got != 1 {
		t.Fatalf("beta has %d of alpha's sync.conflict events, want 1 (pushed by the round that merged)", got)
	}
	for _, s := range []*docstore.Store{a, b} {
		checkClean(t, s)
	}
}

// A document deleted on one machine and edited on the other is kept.
func TestDeleteVersusEdit(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	if err := a.Delete("agents/ann.md"); err != nil {
		t.Fatal(err)
	}
	setField(t, b, "agents/ann.md", "role", "kept", time.Now())
	syncOnce(t, a)
	rep := syncOnce(t, b)
	syncOnce(t, a)
	sameTrees(t, a, b)
	d, err := a.Get("agents/ann.md")
	if err != nil || d.String("role") != "kept" {
		t.Fatalf("edited doc after a concurrent delete: %v %v", d, err)
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "(deleted)" {
		t.Fatalf("conflicts %+v", rep.Conflicts)
	}
}

// Items moved on two machines (no coordination engine: both may take one
// item) keep exactly one copy, the later claim's, and journal the other.
func TestItemMovedOnTwoMachines(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba, _ := queues.Open(a, queues.Options{})
	ba.CreateQueue("q", queues.QueueOptions{})
	x, _ := ba.Add("q", queues.AddOptions{Title: "x"})
	y, _ := ba.Add("q", queues.AddOptions{Title: "y"})
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	bb, _ := queues.Open(b, queues.Options{})
	defer ba.Close()
	defer bb.Close()
	ctx := context.Background()
	// alpha: x claimed and done. beta: x claimed twice (released once),
	// y claimed.
	c, err := ba.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	if err != nil || c.ID != x.ID {
		t.Fatal(c, err)
	}
	c.Complete("by alpha")
	c1, _ := bb.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	c1.Release()
	c2, _ := bb.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
	if c2.ID != x.ID || c2.Attempt != 2 {
		t.Fatalf("beta's claim %s %d", c2.ID, c2.Attempt)
	}
	syncOnce(t, a)
	rep := syncOnce(t, b)
	syncOnce(t, a)
	sameTrees(t, a, b)
	it, err := ba.Get(x.ID)
	if err != nil || it.State != queues.Claimed || it.ClaimAttempt != 2 {
		t.Fatalf("x after sync: %+v %v (want beta's later claim)", it, err)
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "(item)" || !strings.Contains(rep.Conflicts[0].Lost, "done") {
		t.Fatalf("conflicts %+v", rep.Conflicts)
	}
	if _, err := ba.Get(y.ID); err != nil {
		t.Fatal(err)
	}
	checkClean(t, a)
}

// Two copies of one claim attempt in done/ (no coordination engine: each
// machine counts its own attempts, and both ran the item) whose outcomes
// differ are still a conflict: only a copy that says nothing the kept one
// does not (one recovered from the engine's record) goes unjournaled.
func TestItemDoneTwiceSameAttempt(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba, _ := queues.Open(a, queues.Options{})
	defer ba.Close()
	ba.CreateQueue("q", queues.QueueOptions{})
	x, _ := ba.Add("q", queues.AddOptions{Title: "x"})
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	bb, _ := queues.Open(b, queues.Options{})
	defer bb.Close()
	ctx := context.Background()
	for _, side := range []struct {
		b   *queues.Broker
		res string
	}{{ba, "by alpha"}, {bb, "by beta"}} {
		c, err := side.b.Take(ctx, queues.TakeOptions{Queues: []string{"q"}})
		if err != nil || c.ID != x.ID || c.Attempt != 1 {
			t.Fatalf("take: %+v %v", c, err)
		}
		if _, err := c.Complete(side.res); err != nil {
			t.Fatal(err)
		}
	}
	syncOnce(t, a)
	rep := syncOnce(t, b)
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "(item)" {
		t.Fatalf("conflicts %+v, want the other run's copy", rep.Conflicts)
	}
}

// A machine renamed (or a clone re-made under another name) does not
// delete its old journal from the shared tree: journals only grow.
func TestJournalSurvivesRename(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	syncOnce(t, a)
	setField(t, a, "agents/ann.md", "role", "y", time.Now())
	journalEdit(t, a, "agents/ann.md") // as the tavern command does
	syncOnce(t, a)
	setMachine(t, a, "alpha2")
	setField(t, a, "agents/ann.md", "role", "x", time.Now())
	journalEdit(t, a, "agents/ann.md")
	rep := syncOnce(t, a)
	for _, c := range rep.Conflicts {
		t.Errorf("conflict %+v", c)
	}
	b := clone(t, root, "beta", url)
	if _, err := os.Stat(filepath.Join(b.Root(), "events", "alpha")); err != nil {
		t.Fatalf("alpha's journal is gone from the shared tree: %v", err)
	}
	// alpha2's journal holds what was journaled under that name, not
	// alpha's events a second time.
	got := 0
	for _, f := range []string{"alpha", "alpha2"} {
		ents, err := os.ReadDir(filepath.Join(b.Root(), "events", f))
		if err != nil {
			t.Fatalf("%s's journal did not arrive: %v", f, err)
		}
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(b.Root(), "events", f, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got += strings.Count(string(data), `"type":"doc.updated"`)
		}
	}
	if want := 2; got != want {
		t.Errorf("doc.updated events in alpha's and alpha2's journals: got %d, want %d", got, want)
	}
}

// journalEdit appends the event the tavern command journals for an edit
// of path (the library's Update alone journals nothing).
func journalEdit(t *testing.T, s *docstore.Store, path string) {
	t.Helper()
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(journal.Event{Type: "doc.updated", Kind: "agent", Path: path}); err != nil {
		t.Fatal(err)
	}
}

// A round killed while git updated refs/tavern/remote (tavern sync
// SIGKILLed, a machine that lost power) leaves remote.lock in the
// clone's repository. Rounds hold .locks/sync, so the next round knows
// the lock is stale: it must sync, not report the remote unreachable
// forever (it did: "cannot lock ref ... remote.lock: File exists").
func TestSyncAfterKilledRound(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	syncOnce(t, a) // the round that fetched refs/tavern/remote
	lock := filepath.Join(a.Root(), gitsync.Dir, "git", "refs", "tavern", "remote.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	newAgent(t, b, "bob") // the remote moves: a's next fetch updates the ref
	syncOnce(t, b)
	newAgent(t, a, "ann")
	if rep := syncOnce(t, a); !rep.Pushed || !rep.Merged {
		t.Fatalf("round after a killed one: %+v", rep)
	}
	syncOnce(t, b)
	sameTrees(t, a, b)
}

// A .tavern/ copied to another machine (cp -a, rsync) instead of joined
// with Clone keeps the original's machine name: both clones then write
// events/<machine>/ in the shared tree, and each round overwrote the
// other's journal (its events were lost to log --machines and to a
// verifier elsewhere). The round that meets its own journal changed by
// another clone refuses, naming the clash, and pushes nothing.
func TestCopiedCloneSameMachineRefused(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	journalEdit(t, a, "agents/ann.md")
	syncOnce(t, a)
	bdir := filepath.Join(root, "copy", ".tavern")
	if err := os.CopyFS(bdir, os.DirFS(a.Root())); err != nil {
		t.Fatal(err)
	}
	b, err := docstore.Open(bdir)
	if err != nil {
		t.Fatal(err)
	}
	setField(t, a, "agents/ann.md", "role", "a", time.Now())
	journalEdit(t, a, "agents/ann.md")
	syncOnce(t, a)
	newAgent(t, b, "bob")
	journalEdit(t, b, "agents/bob.md")
	sy, err := gitsync.Open(b, gitsync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	head := func() string {
		out, err := exec.Command("git", "--git-dir="+filepath.Join(srv.Base, "p.git"), "rev-parse", gitsync.DefaultRef).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := head()
	_, err = sy.Sync(context.Background())
	if err == nil || !strings.Contains(err.Error(), `another clone syncs as machine "alpha"`) {
		t.Fatalf("round of the copy: err %v, want the machine name clash", err)
	}
	if after := head(); after != before {
		t.Fatalf("the copy pushed (%s -> %s)", before, after)
	}
	// The original's rounds go on.
	syncOnce(t, a)
	// The copy, renamed, joins: both journals are kept.
	setMachine(t, b, "beta")
	syncOnce(t, b)
	syncOnce(t, a)
	if _, err := os.Stat(filepath.Join(a.Root(), "events", "beta")); err != nil {
		t.Fatalf("beta's journal did not arrive: %v", err)
	}
}

// An item both machines edited where it lay (a title here, a note there;
// neither claimed or moved it) keeps one copy whole, and the loss says
// so: its rule said "both machines moved the item", which sent the user
// looking for a claim nobody made.
func TestItemEditedInPlaceOnTwoMachines(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba, _ := queues.Open(a, queues.Options{})
	defer ba.Close()
	ba.CreateQueue("q", queues.QueueOptions{})
	x, _ := ba.Add("q", queues.AddOptions{Title: "x"})
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	p := "queues/q/pending/" + x.ID + ".md"
	setField(t, a, p, "title", "from alpha", time.Now())
	setField(t, b, p, "note", "from beta", time.Now().Add(time.Second))
	syncOnce(t, a)
	rep := syncOnce(t, b)
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "(item)" {
		t.Fatalf("conflicts %+v", rep.Conflicts)
	}
	if r := rep.Conflicts[0].Rule; strings.Contains(r, "moved") || !strings.Contains(r, "changed the item where it was") {
		t.Fatalf("rule %q: want the in-place wording", r)
	}
}

// A map field both machines added different keys to keeps both keys
// (key by key), with keys that need quoting ("@ann", "yes") still
// quoted; a key both changed to different values keeps the last
// writer's and journals the other.
func TestMapFieldMergesKeyByKey(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	t0 := time.Now().UTC()
	setField(t, a, "agents/ann.md", "labels", map[string]string{"base": "0", "both": "0"}, t0)
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	setField(t, a, "agents/ann.md", "labels", map[string]string{"base": "0", "both": "a", "@ann": "1"}, t0.Add(time.Second))
	setField(t, b, "agents/ann.md", "labels", map[string]string{"base": "0", "both": "b", "yes": "2"}, t0.Add(2*time.Second))
	syncOnce(t, a)
	rep := syncOnce(t, b)
	syncOnce(t, a)
	sameTrees(t, a, b)
	d, err := a.Get("agents/ann.md")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := d.Get("labels").Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"base": "0", "both": "b", "@ann": "1", "yes": "2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("labels %v, want %v:\n%s", got, want, d.Bytes())
	}
	if len(rep.Conflicts) != 1 || rep.Conflicts[0].Field != "labels.both" || rep.Conflicts[0].Lost != `"a"` && rep.Conflicts[0].Lost != "a" {
		t.Fatalf("conflicts %+v", rep.Conflicts)
	}
}
