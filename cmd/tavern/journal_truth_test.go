package main

// End-to-end tests of the journal's promise (issue 14): every change made
// by hand, by an editor or by a tool is journaled exactly once as
// "external", with the right operation and changed fields, never as a
// torn intermediate state, and no change tavern made itself is. They
// drive the built binary and real programs (vim, sed, git, rsync) under
// load: the test burns four CPUs while it runs, so the settle logic is
// shown not to depend on a quiet machine.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// burnCPU keeps four goroutines spinning until the test ends.
func burnCPU(t testing.TB) {
	t.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for !stop.Load() {
				for range 10000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
}

// needProgram returns the path of prog, or skips the test saying why
// (the Makefile and .ci/run install vim, git and rsync where missing).
func needProgram(t testing.TB, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s is not installed (make test installs it with apt-get): %v", prog, err)
	}
	return p
}

// watchProc is a running `tavern watch --json`.
type watchProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []journal.Event
	stderr bytes.Buffer
	change chan struct{} // a new event or the end of output
	ended  bool
}

// watchJSON runs `tavern watch --json ARGS` in p and waits until it is
// ready (its "watching" line on stderr).
func watchJSON(t testing.TB, p *project, args ...string) *watchProc {
	t.Helper()
	return watchJSONIn(t, p, nil, args...)
}

// watchJSONIn is watchJSON with the command run through wrap (e.g. a
// shell in a user namespace), which must exec its last arguments.
func watchJSONIn(t testing.TB, p *project, wrap []string, args ...string) *watchProc {
	t.Helper()
	argv := append(append(slices.Clone(wrap), tavernBin(t), "watch", "--json"), args...)
	cmd := p.cmd(context.Background(), argv[0], argv[1:]...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watchProc{t: t, cmd: cmd, change: make(chan struct{}, 1)}
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			w.mu.Lock()
			w.stderr.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if strings.Contains(sc.Text(), "watching") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e journal.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("watch: bad JSON line %q: %v", sc.Text(), err)
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
			w.notify()
		}
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
		w.notify()
	}()
	t.Cleanup(func() { w.stop() })
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("watch never became ready; stderr:\n%s", w.errText())
	}
	return w
}

func (w *watchProc) notify() {
	select {
	case w.change <- struct{}{}:
	default:
	}
}

func (w *watchProc) errText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}

// stop interrupts the watch and waits for it to exit.
func (w *watchProc) stop() {
	if w.cmd.ProcessState != nil {
		return
	}
	w.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		w.cmd.Process.Kill()
		<-done
		w.t.Errorf("watch did not exit on SIGINT")
	}
}

// streamed returns the document events (doc.*) the watch printed so far.
func (w *watchProc) streamed() []journal.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []journal.Event
	for _, e := range w.events {
		if strings.HasPrefix(e.Type, "doc.") {
			out = append(out, e)
		}
	}
	return out
}

// waitStream waits until at least n streamed document events satisfy
// pred.
func (w *watchProc) waitStream(what string, n int, pred func(journal.Event) bool) {
	w.t.Helper()
	deadline := time.After(120 * time.Second)
	for {
		got := 0
		for _, e := range w.streamed() {
			if pred(e) {
				got++
			}
		}
		if got >= n {
			return
		}
		w.mu.Lock()
		ended := w.ended
		w.mu.Unlock()
		if ended {
			w.t.Fatalf("watch ended while waiting for %s (%d of %d); stderr:\n%s", what, got, n, w.errText())
		}
		select {
		case <-w.change:
		case <-deadline:
			w.t.Fatalf("waiting for %s: %d of %d streamed\n%s", what, got, n, describeEvents(w.streamed()))
		}
	}
}

func describeEvents(es []journal.Event) string {
	var b strings.Builder
	for i, e := range es {
		if i == 200 {
			fmt.Fprintf(&b, "... %d more\n", len(es)-i)
			break
		}
		op, _ := e.Data["op"].(string)
		fmt.Fprintf(&b, "%s %s %s %v\n", e.Type, op, e.Path, e.Data["changed"])
	}
	return b.String()
}

// externals returns the journal's external entries, read with `tavern
// log` as a user would.
func externals(t testing.TB, p *project) []journal.Event {
	t.Helper()
	out := p.ok("log", "--type", journal.TypeExternal, "--json")
	var es []journal.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		e, err := journal.ParseEventLine([]byte(line))
		if err != nil {
			t.Fatalf("log: bad line %q: %v", line, err)
		}
		es = append(es, e)
	}
	return es
}

var fenceN atomic.Int64

// fence writes a document by hand and waits until the journal has its
// external entry. The journal decides the changes a watcher observed in
// the order it observed them, so every change made before the fence has
// been decided once it returns. It returns the externals journaled so
// far, without the fences.
func fence(t testing.TB, p *project) []journal.Event {
	t.Helper()
	name := fmt.Sprintf("zz-fence-%d", fenceN.Add(1))
	rel := "agents/" + name + ".md"
	writeAtomic(t, p.path(rel), "---\nname: "+name+"\nstate: idle\n---\n")
	deadline := time.Now().Add(120 * time.Second)
	for {
		// Polled in-process (cheap); the answer is read as a user would.
		found := false
		if _, err := journal.Read(p.path(""), journal.Filter{Path: rel}, func(journal.Event, error) bool {
			found = true
			return false
		}); err != nil {
			t.Fatal(err)
		}
		if found {
			return withoutFences(externals(t, p))
		}
		if time.Now().After(deadline) {
			t.Fatalf("fence %s never journaled; externals:\n%s", rel, describeEvents(externals(t, p)))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
}

func withoutFences(es []journal.Event) []journal.Event {
	return slices.DeleteFunc(es, func(e journal.Event) bool { return strings.HasPrefix(e.Path, "agents/zz-fence-") })
}

// writeAtomic writes path by rename, as the engine and careful tools do.
func writeAtomic(t testing.TB, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// toolProject is a store for tests where only hand edits happen: the
// watcher's grace for the engine's journal entry is short, which makes
// fences quick.
func toolProject(t testing.TB) *project {
	t.Helper()
	p := newProject(t)
	p.ok("set", "tavern.md", "external_grace="+journalGrace, "settle="+journalSettle)
	return p
}

func agentText(name, state string) string {
	return "---\nname: " + name + "\nrole: dev\nstate: " + state + "\n---\nNotes on " + name + ".\n"
}

// handAgents writes n agent documents a000.. by hand (atomically).
func handAgents(t testing.TB, p *project, prefix string, n int, state string) []string {
	t.Helper()
	var rels []string
	for i := range n {
		name := fmt.Sprintf("%s%03d", prefix, i)
		rel := "agents/" + name + ".md"
		writeAtomic(t, p.path(rel), agentText(name, state))
		rels = append(rels, rel)
	}
	return rels
}

// since returns the events of es after the first skip ones.
func since(es []journal.Event, skip int) []journal.Event {
	if skip > len(es) {
		return nil
	}
	return es[skip:]
}

// tally counts events per "path op [changed]".
func tally(es []journal.Event) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		op, _ := e.Data["op"].(string)
		if op == "" {
			op = e.Type
		}
		m[fmt.Sprintf("%s %s %v", e.Path, op, e.Data["changed"])]++
	}
	return m
}

// checkTally compares the per-path counts of es with want, listing at
// most a few differences.
func checkTally(t testing.TB, what string, es []journal.Event, want map[string]int) {
	t.Helper()
	got := tally(es)
	var diffs []string
	for k, n := range want {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("%s: got %d, want %d", k, got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %d, want 0", k, n))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... %d more", len(diffs)-20))
		}
		t.Errorf("%s: %d entries, %d differences:\n%s", what, len(es), len(diffs), strings.Join(diffs, "\n"))
	}
}

func docEvents(es []journal.Event, prefix string) []journal.Event {
	var out []journal.Event
	for _, e := range es {
		if strings.HasPrefix(e.Path, prefix) && !strings.HasPrefix(e.Path, "agents/zz-fence-") {
			out = append(out, e)
		}
	}
	return out
}

// TestJournalVimSaves: 20 saves with vim in each of its write modes are
// 20 updates, in the stream and in the journal, each listing the one
// field that changed; never a removal, creation or invalid state. The
// saves toggle a field, so every other one reverts to an earlier
// revision (which the journal used to skip).
func TestJournalVimSaves(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	vim := needProgram(t, "vim")
	for i, mode := range []struct {
		name      string
		set       string
		sameInode bool // the save rewrites the file in place
	}{
		// vim's default on Unix: the old file is renamed to the backup
		// name and a new file is written. backupskip= because the
		// default skips backups under /tmp (where t.TempDir is).
		{"default", "set backupcopy=auto backupskip=", false},
		{"backupcopy-yes", "set backupcopy=yes backupskip=", true},
		{"nowritebackup", "set nowritebackup nobackup", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if i > 0 && !journalLong {
				t.Skip("the other write modes run with -tags long (make test-long)")
			}
			burnCPU(t)
			p := toolProject(t)
			rel := "agents/v.md"
			writeAtomic(t, p.path(rel), agentText("v", "idle"))
			w := watchJSON(t, p)
			base := len(fence(t, p))
			ino := func() uint64 {
				fi, err := os.Stat(p.path(rel))
				if err != nil {
					t.Fatal(err)
				}
				return fi.Sys().(*syscall.Stat_t).Ino
			}
			inodes := map[uint64]bool{ino(): true}
			state := "idle"
			for i := range vimSaves {
				next := map[string]string{"idle": "working", "working": "idle"}[state]
				cmd := p.cmd(context.Background(), vim, "-N", "-u", "NONE", "-i", "NONE", "-es",
					"-c", mode.set, "-c", "%s/^state: "+state+"$/state: "+next+"/", "-c", "wq", p.path(rel))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("vim save %d: %v\n%s", i+1, err, out)
				}
				state = next
				inodes[ino()] = true
				// A person saves again after looking at the result: the
				// next save starts once this one was seen.
				w.waitStream(fmt.Sprintf("save %d", i+1), i+1, func(e journal.Event) bool {
					return e.Path == rel && e.Type == journal.TypeUpdated
				})
			}
			if got := len(inodes) == 1; got != mode.sameInode {
				t.Errorf("vim wrote in place: %v, want %v (%d inodes): the mode under test was not exercised", got, mode.sameInode, len(inodes))
			}
			ext := since(fence(t, p), base)
			checkTally(t, "journal", ext, map[string]int{rel + " doc.updated [state]": vimSaves})
			checkTally(t, "stream", docEvents(w.streamed(), rel), map[string]int{rel + " doc.updated [state]": vimSaves})
		})
	}
}

// TestJournalSedRoundTrip: sed -i over 500 documents and back is 1,000
// updates, each document twice (the second time back to a revision the
// journal has seen before).
func TestJournalSedRoundTrip(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	sed := needProgram(t, "sed")
	burnCPU(t)
	p := toolProject(t)
	w := watchJSON(t, p)
	// Written while the watcher runs: their first revision is journaled,
	// so the way back is to a revision the journal holds.
	rels := handAgents(t, p, "s", sedDocs, "idle")
	w.waitStream("creation", sedDocs, func(e journal.Event) bool {
		return strings.HasPrefix(e.Path, "agents/s") && e.Type == journal.TypeCreated
	})
	base := len(fence(t, p))
	run := func(from, to string) {
		t.Helper()
		args := []string{"-i", "s/^state: " + from + "$/state: " + to + "/"}
		for _, r := range rels {
			args = append(args, p.path(r))
		}
		if out, err := exec.Command(sed, args...).CombinedOutput(); err != nil {
			t.Fatalf("sed: %v\n%s", err, out)
		}
	}
	isUpdate := func(e journal.Event) bool {
		return strings.HasPrefix(e.Path, "agents/s") && e.Type == journal.TypeUpdated
	}
	run("idle", "working")
	w.waitStream("sed forward", sedDocs, isUpdate)
	run("working", "idle")
	w.waitStream("sed back", 2*sedDocs, isUpdate)
	ext := since(fence(t, p), base)
	want := map[string]int{}
	for _, r := range rels {
		want[r+" doc.updated [state]"] = 2
	}
	checkTally(t, "journal", ext, want)
	for _, r := range rels {
		want[r+" doc.created <nil>"] = 1
	}
	checkTally(t, "stream", docEvents(w.streamed(), "agents/s"), want)
}

// gitRepo makes p's directory a git repository tracking .tavern/agents.
func gitRepo(t testing.TB, p *project) func(args ...string) {
	t.Helper()
	git := needProgram(t, "git")
	return func(args ...string) {
		t.Helper()
		cmd := p.cmd(context.Background(), git, args...)
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// gitBranches sets up branch main with 3*gitDocs agents a000.. and
// branch other where 3*gitDocs documents differ (with gitDocs 100:
// a000..a099 deleted, a100..a199 modified, b000..b099 created). It
// returns the journal entries a switch from main to other (and back)
// must produce.
func gitBranches(t testing.TB, p *project, git func(...string)) (toOther, toMain map[string]int) {
	t.Helper()
	git("init", "-q", "-b", "main")
	handAgents(t, p, "a", 3*gitDocs, "idle")
	git("add", ".tavern/agents")
	git("commit", "-q", "-m", "main")
	git("checkout", "-q", "-b", "other")
	toOther, toMain = map[string]int{}, map[string]int{}
	for i := range gitDocs {
		a := fmt.Sprintf("agents/a%03d.md", i)
		git("rm", "-q", ".tavern/"+a)
		toOther[a+" doc.removed <nil>"] = 1
		toMain[a+" doc.created <nil>"] = 1
		m := fmt.Sprintf("agents/a%03d.md", gitDocs+i)
		writeAtomic(t, p.path(m), agentText(fmt.Sprintf("a%03d", gitDocs+i), "working"))
		toOther[m+" doc.updated [state]"] = 1
		toMain[m+" doc.updated [state]"] = 1
		b := fmt.Sprintf("agents/b%03d.md", i)
		writeAtomic(t, p.path(b), agentText(fmt.Sprintf("b%03d", i), "idle"))
		toOther[b+" doc.created <nil>"] = 1
		toMain[b+" doc.removed <nil>"] = 1
	}
	git("add", "-A", ".tavern/agents")
	git("commit", "-q", "-m", "other")
	git("checkout", "-q", "main")
	return toOther, toMain
}

func addTally(dst, src map[string]int) {
	for k, n := range src {
		dst[k] += n
	}
}

// TestJournalGitCheckout: switching between branches where 300
// documents differ, with a watcher running, journals every change once
// with its kind; so does git stash and stash pop. The removal of a file
// that git replaces is never seen as a removal plus a creation, and a
// file git is still writing is never journaled.
func TestJournalGitCheckout(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	burnCPU(t)
	p := toolProject(t)
	git := gitRepo(t, p)
	toOther, toMain := gitBranches(t, p, git)
	w := watchJSON(t, p)
	base := len(fence(t, p))
	want := map[string]int{}
	agent := func(e journal.Event) bool {
		return strings.HasPrefix(e.Path, "agents/a") || strings.HasPrefix(e.Path, "agents/b")
	}
	n := 0
	for range gitRounds {
		git("checkout", "-q", "other")
		n += 3 * gitDocs
		w.waitStream("checkout other", n, agent)
		git("checkout", "-q", "main")
		n += 3 * gitDocs
		w.waitStream("checkout main", n, agent)
		addTally(want, toOther)
		addTally(want, toMain)
	}
	// stash: 10 documents edited by hand, stashed (back to the commit)
	// and popped (the edit again, a revision journaled before).
	for i := range 10 {
		rel := fmt.Sprintf("agents/a%03d.md", 2*gitDocs+i)
		writeAtomic(t, p.path(rel), agentText(fmt.Sprintf("a%03d", 2*gitDocs+i), "done"))
		want[rel+" doc.updated [state]"] += 3
	}
	n += 10
	w.waitStream("hand edits", n, agent)
	git("stash", "-q")
	n += 10
	w.waitStream("stash", n, agent)
	git("stash", "pop", "-q")
	n += 10
	w.waitStream("stash pop", n, agent)
	ext := since(fence(t, p), base)
	checkTally(t, "journal", ext, want)
	checkTally(t, "stream", docEvents(w.streamed(), "agents/"), want)
}

// TestJournalGitCheckoutWithoutWatcher: a watcher started after the
// switch journals what changed since the last journaled state, also when
// a switch back makes every document a revision journaled before.
func TestJournalGitCheckoutWithoutWatcher(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	burnCPU(t)
	p := toolProject(t)
	git := gitRepo(t, p)
	toOther, toMain := gitBranches(t, p, git)
	w := watchJSON(t, p)
	base := len(fence(t, p))
	w.stop()
	for i, step := range []struct {
		branch string
		want   map[string]int
	}{{"other", toOther}, {"main", toMain}} {
		git("checkout", "-q", step.branch)
		// ls refreshes the index in between: it must not swallow anything.
		p.ok("ls", "agents")
		w := watchJSON(t, p)
		all := fence(t, p)
		checkTally(t, fmt.Sprintf("step %d (%s)", i+1, step.branch), since(all, base), step.want)
		base = len(all)
		w.stop()
	}
}

// TestJournalRsync: rsync -a --delete into a watched store journals each
// created, updated and deleted document once.
func TestJournalRsync(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	rsync := needProgram(t, "rsync")
	burnCPU(t)
	p := toolProject(t)
	n := rsyncDocs
	handAgents(t, p, "r", 3*n, "idle")
	src := t.TempDir()
	want := map[string]int{}
	for i := range 4 * n {
		name := fmt.Sprintf("r%03d", i)
		rel := "agents/" + name + ".md"
		switch {
		case i < n: // deleted by --delete
			want[rel+" doc.removed <nil>"] = 1
			continue
		case i < 2*n: // modified
			want[rel+" doc.updated [state]"] = 1
			os.WriteFile(filepath.Join(src, name+".md"), []byte(agentText(name, "working")), 0o644)
		case i < 3*n: // unchanged content, newer mtime: rsync rewrites it
			os.WriteFile(filepath.Join(src, name+".md"), []byte(agentText(name, "idle")), 0o644)
		default: // created
			want[rel+" doc.created <nil>"] = 1
			os.WriteFile(filepath.Join(src, name+".md"), []byte(agentText(name, "idle")), 0o644)
		}
	}
	w := watchJSON(t, p)
	base := len(fence(t, p))
	if out, err := exec.Command(rsync, "-a", "--delete", src+"/", p.path("agents")+"/").CombinedOutput(); err != nil {
		t.Fatalf("rsync: %v\n%s", err, out)
	}
	w.waitStream("rsync", 3*n, func(e journal.Event) bool { return strings.HasPrefix(e.Path, "agents/r") })
	ext := since(fence(t, p), base)
	checkTally(t, "journal", ext, want)
	checkTally(t, "stream", docEvents(w.streamed(), "agents/r"), want)
}

// TestJournalTwoHalvesWriter: a program that writes a document in two
// halves 50 ms apart (not atomically) is journaled once, complete: a new
// document as created, an existing one as updated, never invalid.
func TestJournalTwoHalvesWriter(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	burnCPU(t)
	p := toolProject(t)
	handAgents(t, p, "h", 5, "idle")
	w := watchJSON(t, p)
	base := len(fence(t, p))
	halves := func(rel, text string) {
		t.Helper()
		f, err := os.OpenFile(p.path(rel), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		mid := len(text) / 2
		if _, err := f.WriteString(text[:mid]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the writer's pause (the scenario, not a wait)
		if _, err := f.WriteString(text[mid:]); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{}
	for i := range 5 {
		name := fmt.Sprintf("h%03d", i)
		halves("agents/"+name+".md", agentText(name, "working"))
		want["agents/"+name+".md doc.updated [state]"] = 1
		nn := fmt.Sprintf("n%03d", i)
		halves("agents/"+nn+".md", agentText(nn, "idle"))
		want["agents/"+nn+".md doc.created <nil>"] = 1
	}
	w.waitStream("writes", 10, func(e journal.Event) bool {
		return e.Type == journal.TypeCreated || e.Type == journal.TypeUpdated
	})
	ext := since(fence(t, p), base)
	checkTally(t, "journal", ext, want)
	checkTally(t, "stream", docEvents(w.streamed(), "agents/"), want)
}

// TestJournalNoContentChange: touch, chmod and rewrites with the same
// bytes (in place and by rename) change no document: no entries.
func TestJournalNoContentChange(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	burnCPU(t)
	p := toolProject(t)
	rels := handAgents(t, p, "t", 4, "idle")
	w := watchJSON(t, p)
	base := len(fence(t, p))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p.path(rels[0]), later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p.path(rels[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	same, _ := os.ReadFile(p.path(rels[2]))
	if err := os.WriteFile(p.path(rels[2]), same, 0o644); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, p.path(rels[3]), agentText("t003", "idle"))
	ext := since(fence(t, p), base)
	checkTally(t, "journal", ext, map[string]int{})
	checkTally(t, "stream", docEvents(w.streamed(), "agents/t"), map[string]int{})
}

// TestJournalLsDoesNotSwallow: a hand edit made while no watcher runs is
// journaled by the next watcher, even when `tavern ls` refreshed the
// index in between (the whole index or only part of it). The changed
// fields are listed when a watcher saw the previous state; a state only
// the engine ever wrote (no watcher running) is known by its revision
// alone, so its change is journaled without the list.
func TestJournalLsDoesNotSwallow(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	for _, tc := range []struct {
		name    string
		ls      []string
		watched bool // a watcher ran before the edit
		indexed bool // an ls ran before the edit
	}{
		{"whole-index", []string{"ls", "agents"}, true, false},
		{"part-of-index", []string{"ls", "queues"}, true, false},
		{"no-index", nil, true, false},
		{"never-watched", []string{"ls", "agents"}, false, false},
		// The index had alice's state before the edit: the ls after
		// it must not make the next watcher lose the changed fields.
		{"indexed-never-watched", []string{"ls", "agents"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no-index" && !journalLong {
				t.Skip("runs with -tags long (make test-long)")
			}
			p := newProject(t)
			p.ok("new", "agent", "alice")
			p.ok("new", "agent", "bob")
			if tc.watched {
				w := watchJSON(t, p)
				fence(t, p)
				w.stop()
				os.RemoveAll(p.path(".index"))
			}
			if tc.indexed {
				p.ok("ls", "agents")
			}
			base := len(withoutFences(externals(t, p)))
			writeAtomic(t, p.path("agents/alice.md"), strings.Replace(p.read("agents/alice.md"), "state: idle", "state: working", 1))
			if err := os.Remove(p.path("agents/bob.md")); err != nil {
				t.Fatal(err)
			}
			if tc.ls != nil {
				p.ok(tc.ls...)
			}
			watchJSON(t, p)
			changed := "[state]"
			if !tc.watched && !tc.indexed {
				// Written by tavern, edited by hand, and never read
				// by a watcher or an index in between: unknowable.
				changed = "<nil>"
			}
			checkTally(t, "journal", since(fence(t, p), base), map[string]int{
				"agents/alice.md doc.updated " + changed: 1,
				"agents/bob.md doc.removed <nil>":        1,
			})
		})
	}
}

// TestJournalEngineWritesNotExternal: with a watcher running, what other
// tavern processes write (documents, queue claims and completions,
// tokens, tuples, messages, a spawned agent) is never journaled as
// external.
func TestJournalEngineWritesNotExternal(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	p := newProject(t)
	w := watchJSON(t, p)
	fence(t, p)
	p.ok("new", "agent", "alice")
	p.ok("set", "agents/alice", "role=builder")
	p.ok("queue", "create", "build")
	for i := range 3 {
		p.ok("queue", "add", "build", "--title", fmt.Sprintf("job %d", i))
	}
	for range 2 {
		var item struct{ ID string }
		if err := json.Unmarshal([]byte(p.ok("queue", "take", "build", "--as", "alice", "--json")), &item); err != nil || item.ID == "" {
			t.Fatalf("take: %v", err)
		}
		p.ok("item", "done", item.ID)
	}
	p.ok("token", "init", "merge", "--count", "1")
	handle := strings.TrimSpace(p.ok("token", "acquire", "merge", "--ttl", "1m"))
	p.ok("token", "release", "merge", handle)
	p.ok("tuple", "out", "job", "status=ready")
	p.ok("tuple", "in", "job", "status=ready")
	p.ok("channel", "create", "general")
	p.ok("send", "general", "hello", "--as", "alice")
	p.ok("recv", "general", "--as", "alice")
	p.ok("spawn", "--name", "w", "--", "true")
	p.ok("rm", "agents/alice")
	if ext := fence(t, p); len(ext) > 0 {
		t.Errorf("engine writes journaled as external:\n%s", describeEvents(ext))
	}
	// A watcher started afterwards finds the journal's record of every
	// path in agreement with the disk.
	w.stop()
	watchJSON(t, p)
	if ext := fence(t, p); len(ext) > 0 {
		t.Errorf("engine writes journaled as external by the next watcher:\n%s", describeEvents(ext))
	}
}

// inLowWatchLimit returns a command prefix that runs a program with at
// most n inotify watches (a user namespace with its own
// max_inotify_watches: the machine's limit stays as it is), or skips.
func inLowWatchLimit(t *testing.T, n int) []string {
	t.Helper()
	unshare := needProgram(t, "unshare")
	script := fmt.Sprintf("echo %d > /proc/sys/user/max_inotify_watches && exec \"$@\"", n)
	if out, err := exec.Command(unshare, "-U", "-r", "sh", "-c", script, "sh", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot lower the inotify watch limit in a user namespace here (%v: %s); "+
			"the fallback is also tested by injecting ENOSPC at the system call (watcher: TestWatchLimitFallsBackToPolling)", err, out)
	}
	return []string{unshare, "-U", "-r", "sh", "-c", script, "sh"}
}

// TestWatchLimitWarns (issue 13, "inotify exhaustion is silent"): with
// fewer inotify watches left than the store has directories, `tavern
// watch` polls instead of losing events, says so on stderr and in the
// journal, and still reports and journals a hand edit; a blocking take
// in the same situation warns and still gets the item.
func TestWatchLimitWarns(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	wrap := inLowWatchLimit(t, 6)
	p := newProject(t)
	w := watchJSONIn(t, p, wrap)
	// Under --json the warning is a JSON error object, as every error
	// on stderr is.
	if e := w.errText(); !jsonLineWith(e, "watch limit") || !strings.Contains(e, "poll") {
		t.Errorf("watch --json stderr does not warn about the watch limit in a JSON object:\n%s", e)
	}
	var degraded []journal.Event
	for _, line := range strings.Split(strings.TrimSpace(p.ok("log", "--type", journal.TypeDegraded, "--json")), "\n") {
		if e, err := journal.ParseEventLine([]byte(line)); err == nil {
			degraded = append(degraded, e)
		}
	}
	if len(degraded) == 0 {
		t.Errorf("no %s event in the journal", journal.TypeDegraded)
	}
	writeAtomic(t, p.path("queues/x.md"), "---\nname: x\n---\n") // a directory it may not watch
	w.waitStream("the hand edit", 1, func(e journal.Event) bool { return e.Path == "queues/x.md" })
	if ext := fence(t, p); !slices.ContainsFunc(ext, func(e journal.Event) bool { return e.Path == "queues/x.md" }) {
		t.Errorf("hand edit not journaled:\n%s", describeEvents(ext))
	}

	p.ok("queue", "create", "build")
	// No watch left at all (other processes of the user hold them).
	wrap = inLowWatchLimit(t, 0)
	take := p.cmd(context.Background(), wrap[0], append(wrap[1:], tavernBin(t), "queue", "take", "build", "--wait", "60s", "--json")...)
	var out, errb bytes.Buffer
	take.Stdout, take.Stderr = &out, &errb
	if err := take.Start(); err != nil {
		t.Fatal(err)
	}
	// The take is waiting once its warning is in the journal.
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(p.ok("log", "--type", journal.TypeDegraded), "\n") <= len(degraded) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting take journaled no warning")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	p.ok("queue", "add", "build", "--title", "late")
	if err := take.Wait(); err != nil {
		t.Fatalf("take --wait: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "late") || !jsonLineWith(errb.String(), "watch limit") {
		t.Errorf("take --wait --json: stdout %q, stderr %q: want the item and a warning as a JSON object", out.String(), errb.String())
	}
}

// jsonLineWith reports whether a line of stderr that mentions want is a
// JSON object whose "error" says it.
func jsonLineWith(stderr, want string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		var obj struct{ Error string }
		if strings.Contains(line, want) && json.Unmarshal([]byte(line), &obj) == nil && strings.Contains(obj.Error, want) {
			return true
		}
	}
	return false
}

// TestWatchWhereAndPath: `watch --where` streams the changes of the
// documents that match (after each change), and a document that stops
// matching once as doc.left; `watch --path` one document's.
func TestWatchWhereAndPath(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	p := newProject(t)
	p.ok("new", "agent", "alice")
	p.ok("new", "agent", "bob")
	where := watchJSON(t, p, "--kind", "agents", "--where", "state=working")
	path := watchJSON(t, p, "--path", "agents/bob.md")
	p.ok("set", "agents/alice", "role=idle-role") // does not match: not shown
	p.ok("set", "agents/alice", "state=working")  // starts matching
	p.ok("set", "agents/alice", "role=builder")   // still matches
	p.ok("set", "agents/alice", "state=idle")     // leaves
	p.ok("set", "agents/alice", "role=tester")    // no longer matches: not shown
	p.ok("set", "agents/bob", "state=working")    // matches
	p.ok("rm", "agents/bob")                      // leaves
	where.waitStream("bob leaving", 1, func(e journal.Event) bool {
		return e.Path == "agents/bob.md" && e.Type == journal.TypeLeft
	})
	var got []string
	for _, e := range where.streamed() {
		got = append(got, fmt.Sprintf("%s %s %v", e.Type, e.Path, e.Data["changed"]))
	}
	// A set of state is a transition: applied_state and state_changed
	// follow it; updated follows every write.
	want := []string{
		"doc.updated agents/alice.md [applied_state state state_changed updated]",
		"doc.updated agents/alice.md [role updated]",
		"doc.left agents/alice.md <nil>",
		"doc.updated agents/bob.md [applied_state state state_changed updated]",
		"doc.left agents/bob.md <nil>",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("watch --where:\ngot:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	path.waitStream("bob removed", 1, func(e journal.Event) bool { return e.Type == journal.TypeRemoved })
	for _, e := range path.streamed() {
		if e.Path != "agents/bob.md" {
			t.Errorf("watch --path agents/bob.md printed %s %s", e.Type, e.Path)
		}
	}
	if n := len(path.streamed()); n != 2 {
		t.Errorf("watch --path: %d events, want 2 (updated, removed):\n%s", n, describeEvents(path.streamed()))
	}
}

// TestJournalTwoWatchers: with two watchers running, each hand edit is
// journaled once, also when it returns to an earlier revision.
func TestJournalTwoWatchers(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	burnCPU(t)
	p := toolProject(t)
	rel := "agents/two.md"
	writeAtomic(t, p.path(rel), agentText("two", "idle"))
	w1 := watchJSON(t, p)
	w2 := watchJSON(t, p)
	base := len(fence(t, p))
	state := "idle"
	for i := range 10 {
		state = map[string]string{"idle": "working", "working": "idle"}[state]
		writeAtomic(t, p.path(rel), agentText("two", state))
		for _, w := range []*watchProc{w1, w2} {
			w.waitStream(fmt.Sprintf("edit %d", i+1), i+1, func(e journal.Event) bool { return e.Path == rel && e.Type == journal.TypeUpdated })
		}
	}
	checkTally(t, "journal", since(fence(t, p), base), map[string]int{rel + " doc.updated [state]": 10})
}

// TestJournalDayFileReplaced: the journal's day file replaced under a
// running watcher (as rsync, a restore or a git checkout of a committed
// journal write it: a copy renamed over the name) does not swallow what
// the watcher journals afterwards: it appended to the file it had open,
// gone with the old name.
func TestJournalDayFileReplaced(t *testing.T) {
	t.Parallel() // mostly waiting on other processes: overlap them
	p := toolProject(t)
	w := watchJSON(t, p)
	defer w.stop()
	base := len(fence(t, p))
	days, err := filepath.Glob(p.path(journal.Dir + "/*.jsonl"))
	if err != nil || len(days) == 0 {
		t.Fatalf("day files: %v %v", days, err)
	}
	for round := range 3 {
		for _, day := range days {
			data, err := os.ReadFile(day)
			if err != nil {
				t.Fatal(err)
			}
			writeAtomic(t, day, string(data))
		}
		rel := fmt.Sprintf("agents/r%d.md", round)
		writeAtomic(t, p.path(rel), agentText(fmt.Sprintf("r%d", round), "idle"))
		ext := since(fence(t, p), base)
		checkTally(t, fmt.Sprintf("round %d", round), ext, map[string]int{rel + " doc.created <nil>": 1})
		base += len(ext)
	}
}

// TestWatchShowsHandEditOnce: with only `tavern watch` running (it
// journals the hand edits itself), a document created, edited and
// removed by hand is three lines of its stream, not six: the external
// entries it journals for changes it already printed are not printed
// again. The journal has the three externals.
func TestWatchShowsHandEditOnce(t *testing.T) {
	t.Parallel()
	p := toolProject(t)
	p.env = append(p.env, "TAVERN_DAEMON=off")
	p.ok("agent", "new", "marker")
	w := watchJSON(t, p)
	base := len(fence(t, p))
	rel := "agents/dan.md"
	writeAtomic(t, p.path(rel), agentText("dan", "idle"))
	w.waitStream("create", 1, func(e journal.Event) bool { return e.Path == rel })
	writeAtomic(t, p.path(rel), agentText("dan", "working"))
	w.waitStream("update", 2, func(e journal.Event) bool { return e.Path == rel })
	if err := os.Remove(p.path(rel)); err != nil {
		t.Fatal(err)
	}
	w.waitStream("removal", 3, func(e journal.Event) bool { return e.Path == rel })
	ext := since(fence(t, p), base)
	want := map[string]int{rel + " doc.created <nil>": 1, rel + " doc.updated [state]": 1, rel + " doc.removed <nil>": 1}
	checkTally(t, "journal", ext, want)
	checkStreamTally(t, p, w, rel, want)
}

// TestWatchShowsRevertedEditsOnce: a field toggled back and forth by hand
// (vim saves, git checkout back and forth) brings the same revision back
// several times. Each change is one line of the stream: the external
// entries the watch journals for them are not printed again, however
// many times a revision recurs before its entry arrives. The grace is
// long enough that all four changes are printed before the first
// external entry is journaled.
func TestWatchShowsRevertedEditsOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.ok("set", "tavern.md", "external_grace=4s", "settle="+journalSettle)
	p.env = append(p.env, "TAVERN_DAEMON=off")
	p.ok("agent", "new", "marker")
	w := watchJSON(t, p)
	base := len(fence(t, p))
	rel := "agents/dan.md"
	writeAtomic(t, p.path(rel), agentText("dan", "idle"))
	w.waitStream("create", 1, func(e journal.Event) bool { return e.Path == rel })
	for i, state := range []string{"working", "idle", "working", "idle"} {
		writeAtomic(t, p.path(rel), agentText("dan", state))
		w.waitStream("update "+state, i+1, func(e journal.Event) bool { return e.Path == rel && e.Type == journal.TypeUpdated })
	}
	ext := since(fence(t, p), base)
	want := map[string]int{rel + " doc.created <nil>": 1, rel + " doc.updated [state]": 4}
	checkTally(t, "journal", ext, want)
	checkStreamTally(t, p, w, rel, want)
}

// checkStreamTally checks that the watch printed rel's changes as want
// tallies them, external entries included. Everything journaled so far
// has been published; an engine write to agents/marker after it marks
// where the stream has caught up.
func checkStreamTally(t *testing.T, p *project, w *watchProc, rel string, want map[string]int) {
	t.Helper()
	p.ok("set", "agents/marker", "note=caught-up")
	w.waitStream("the marker", 1, func(e journal.Event) bool { return e.Path == "agents/marker.md" && e.Type == journal.TypeUpdated })
	w.mu.Lock()
	all := slices.Clone(w.events) // externals included, unlike streamed
	w.mu.Unlock()
	checkTally(t, "stream", docEvents(all, rel), want)
}

// TestWatchStartsWhileFileBeingWritten: a watcher that starts while a
// writer has a document truncated and not yet written (vim's or git's
// rewrite in progress, a tavern watch or pool started meanwhile) does
// not journal the empty file as a state: it waits for the writer's close
// (within the settle bound) and journals the one update. It used to
// journal doc.invalid "missing frontmatter" for good.
func TestWatchStartsWhileFileBeingWritten(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// A long settle: the writer's close decides, however slow the machine.
	p.ok("set", "tavern.md", "external_grace="+journalGrace, "settle=30s")
	p.env = append(p.env, "TAVERN_DAEMON=off")
	p.ok("agent", "new", "dan")
	p.ok("ls", "agents") // the index has dan's fields: the changed list is known
	rel := "agents/dan.md"
	text := strings.Replace(p.read(rel), "---\n", "---\nnote: hand\n", 1)
	f, err := os.OpenFile(p.path(rel), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := watchJSON(t, p)
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	w.waitStream("the update", 1, func(e journal.Event) bool { return e.Path == rel && e.Type == journal.TypeUpdated })
	checkTally(t, "journal", fence(t, p), map[string]int{rel + " doc.updated [note]": 1})
	for _, e := range w.streamed() {
		if e.Path == rel && e.Type != journal.TypeUpdated {
			t.Errorf("watch printed %s %s %v, want only the update", e.Type, e.Path, e.Data)
		}
	}
}

// TestWatchInterruptedJournalsWhatItPrinted: a hand edit that `tavern
// watch` printed is in `tavern log` once the watch has exited, even when
// it is interrupted (Ctrl-C) before the edit's external entry was due.
// It used to drop the entries still waiting out external_grace: the log
// missed the change until the next watcher started.
func TestWatchInterruptedJournalsWhatItPrinted(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.ok("set", "tavern.md", "external_grace=3s", "settle="+journalSettle)
	p.env = append(p.env, "TAVERN_DAEMON=off")
	p.ok("agent", "new", "dan")
	p.ok("ls", "agents")
	rel := "agents/dan.md"
	w := watchJSON(t, p)
	writeAtomic(t, p.path(rel), strings.Replace(p.read(rel), "---\n", "---\nnote: hand\n", 1))
	w.waitStream("the update", 1, func(e journal.Event) bool { return e.Path == rel && e.Type == journal.TypeUpdated })
	w.stop()
	checkTally(t, "journal", externals(t, p), map[string]int{rel + " doc.updated [note]": 1})
}
