package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/workspace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

// fixture is a git repository (main with one commit) holding a store.
type fixture struct {
	t    testing.TB
	dir  string
	s    *docstore.Store
	b    *queues.Broker
	sp   *tuples.Space
	opts workspace.Options
}

func run(tb testing.TB, dir string, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %q in %s: %v\n%s", name, args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newFixture(tb testing.TB, check string) *fixture {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed")
	}
	dir := tb.TempDir()
	run(tb, dir, "git", "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".tavern/\n"), 0o644)
	run(tb, dir, "git", "add", ".")
	run(tb, dir, "git", "commit", "-qm", "start")
	// The project's own checkout is on another branch: main is only
	// moved by the merge queue (the checked-out case has its own test).
	run(tb, dir, "git", "switch", "-q", "-c", "work")
	s, _, err := docstore.Init(filepath.Join(dir, ".tavern"), "p")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{Journal: b.Journal(), LivenessPoll: 100 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := b.CreateQueue("code", queues.QueueOptions{}); err != nil {
		tb.Fatal(err)
	}
	f := &fixture{t: tb, dir: dir, s: s, b: b, sp: sp}
	f.opts = workspace.Options{Repo: dir, Base: "main", Check: check, Broker: b, Space: sp}
	return f
}

func (f *fixture) ws() *workspace.Workspaces {
	f.t.Helper()
	w, err := workspace.Open(context.Background(), f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// work adds an item, prepares its worktree and commits change there.
func (f *fixture) work(w *workspace.Workspaces, title string, change func(dir string)) (*queues.Item, *workspace.Workspace) {
	f.t.Helper()
	it, err := f.b.Add("code", queues.AddOptions{Title: title})
	if err != nil {
		f.t.Fatal(err)
	}
	ws, err := w.Prepare(context.Background(), it)
	if err != nil {
		f.t.Fatal(err)
	}
	change(ws.Path)
	run(f.t, ws.Path, "git", "add", "-A")
	run(f.t, ws.Path, "git", "commit", "-qm", title)
	return it, ws
}

func (f *fixture) base() string { return run(f.t, f.dir, "git", "rev-parse", "main") }

func req(it *queues.Item, ws *workspace.Workspace) workspace.MergeRequest {
	return workspace.MergeRequest{Item: it.ID, Queue: it.Queue, Title: it.Title, Worktree: ws.Path, Branch: ws.Branch}
}

func TestPrepareResumeAndPrune(t *testing.T) {
	f := newFixture(t, "")
	w := f.ws()
	it, err := f.b.Add("code", queues.AddOptions{Title: "Add the Parser!"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := w.Prepare(context.Background(), it)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ws.Branch, "tavern/add-the-parser-") || ws.Path != filepath.Join(w.Root(), it.ID) {
		t.Fatalf("workspace %+v", ws)
	}
	if got := run(t, ws.Path, "git", "rev-parse", "--abbrev-ref", "HEAD"); got != ws.Branch {
		t.Fatalf("worktree is on %s, want %s", got, ws.Branch)
	}
	got, _ := f.b.Get(it.ID)
	if got.Worktree != ws.Path || got.Branch != ws.Branch || got.Base != "main" {
		t.Fatalf("item records %q %q %q", got.Worktree, got.Branch, got.Base)
	}
	// A second attempt gets the same worktree back.
	again, err := w.Prepare(context.Background(), got)
	if err != nil || !again.Resumed || again.Path != ws.Path {
		t.Fatalf("second prepare: %v %+v", err, again)
	}
	list, err := w.List(context.Background())
	if err != nil || len(list) != 1 || list[0].Orphan {
		t.Fatalf("list: %v %+v", err, list)
	}
	// Dead: an orphan; prune removes the worktree and keeps the branch.
	if _, err := f.b.Resolve(it.ID, queues.ResolveOptions{Cancel: true}); err != nil {
		t.Fatal(err)
	}
	removed, err := w.Prune(context.Background())
	if err != nil || len(removed) != 1 {
		t.Fatalf("prune: %v %+v", err, removed)
	}
	if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
		t.Fatalf("the orphan worktree is still there: %v", err)
	}
	if out := run(t, f.dir, "git", "branch", "--list", ws.Branch); out == "" {
		t.Fatal("prune deleted the branch of a dead item")
	}
	if out := run(t, f.dir, "git", "worktree", "list"); strings.Contains(out, it.ID) {
		t.Fatalf("git still lists the worktree:\n%s", out)
	}
}

func TestWorktreeLimit(t *testing.T) {
	f := newFixture(t, "")
	f.opts.MaxWorktrees = 2
	w := f.ws()
	var items []*queues.Item
	for i := 0; i < 3; i++ {
		it, _ := f.b.Add("code", queues.AddOptions{Title: fmt.Sprint("t", i)})
		items = append(items, it)
	}
	for _, it := range items[:2] {
		if _, err := w.Prepare(context.Background(), it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Prepare(context.Background(), items[2]); !errors.Is(err, workspace.ErrLimit) {
		t.Fatalf("third worktree with a limit of 2: %v, want ErrLimit", err)
	}
	// Once an item is done its worktree is an orphan and makes room.
	if _, err := f.b.Resolve(items[0].ID, queues.ResolveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Prepare(context.Background(), items[2]); err != nil {
		t.Fatalf("with an orphan to prune: %v", err)
	}
}

// TestMergeQueueSixDronesAndAConflict: six branches changing different
// files and two changing the same line merge concurrently through the
// queue; one of the two fails with a conflict, and merges once fixed.
func TestMergeQueueSixDronesAndAConflict(t *testing.T) {
	f := newFixture(t, "test -f shared.txt")
	w := f.ws()
	start := f.base()
	type job struct {
		it *queues.Item
		ws *workspace.Workspace
	}
	var jobs []job
	for i := 0; i < 6; i++ {
		i := i
		it, ws := f.work(w, fmt.Sprintf("file %d", i), func(dir string) {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("drone %d\n", i)), 0o644)
		})
		jobs = append(jobs, job{it, ws})
	}
	for _, word := range []string{"TWO", "zwei"} {
		word := word
		it, ws := f.work(w, "line two "+word, func(dir string) {
			os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("one\n"+word+"\nthree\n"), 0o644)
		})
		jobs = append(jobs, job{it, ws})
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = w.Merge(context.Background(), req(j.it, j.ws))
		}()
	}
	wg.Wait()
	var failed []int
	for i, err := range errs {
		if err != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 1 || failed[0] < 6 {
		t.Fatalf("failed merges %v (%v), want exactly one of the two same-line changes", failed, errs)
	}
	var me *workspace.MergeError
	if !errors.As(errs[failed[0]], &me) || !errors.Is(me, workspace.ErrConflict) || len(me.Files) != 1 || me.Files[0] != "shared.txt" {
		t.Fatalf("the failure is %v, want a conflict in shared.txt", errs[failed[0]])
	}
	// Seven merged, one commit each, on a linear history.
	if n := run(t, f.dir, "git", "rev-list", "--count", start+"..main"); n != "7" {
		t.Fatalf("%s commits on main, want 7", n)
	}
	if merges := run(t, f.dir, "git", "rev-list", "--merges", "--count", "main"); merges != "0" {
		t.Fatalf("rebase mode made %s merge commits", merges)
	}
	// The fix: the failed branch rebased by hand onto main, taking both words.
	bad := jobs[failed[0]]
	cmd := exec.Command("git", "rebase", "main")
	cmd.Dir = bad.ws.Path
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the rebase by hand did not conflict:\n%s", out)
	}
	os.WriteFile(filepath.Join(bad.ws.Path, "shared.txt"), []byte("one\nTWO zwei\nthree\n"), 0o644)
	run(t, bad.ws.Path, "git", "add", "shared.txt")
	cmd = exec.Command("git", "-c", "core.editor=true", "rebase", "--continue")
	cmd.Dir = bad.ws.Path
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_EDITOR=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase --continue: %v\n%s", err, out)
	}
	if _, err := w.Merge(context.Background(), req(bad.it, bad.ws)); err != nil {
		t.Fatalf("merge after the fix: %v", err)
	}
	if got := run(t, f.dir, "git", "show", "main:shared.txt"); got != "one\nTWO zwei\nthree" {
		t.Fatalf("shared.txt on main: %q", got)
	}
	recs, _ := w.Records("")
	count := map[string]int{}
	for _, r := range recs {
		count[r.String("status")]++
	}
	if count["landed"] != 8 || count["failed"] != 1 || len(recs) != 9 {
		t.Fatalf("merge records by status: %v", count)
	}
}

func TestMergeCheckFailureLeavesBase(t *testing.T) {
	f := newFixture(t, `echo "lint: f.txt has a tab" >&2; exit 7`)
	w := f.ws()
	before := f.base()
	it, ws := f.work(w, "tabbed", func(dir string) { os.WriteFile(filepath.Join(dir, "f.txt"), []byte("\tx\n"), 0o644) })
	_, err := w.Merge(context.Background(), req(it, ws))
	var me *workspace.MergeError
	if !errors.As(err, &me) || !errors.Is(err, workspace.ErrCheck) || me.Code != 7 || !strings.Contains(err.Error(), "lint: f.txt has a tab") {
		t.Fatalf("merge with a failing check: %v", err)
	}
	if f.base() != before {
		t.Fatal("a failing check moved the base")
	}
}

func TestMergeIntoCheckedOutBase(t *testing.T) {
	f := newFixture(t, "")
	run(t, f.dir, "git", "switch", "-q", "main")
	w := f.ws()
	it, ws := f.work(w, "readme", func(dir string) { os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644) })
	// A dirty checkout is not moved.
	os.WriteFile(filepath.Join(f.dir, "shared.txt"), []byte("local edit\n"), 0o644)
	if _, err := w.Merge(context.Background(), req(it, ws)); !errors.Is(err, workspace.ErrBaseBusy) {
		t.Fatalf("merge into a dirty checkout: %v, want ErrBaseBusy", err)
	}
	run(t, f.dir, "git", "checkout", "--", "shared.txt")
	res, err := w.Merge(context.Background(), req(it, ws))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "README")); string(got) != "hi\n" || f.base() != res.Head {
		t.Fatalf("the checkout of main was not brought along: README %q, main %s, head %s", got, f.base(), res.Head)
	}
	if st := run(t, f.dir, "git", "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Fatalf("checkout dirty after the merge:\n%s", st)
	}
}

func TestMergeModeMerge(t *testing.T) {
	f := newFixture(t, "")
	f.opts.Mode = "merge"
	w := f.ws()
	it1, ws1 := f.work(w, "a", func(dir string) { os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644) })
	it2, ws2 := f.work(w, "b", func(dir string) { os.WriteFile(filepath.Join(dir, "b"), []byte("b\n"), 0o644) })
	for _, r := range []workspace.MergeRequest{req(it1, ws1), req(it2, ws2)} {
		if _, err := w.Merge(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if n := run(t, f.dir, "git", "rev-list", "--merges", "--count", "main"); n != "1" {
		t.Fatalf("merge mode: %s merge commits on main, want 1 (the second branch merged the first)", n)
	}
}

// The SIGKILL tests run a merger in a helper process (this test binary,
// TestHelperMerger) and kill it mid-merge.

func TestHelperMerger(t *testing.T) {
	if os.Getenv("TAVERN_TEST_MERGER") == "" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_TEST_STORE"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := queues.Open(s, queues.Options{})
	sp, _ := tuples.NewSpace(s, tuples.SpaceOptions{Journal: b.Journal()})
	w, err := workspace.Open(context.Background(), workspace.Options{Repo: os.Getenv("TAVERN_TEST_REPO"), Base: "main",
		Check: os.Getenv("TAVERN_TEST_CHECK"), Broker: b, Space: sp})
	if err != nil {
		t.Fatal(err)
	}
	it, err := b.Get(os.Getenv("TAVERN_TEST_ITEM"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Merge(context.Background(), workspace.MergeRequest{Item: it.ID, Queue: it.Queue, Worktree: it.Worktree, Branch: it.Branch})
	fmt.Println("merge:", err)
}

func startMerger(t *testing.T, f *fixture, it *queues.Item, check string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMerger$", "-test.v")
	cmd.Env = append(os.Environ(), "TAVERN_TEST_MERGER=1", "TAVERN_TEST_STORE="+f.s.Root(), "TAVERN_TEST_REPO="+f.dir,
		"TAVERN_TEST_ITEM="+it.ID, "TAVERN_TEST_CHECK="+check)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMergeSurvivesSIGKILL kills a merger at three points: during the
// check (nothing landed: rolled back), with its git holding the base's
// ref lock (killed with it: the stale lock is removed, rolled back), and
// after its git moved the base but before the record says so (resumed as
// landed). Every time the base is whole, the slot comes back, and the
// merges that follow land.
func TestMergeSurvivesSIGKILL(t *testing.T) {
	f := newFixture(t, "")
	w := f.ws()
	tmp := t.TempDir()
	hook := filepath.Join(f.dir, ".git", "hooks", "reference-transaction")
	// The hook pauses a transaction on main at the state named by
	// $PAUSE_AT until $GO exists, after touching $READY.
	os.WriteFile(hook, []byte(`#!/bin/sh
[ -n "$PAUSE_AT" ] && [ "$1" = "$PAUSE_AT" ] || exit 0
grep -q ' refs/heads/main$' || exit 0
touch "$READY"
while [ ! -f "$GO" ]; do sleep 0.02; done
`), 0o755)

	cases := []struct {
		name       string
		check      string // the merger's check command
		pauseAt    string // reference-transaction state to stop at
		killGroup  bool   // kill the merger's process group (its git too)
		wantStatus string // the record after recovery
		landed     bool   // the base is at the item's head after recovery
	}{
		{name: "during the check", check: `touch "$READY"; sleep 60`, killGroup: true, wantStatus: "rolled_back"},
		{name: "holding the ref lock", pauseAt: "prepared", killGroup: true, wantStatus: "rolled_back"},
		{name: "after the base moved", pauseAt: "committed", wantStatus: "landed", landed: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ready, gofile := filepath.Join(tmp, fmt.Sprint("ready", i)), filepath.Join(tmp, fmt.Sprint("go", i))
			t.Setenv("READY", ready)
			t.Setenv("GO", gofile)
			t.Setenv("PAUSE_AT", tc.pauseAt)
			it, _ := f.work(w, fmt.Sprint("killed ", i), func(dir string) { os.WriteFile(filepath.Join(dir, fmt.Sprint("k", i)), []byte("x\n"), 0o644) })
			it, _ = f.b.Get(it.ID)
			before := f.base()
			m := startMerger(t, f, it, tc.check)
			waitFile(t, ready, 60*time.Second)
			if tc.killGroup {
				syscall.Kill(-m.Process.Pid, syscall.SIGKILL)
			} else {
				m.Process.Kill()
			}
			m.Wait()
			os.WriteFile(gofile, nil, 0o644) // an orphaned git finishes
			t.Setenv("PAUSE_AT", "")
			if recs, _ := w.Records(it.ID); len(recs) != 1 || !strings.Contains("rebased checked landing", recs[0].String("status")) {
				t.Fatalf("before recovery the killed merge's record should be unfinished: %v", recs)
			}
			// The next merge recovers first.
			other, ows := f.work(w, fmt.Sprint("after ", i), func(dir string) { os.WriteFile(filepath.Join(dir, fmt.Sprint("a", i)), []byte("y\n"), 0o644) })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := w.Merge(ctx, req(other, ows)); err != nil {
				t.Fatalf("the next merge: %v", err)
			}
			recs, _ := w.Records(it.ID)
			if len(recs) != 1 || recs[0].String("status") != tc.wantStatus {
				t.Fatalf("the killed merge's record: %d records, status %q, want %q", len(recs), recs[0].String("status"), tc.wantStatus)
			}
			head := recs[0].String("head")
			log := run(t, f.dir, "git", "log", "--format=%H", before+"..main")
			if tc.landed != strings.Contains(log, head) || (head == "" && tc.landed) {
				t.Fatalf("landed=%v, but main's new commits are:\n%s\n(the killed merge's head %s)", tc.landed, log, head)
			}
			run(t, f.dir, "git", "fsck", "--no-progress")
			if _, err := os.Stat(filepath.Join(f.dir, ".git", "refs", "heads", "main.lock")); err == nil {
				t.Fatal("main.lock is still there")
			}
			if tc.landed {
				if rec, _ := w.Landed(it.ID); rec == nil {
					t.Fatal("Landed does not see the resumed merge")
				}
				// The item's next claim completes it without running its
				// drone again (this one would fail). The other items of
				// the queue (merged directly above) are finished first.
				ents, _ := os.ReadDir(filepath.Join(f.s.Root(), "queues/code/pending"))
				for _, e := range ents {
					if id := strings.TrimSuffix(e.Name(), ".md"); id != it.ID {
						f.b.Resolve(id, queues.ResolveOptions{})
					}
				}
				m, err := agents.NewManager(f.s)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				res, err := m.Spawn(ctx, agents.SpawnOptions{Name: "after-kill", Queues: []string{"code"}, Work: agents.QueueWork(f.b),
					Command: []string{"/bin/sh", "-c", "exit 1"}, Hooks: []agents.SpawnHooks{w.Hooks()}})
				if err != nil || res.Outcome != agents.OutcomeDone || res.Item != it.ID || res.PID != 0 {
					t.Fatalf("spawn after a landed merge: %v %+v", err, res)
				}
				if got, _ := f.b.Get(it.ID); got.State != queues.Done || !strings.Contains(got.Result, "landed before its wrapper died") {
					t.Fatalf("the item is %s (%q)", got.State, got.Result)
				}
				return
			}
			// Rolled back: the item's merge goes again and lands.
			it, _ = f.b.Get(it.ID)
			if _, err := w.Merge(ctx, workspace.MergeRequest{Item: it.ID, Queue: it.Queue, Worktree: it.Worktree, Branch: it.Branch}); err != nil {
				t.Fatalf("merge again after the rollback: %v", err)
			}
		})
	}
}

// TestMergeWithCommittedStore: tavern init's .gitignore suggests
// committing the store, and then the base's checkout is never clean
// while Tavern runs (its journal and documents change at every step).
// Those changes are not the user's: the merge lands (it failed with
// ErrBaseBusy every time), and the recovery of a fast-forward killed
// half-way puts the checkout back without undoing the store's writes
// since its last commit (git reset --hard did).
func TestMergeWithCommittedStore(t *testing.T) {
	f := newFixture(t, "")
	run(t, f.dir, "git", "switch", "-q", "main")
	os.WriteFile(filepath.Join(f.dir, ".gitignore"), nil, 0o644)
	run(t, f.dir, "git", "add", "-A")
	run(t, f.dir, "git", "commit", "-qm", "the store too")
	w := f.ws()
	it, ws := f.work(w, "readme", func(dir string) { os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644) })
	if st := run(t, f.dir, "git", "status", "--porcelain", "--untracked-files=no"); !strings.Contains(st, ".tavern/") {
		t.Fatalf("the store should have changed since its commit:\n%s", st)
	}
	res, err := w.Merge(context.Background(), req(it, ws))
	if err != nil {
		t.Fatalf("merge into a checkout whose committed store changed: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "README")); string(got) != "hi\n" || f.base() != res.Head {
		t.Fatalf("the checkout of main was not brought along: README %q, main %s, head %s", got, f.base(), res.Head)
	}

	// A merger that died landing (base still at old): the recovery
	// restores the checkout, not the store.
	old := f.base()
	now := time.Now()
	rec, err := docstore.New(schema.Merge, []docstore.Field{{Key: schema.VersionField, Value: schema.Merge.Version}, {Key: "id", Value: "dead"},
		{Key: "item", Value: "gone"}, {Key: "repo", Value: run(t, f.dir, "git", "rev-parse", "--show-toplevel")}, {Key: "base", Value: "main"}, {Key: "status", Value: "landing"}, {Key: "old", Value: old},
		{Key: "head", Value: strings.Repeat("0", 40)}, {Key: "created", Value: now}, {Key: "updated", Value: now}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.Create("merges/dead.md", rec); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.dir, "README"), []byte("half-written\n"), 0o644)
	journal := run(t, f.dir, "sh", "-c", "cat .tavern/events/*.jsonl")
	it2, ws2 := f.work(w, "license", func(dir string) { os.WriteFile(filepath.Join(dir, "LICENSE"), []byte("mit\n"), 0o644) })
	if _, err := w.Merge(context.Background(), req(it2, ws2)); err != nil {
		t.Fatalf("the merge after a dead one: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "README")); string(got) != "hi\n" {
		t.Fatalf("the half-updated checkout was not put back: README %q", got)
	}
	if after := run(t, f.dir, "sh", "-c", "cat .tavern/events/*.jsonl"); !strings.HasPrefix(after, journal) {
		t.Fatalf("the recovery undid the store's journal:\nbefore: %d bytes\nafter:  %d bytes", len(journal), len(after))
	}
}

// A merge of a worktree that is not Tavern's (the project's checkout,
// edited into the item while its drone ran) or of the base itself is
// refused before anything runs: no leftovers commit (add -A) takes the
// user's files, the base does not move.
func TestMergeRefusesForeignWorktree(t *testing.T) {
	f := newFixture(t, "")
	w := f.ws()
	it, ws := f.work(w, "own", func(dir string) { os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644) })
	os.WriteFile(filepath.Join(f.dir, "mine.txt"), []byte("user's\n"), 0o644)
	before := f.base()
	for _, r := range []workspace.MergeRequest{
		{Item: it.ID, Queue: it.Queue, Worktree: f.dir, Branch: "work"},
		{Item: it.ID, Queue: it.Queue, Worktree: ws.Path, Branch: "main"},
	} {
		if _, err := w.Merge(context.Background(), r); !errors.Is(err, workspace.ErrConfig) {
			t.Errorf("merge of %s on %s: %v, want ErrConfig", r.Worktree, r.Branch, err)
		}
	}
	if got := f.base(); got != before {
		t.Errorf("base moved: got %s, want %s", got, before)
	}
	if got := run(t, f.dir, "git", "status", "--porcelain", "mine.txt"); got != "?? mine.txt" {
		t.Errorf("mine.txt: got %q, want it untracked", got)
	}
}

// A merger killed while it fast-forwarded the base's checkout is
// recovered at the next merge, maybe much later: only the files the
// fast-forward writes are put back. An edit the person made since to
// another file is theirs and stays (git reset --hard threw it away).
func TestRecoverLandingKeepsOtherEdits(t *testing.T) {
	f := newFixture(t, "")
	run(t, f.dir, "git", "switch", "-q", "main")
	w := f.ws()
	old := f.base()
	it, ws := f.work(w, "half", func(dir string) { os.WriteFile(filepath.Join(dir, "half.txt"), []byte("from the branch\n"), 0o644) })
	head := run(t, ws.Path, "git", "rev-parse", "HEAD")
	now := time.Now()
	rec, err := docstore.New(schema.Merge, []docstore.Field{{Key: schema.VersionField, Value: schema.Merge.Version}, {Key: "id", Value: "dead"},
		{Key: "item", Value: it.ID}, {Key: "repo", Value: run(t, f.dir, "git", "rev-parse", "--show-toplevel")}, {Key: "base", Value: "main"}, {Key: "status", Value: "landing"},
		{Key: "old", Value: old}, {Key: "head", Value: head}, {Key: "created", Value: now}, {Key: "updated", Value: now}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.Create("merges/dead.md", rec); err != nil {
		t.Fatal(err)
	}
	// What the killed fast-forward wrote, and the person's edit since.
	os.WriteFile(filepath.Join(f.dir, "half.txt"), []byte("from the branch\n"), 0o644)
	run(t, f.dir, "git", "add", "half.txt")
	os.WriteFile(filepath.Join(f.dir, "shared.txt"), []byte("my edit\n"), 0o644)

	// doctor --fix, or the next merge, recovers.
	other, ows := f.work(w, "other", func(dir string) { os.WriteFile(filepath.Join(dir, "other.txt"), []byte("o\n"), 0o644) })
	_, err = w.Merge(context.Background(), req(other, ows))
	if !errors.Is(err, workspace.ErrBaseBusy) {
		t.Fatalf("merge over the person's edit: %v, want ErrBaseBusy", err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "shared.txt")); string(got) != "my edit\n" {
		t.Errorf("the person's edit: got %q, want it kept", got)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "half.txt")); !os.IsNotExist(err) {
		t.Errorf("half.txt, written by the killed fast-forward: %v, want it gone", err)
	}
	if got := f.base(); got != old {
		t.Errorf("base: got %s, want %s", got, old)
	}
}

// TestRemoveKeepsForeignBranches: removing a worktree with its branch
// deletes only a branch Tavern made (its prefix), never the base or
// another of the person's, whatever the item's hand-edited branch: field
// names (doctor --fix passed it through, and git branch -D main
// succeeded when main was not checked out).
func TestRemoveKeepsForeignBranches(t *testing.T) {
	f := newFixture(t, "")
	run(t, f.dir, "git", "branch", "feature")
	w := f.ws()
	for _, branch := range []string{"main", "feature"} {
		_, ws := f.work(w, "hand edited "+branch, func(dir string) { os.WriteFile(filepath.Join(dir, branch+".txt"), []byte("x\n"), 0o644) })
		err := w.Remove(context.Background(), ws.Path, branch, true)
		if !errors.Is(err, workspace.ErrConfig) {
			t.Errorf("Remove with branch %s: %v, want ErrConfig", branch, err)
		}
		if out, err := exec.Command("git", "-C", f.dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Output(); err != nil {
			t.Errorf("branch %s: gone (%q, %v), want it kept", branch, out, err)
		}
	}
	_, ws := f.work(w, "own", func(dir string) { os.WriteFile(filepath.Join(dir, "own.txt"), []byte("x\n"), 0o644) })
	if err := w.Remove(context.Background(), ws.Path, ws.Branch, true); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", f.dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+ws.Branch).Run(); err == nil {
		t.Errorf("branch %s: kept, want it deleted with its worktree", ws.Branch)
	}
}
