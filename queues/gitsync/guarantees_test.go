package gitsync_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// remoteFiles lists the paths of ref's tree in the bare repository dir.
func remoteFiles(t *testing.T, dir, ref string) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir="+dir, "ls-tree", "-r", "--name-only", ref).CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-tree: %v %s", err, out)
	}
	return strings.Fields(string(out))
}

// Engine-private files (locks, staging, trash, the index cache, the
// machine name, the sync's own repository, tuple staging) and editor
// swap files never reach the remote, whatever a store holds while it
// syncs; the shared tree has documents and journals only.
func TestEnginePrivateFilesNeverCommitted(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	newAgent(t, a, "gone")
	if err := a.Delete("agents/gone.md"); err != nil { // into .trash/
		t.Fatal(err)
	}
	b0, err := queues.Open(a, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b0.Close()
	b0.CreateQueue("q", queues.QueueOptions{})
	b0.Add("q", queues.AddOptions{Title: "held"})
	// A claim held by this process while the round runs: its lock files
	// exist in .locks/.
	c, err := b0.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	for rel, data := range map[string]string{
		".tmp/leftover-123":            "half a write",
		".index":                       "cache",
		"agents/.ann.md.swp":           "vim swap",
		"agents/ann.md~":               "backup",
		"tuples/task/.taken/x.md":      "staged",
		"queues/q/pending/.hidden.md":  "dot file",
		".locks/extra.lock":            "",
		"channels/.#general.md":        "emacs lock",
		"knowledge/.sync-probe/doc.md": "dot directory",
	} {
		p := filepath.Join(a.Root(), rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	syncOnce(t, a)
	files := remoteFiles(t, filepath.Join(srv.Base, "p.git"), gitsync.DefaultRef)
	if len(files) == 0 {
		t.Fatal("nothing pushed")
	}
	var sawAgent, sawItem, sawJournal bool
	for _, f := range files {
		for _, part := range strings.Split(f, "/") {
			if strings.HasPrefix(part, ".") || strings.HasSuffix(part, "~") {
				t.Errorf("engine-private or editor file committed: %s", f)
			}
		}
		sawAgent = sawAgent || f == "agents/ann.md"
		sawItem = sawItem || strings.HasPrefix(f, "queues/q/claimed/")
		sawJournal = sawJournal || strings.HasPrefix(f, "events/alpha/")
	}
	if !sawAgent || !sawItem || !sawJournal {
		t.Fatalf("the shared tree lacks documents or the journal: %v", files)
	}
	// And the project's own branches are untouched: the state is on its ref.
	if out, err := exec.Command("git", "--git-dir="+filepath.Join(srv.Base, "p.git"), "for-each-ref", "--format=%(refname)").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != gitsync.DefaultRef {
		t.Fatalf("refs in the remote: %q %v (want only %s)", out, err, gitsync.DefaultRef)
	}
}

// Overlapping edits of one body on two machines: the later writer's
// hunks win, the other body is journaled, and no conflict marker is ever
// written into .tavern/. A broken hand edit on one side makes the whole
// document the last writer's, also without markers.
func TestOverlappingEditsNeverWriteMarkers(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	newAgent(t, a, "bob")
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	t0 := time.Now().UTC().Add(time.Minute)
	body := func(s *docstore.Store, text string, at time.Time) {
		t.Helper()
		if _, err := s.Update("agents/ann.md", func(d *docstore.Doc) error {
			d.SetBody([]byte(text))
			return d.Set("updated", at)
		}); err != nil {
			t.Fatal(err)
		}
	}
	body(a, "\nNotes by alpha.\n\nline two\n", t0)
	body(b, "\nNotes by beta.\n\nline two\n", t0.Add(time.Second))
	// bob: broken by hand on alpha (an unclosed list), edited on beta.
	os.WriteFile(filepath.Join(a.Root(), "agents/bob.md"), []byte("---\nname: bob\nrole: [oops\n---\nhand edit\n"), 0o644)
	setField(t, b, "agents/bob.md", "role", "tester", t0)
	syncOnce(t, a)
	rep := syncOnce(t, b)
	syncOnce(t, a)
	sameTrees(t, a, b)
	d, err := a.Get("agents/ann.md")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.Body()); !strings.Contains(got, "Notes by beta.") || strings.Contains(got, "alpha") {
		t.Fatalf("body after overlapping edits:\n%s", got)
	}
	var bodyLoss bool
	for _, l := range rep.Conflicts {
		if l.Path == "agents/ann.md" && l.Field == "body" && strings.Contains(l.Lost, "Notes by alpha.") && l.LostFrom == "alpha" {
			bodyLoss = true
		}
	}
	if !bodyLoss {
		t.Fatalf("the overwritten body is not reported: %+v", rep.Conflicts)
	}
	var journaled bool
	for _, e := range events(t, b, gitsync.EventConflict) {
		if e.Path == "agents/ann.md" && strings.Contains(e.Data["lost"].(string), "Notes by alpha.") {
			journaled = true
		}
	}
	if !journaled {
		t.Fatal("the overwritten body is not journaled")
	}
	for _, s := range []*docstore.Store{a, b} {
		filepath.Walk(s.Root(), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && !strings.Contains(p, "/.sync/") {
				data, _ := os.ReadFile(p)
				if strings.Contains(string(data), "<<<<<<<") || strings.Contains(string(data), ">>>>>>>") || strings.Contains(string(data), "\n=======\n") {
					t.Errorf("conflict markers in %s:\n%s", p, data)
				}
			}
			return nil
		})
	}
}

// A remote that rejects pushes (a pre-receive hook, as a protected ref
// or a full disk would): the round commits locally, reports why it is
// offline and loses nothing; once the remote accepts again the next
// round pushes it and the other machine gets it.
func TestRemoteRejectingPushes(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	syncOnce(t, b) // pushes its journal of the clone, before the hook
	hook := filepath.Join(srv.Base, "p.git", "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'refs/tavern/* are protected' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setField(t, a, "agents/ann.md", "role", "while-rejected", time.Now())
	sy, err := gitsync.Open(a, gitsync.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pushed || rep.Offline == "" || !rep.Committed {
		t.Fatalf("round against a rejecting remote: %+v", rep)
	}
	if !strings.Contains(rep.Offline, "protected") {
		t.Errorf("the remote's reason is not reported: %q", rep.Offline)
	}
	syncOnce(t, b)
	if d, _ := b.Get("agents/ann.md"); d.String("role") == "while-rejected" {
		t.Fatal("beta has a change the remote refused")
	}
	if d, _ := a.Get("agents/ann.md"); d.String("role") != "while-rejected" {
		t.Fatal("the local change was lost")
	}
	os.Remove(hook)
	rep = syncOnce(t, a)
	if !rep.Pushed {
		t.Fatalf("round after the remote accepts again: %+v", rep)
	}
	syncOnce(t, b)
	if d, _ := b.Get("agents/ann.md"); d.String("role") != "while-rejected" {
		t.Fatalf("beta after the remote accepted: role %q", d.String("role"))
	}
}

// coordination: git against a remote that declines pushes: no claim can
// be made, and the claim says why (queues.ErrUnavailable with the
// remote's reason) instead of passing the item over as held elsewhere.
func TestRefEngineRemoteDeclines(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	e := gitEngine(t, t.TempDir(), "ma", url)
	hook := filepath.Join(srv.Base, "p.git", "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'claims are frozen' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := e.Claim(context.Background(), "items/q/k", queues.ClaimRequest{Holder: "w", TTL: time.Minute})
	if !errors.Is(err, queues.ErrUnavailable) || !strings.Contains(err.Error(), "declined") || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("claim against a declining remote: %v (want ErrUnavailable with the remote's reason)", err)
	}
	if got, want := err.Error(), "the remote declined the push (pre-receive hook declined)"; !strings.Contains(got, want) {
		t.Fatalf("got %q, want it to say %q", got, want)
	}
	os.Remove(hook)
	if _, err := e.Claim(context.Background(), "items/q/k", queues.ClaimRequest{Holder: "w", TTL: time.Minute}); err != nil {
		t.Fatalf("claim once the remote accepts: %v", err)
	}
}

// New documents made on two machines at once never collide: their names
// carry time-ordered ids (UUIDv7), so both sets merge without a conflict
// and `ls` lists them in creation order on every clone.
func TestNewDocumentsOnTwoMachinesNeverCollide(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba, err := queues.Open(a, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	ba.CreateQueue("q", queues.QueueOptions{})
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	bb, err := queues.Open(b, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	const n = 40
	for i := 0; i < n; i++ { // interleaved in time
		if _, err := ba.Add("q", queues.AddOptions{Title: "from alpha"}); err != nil {
			t.Fatal(err)
		}
		if _, err := bb.Add("q", queues.AddOptions{Title: "from beta"}); err != nil {
			t.Fatal(err)
		}
	}
	syncOnce(t, a)
	rep := syncOnce(t, b)
	syncOnce(t, a)
	if len(rep.Conflicts) != 0 {
		t.Fatalf("conflicts merging new documents: %+v", rep.Conflicts)
	}
	sameTrees(t, a, b)
	for _, s := range []*docstore.Store{a, b} {
		ents, err := os.ReadDir(filepath.Join(s.Root(), "queues/q/pending"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 2*n {
			t.Fatalf("%s: %d items, want %d", s.Root(), len(ents), 2*n)
		}
		var last time.Time
		for _, e := range ents { // ReadDir sorts by name
			id := strings.TrimSuffix(e.Name()[strings.Index(e.Name(), "-")+1:], ".md")
			at, ok := docstore.IDTime(id)
			if !ok {
				t.Fatalf("%s: not a time-ordered id", e.Name())
			}
			if at.Before(last) {
				t.Fatalf("%s sorts after a later id", e.Name())
			}
			last = at
		}
	}
}

// Rounds with nothing new commit and push nothing: after an edit has
// gone around (its journal entries included), both machines' rounds are
// idle and the remote ref stays where it is. (Each round used to journal
// itself, which was a change for the next round to commit: every machine
// pushed every interval forever, and the others lost push races to it.)
func TestIdleRoundsPushNothing(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	newAgent(t, a, "ann")
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	setField(t, a, "agents/ann.md", "role", "edited", time.Now())
	// Let the change and the journals it causes settle.
	for i := 0; i < 3; i++ {
		syncOnce(t, a)
		syncOnce(t, b)
	}
	bare := filepath.Join(srv.Base, "p.git")
	head := func() string {
		out, err := exec.Command("git", "--git-dir="+bare, "rev-parse", gitsync.DefaultRef).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := head()
	for i := 0; i < 3; i++ {
		for _, s := range []*docstore.Store{a, b} {
			if rep := syncOnce(t, s); rep.Committed || rep.Pushed || rep.Merged || len(rep.Applied) > 0 {
				t.Fatalf("idle round %d of %s: %+v", i, s.Root(), rep)
			}
		}
	}
	if after := head(); after != before {
		t.Fatalf("the remote ref moved from %s to %s with nothing to sync", before, after)
	}
	if d, _ := b.Get("agents/ann.md"); d.String("role") != "edited" {
		t.Fatal("the edit did not arrive")
	}
}

// Git keeps no empty directory: a clone still has the whole layout (the
// directories `tavern init` makes and each queue's state directories),
// also for a queue that arrives later by a sync round.
func TestCloneHasTheLayout(t *testing.T) {
	t.Parallel() // waits on git processes and the daemon: overlap them
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba, err := queues.Open(a, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	ba.CreateQueue("q", queues.QueueOptions{})
	syncOnce(t, a)
	b := clone(t, root, "beta", url)
	ba.CreateQueue("later", queues.QueueOptions{})
	syncOnce(t, a)
	syncOnce(t, b)
	var want []string
	want = append(want, docstore.InitDirs...)
	for _, q := range []string{"q", "later"} {
		for _, st := range []string{"pending", "claimed", "done", "dead"} {
			want = append(want, "queues/"+q+"/"+st)
		}
	}
	for _, d := range want {
		if fi, err := os.Stat(filepath.Join(b.Root(), d)); err != nil || !fi.IsDir() {
			t.Errorf("the clone lacks %s/: %v", d, err)
		}
	}
}
