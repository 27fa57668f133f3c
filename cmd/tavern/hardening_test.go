package main

// CLI tests of issue 13 (supervision hardening): each drives the built
// binary the way a user or a script would and checks the files.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func (p *project) addItem(q string, args ...string) string {
	p.t.Helper()
	return strings.TrimSpace(p.ok(append([]string{"queue", "add", q}, args...)...))
}

// waitFor re-checks cond (produced by other processes) until it holds.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lsDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Every --as of take goes through the one agent name rule: exit 2, and
// nothing is claimed.
func TestTakeAsBadNames(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.addItem("q")
	for _, as := range []string{"", "a\nb", "a/b", "@../x", "Bob"} {
		p.fails(2, "queue", "take", "q", "--as", as)
	}
	if got := lsDir(t, p.path("queues/q/claimed")); len(got) != 0 {
		t.Errorf("claimed %v with bad names", got)
	}
	p.ok("queue", "take", "q", "--as", "drone-1")
}

// A late action from another instance ($TAVERN_INSTANCE, set by the
// spawn wrapper for its child) is refused with exit 4, whatever the name.
func TestInstanceFenceCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	id := p.addItem("q")
	take := runIn(t, p.dir, "", []string{"TAVERN_INSTANCE=inst-a"}, "queue", "take", "q", "--as", "drone-1")
	if take.code != 0 {
		t.Fatalf("take: %s", take)
	}
	if got := p.fields("items/" + id)["instance"]; got != "inst-a" {
		t.Fatalf("claim instance = %v, want inst-a", got)
	}
	for _, op := range []string{"renew", "release", "fail", "done"} {
		r := runIn(t, p.dir, "", []string{"TAVERN_INSTANCE=inst-b"}, "item", op, id)
		if r.code != 4 {
			t.Errorf("item %s from another instance: exit %d, want 4\n%s", op, r.code, r)
		}
	}
	if r := runIn(t, p.dir, "", []string{"TAVERN_INSTANCE=../x"}, "item", "done", id); r.code != 2 {
		t.Errorf("a bad TAVERN_INSTANCE: exit %d, want 2", r.code)
	}
	if r := runIn(t, p.dir, "", []string{"TAVERN_INSTANCE=inst-a"}, "item", "done", id); r.code != 0 {
		t.Errorf("done from the holding instance: %s", r)
	}
}

// A rewrite keeps the file's mode; new files and lock files follow the
// umask (a store shared by a group, umask 002, stays group-writable).
func TestFileModesCLI(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice")
	if err := os.Chmod(p.path("agents/alice.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.ok("set", "agents/alice", "role=critic")
	if fi, _ := os.Stat(p.path("agents/alice.md")); fi.Mode().Perm() != 0o600 {
		t.Errorf("after set: mode %v, want 0600", fi.Mode().Perm())
	}
	// The next send to a chunk someone made private.
	p.ok("send", "c", "hello", "--as", "bob")
	chunks, _ := filepath.Glob(p.path("messages/c/*.md"))
	if len(chunks) != 1 {
		t.Fatalf("chunks: %v", chunks)
	}
	os.Chmod(chunks[0], 0o600)
	p.ok("send", "c", "again", "--as", "bob")
	if fi, _ := os.Stat(chunks[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("after send: chunk mode %v, want 0600", fi.Mode().Perm())
	}
	p.ok("queue", "create", "q")
	id := p.addItem("q")
	os.Chmod(p.path("queues/q/pending/"+id+".md"), 0o640)
	p.ok("queue", "take", "q")
	if fi, err := os.Stat(p.path("queues/q/claimed/" + id + ".md")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("after a claim: %v %v, want 0640", fi.Mode().Perm(), err)
	}
	// umask 002: new documents 0664, lock files too.
	sh := exec.Command("sh", "-c", `umask 002; "$TAVERN" new agent bob && "$TAVERN" queue take q --as bob; exit 0`)
	sh.Dir = p.dir
	sh.Env = append(os.Environ(), "TAVERN="+builtBin)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fi, _ := os.Stat(p.path("agents/bob.md")); fi.Mode().Perm() != 0o664 {
		t.Errorf("new document under umask 002: mode %v, want 0664", fi.Mode().Perm())
	}
	if fi, err := os.Stat(p.path(".locks/agents/bob.lock")); err != nil || fi.Mode().Perm() != 0o664 {
		t.Errorf("lock file under umask 002: %v, want 0664", err)
	}
}

// Short-lived take/done processes leave nothing in .tmp/.
func TestTakeDoneLeavesNoTempFiles(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	for i := 0; i < 20; i++ {
		p.addItem("q")
	}
	for i := 0; i < 20; i++ {
		id := strings.Fields(p.ok("queue", "take", "q"))[0]
		p.ok("item", "done", id)
	}
	if got := lsDir(t, p.path(".tmp")); len(got) != 0 {
		t.Errorf(".tmp/ holds %d files after 20 take/done cycles: %v", len(got), got)
	}
}

// Files named like items that are not documents (a FIFO, a directory,
// a symlink inside the store) are reported with their path by queue ls
// and take, and block nothing.
func TestOddFilesInQueueCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	good := p.addItem("q", "--priority", "5")
	pend := p.path("queues/q/pending")
	if err := syscall.Mkfifo(filepath.Join(pend, "p00-fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(pend, "p00-dir.md"), 0o755)
	os.Symlink(p.path("tavern.md"), filepath.Join(pend, "p00-link.md"))
	done := make(chan result, 1)
	go func() { done <- p.run("queue", "ls", "q") }()
	var ls result
	select {
	case ls = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("queue ls blocked on a FIFO")
	}
	if ls.code != 0 {
		t.Fatalf("queue ls failed for the whole queue: %s", ls)
	}
	for _, want := range []string{"p00-fifo.md: a FIFO", "p00-dir.md: a directory", "p00-link.md: a symbolic link"} {
		if !strings.Contains(ls.err, want) {
			t.Errorf("queue ls does not report %q:\n%s", want, ls.err)
		}
	}
	take := p.run("queue", "take", "q")
	if take.code != 0 || !strings.HasPrefix(take.out, good+" ") {
		t.Fatalf("take: %s", take)
	}
	if !strings.Contains(take.err, "p00-fifo.md") {
		t.Errorf("take does not report the FIFO: %s", take.err)
	}
}

// A hand-made dependency cycle: check reports each member at its
// depends_on line (exit 5); take's empty report names the cycle (exit 3).
func TestDependencyCycleCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	a := p.addItem("q")
	b := p.addItem("q", "--depends-on", a)
	p.ok("set", "items/"+a, "depends_on=["+b+"]")
	r := p.fails(5, "check")
	for _, id := range []string{a, b} {
		if !regexp.MustCompile(`queues/q/pending/` + id + `\.md:\d+:\d+: .*dependency cycle`).MatchString(r.err) {
			t.Errorf("check does not report %s at its depends_on line:\n%s", id, r.err)
		}
	}
	r = p.fails(3, "queue", "take", "q")
	if !strings.Contains(r.err, "dependency cycle") || !strings.Contains(r.err, a) || !strings.Contains(r.err, b) {
		t.Errorf("take's empty report does not name the cycle: %s", r.err)
	}
}

// A "billion laughs" frontmatter is invalid, with path:line, in check,
// ls and take; nothing reads it as null.
func TestAliasBombCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	var b strings.Builder
	b.WriteString("---\nqueue: q\na: &a [x,x,x,x,x,x,x,x,x]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n")
		prev = n
	}
	b.WriteString("---\n")
	p.write("queues/q/pending/p00-bomb.md", b.String())
	p.write("agents/bomb.md", b.String())
	want := regexp.MustCompile(`(queues/q/pending/p00-bomb|agents/bomb)\.md:\d+:\d+: .*alias expansion exceeds 65536 values`)
	r := p.fails(5, "check")
	if len(want.FindAllString(r.err, -1)) != 2 {
		t.Errorf("check:\n%s", r.err)
	}
	if r := p.run("ls", "agents"); !want.MatchString(r.err) {
		t.Errorf("ls agents: %s", r)
	}
	if r := p.run("queue", "take", "q"); r.code != 3 || !want.MatchString(r.err) {
		t.Errorf("take: %s", r)
	}
}

// After a wrapper is SIGKILLed, queue ls shows its holder dead, and a
// running `tavern watch` returns the item to pending without anyone
// taking or reaping.
func TestDeadHolderShownAndReapedInBackground(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	id := p.addItem("q")
	w := exec.Command(builtBin, "spawn", "--name", "d1", "--queue", "q", "--", "sleep", "600")
	w.Dir = p.dir
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	waitFor(t, 30*time.Second, "the claim", func() bool { return p.exists("queues/q/claimed/" + id + ".md") })
	waitFor(t, 30*time.Second, "the child", func() bool { f := p.fields("agents/d1"); return f["pid"] != nil })
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	var stats []map[string]any
	waitFor(t, 30*time.Second, "queue ls to show the holder dead", func() bool {
		out := p.ok("queue", "ls", "q", "--json")
		if err := json.Unmarshal([]byte(out), &stats); err != nil {
			t.Fatal(err)
		}
		dead, _ := stats[0]["dead_owners"].(map[string]any)
		return dead["d1"] == 1.0
	})
	if !strings.Contains(p.ok("queue", "ls", "q"), "d1(1, 1 dead)") {
		t.Errorf("queue ls does not show d1 dead:\n%s", p.ok("queue", "ls", "q"))
	}
	watch := exec.Command(builtBin, "watch")
	watch.Dir = p.dir
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
	waitFor(t, 30*time.Second, "watch to reap the item", func() bool { return p.exists("queues/q/pending/" + id + ".md") })
	if st := p.fields("agents/d1")["state"]; st != "failed" {
		t.Errorf("agent d1 is %v after the reap, want failed", st)
	}
}

// doctor finds what a crash leaves (here made by hand), changes nothing
// without --fix (exit 5), repairs it with --fix, and then finds nothing.
func TestDoctor(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	dup := p.addItem("q")
	gap := p.addItem("q")
	dead := p.addItem("q")
	p.ok("ls", "items") // leaves an index cache
	// An item in two state directories: a crash between the two halves
	// of a move.
	p.write("queues/q/claimed/"+dup+".md", p.read("queues/q/pending/"+dup+".md"))
	// A completion the journal never heard of.
	if err := os.Rename(p.path("queues/q/pending/"+gap+".md"), p.path("queues/q/done/"+gap+".md")); err != nil {
		t.Fatal(err)
	}
	// A claim whose holder is dead.
	claimed := strings.Replace(p.read("queues/q/pending/"+dead+".md"), "attempts: 0", "attempts: 1\nclaimed_by: ghost\nclaim_attempt: 1\nclaim_kind: liveness\nliveness_lock: holders/ghost-1-abcd", 1)
	p.write("queues/q/claimed/"+dead+".md", claimed)
	os.Remove(p.path("queues/q/pending/" + dead + ".md"))
	// An agent working for a wrapper that died; a lock nobody will take;
	// a temp file of a dead process.
	host, _ := os.Hostname()
	p.ok("new", "agent", "zed")
	p.ok("set", "agents/zed", "state=working", "host="+host, "pid=999999")
	p.write(".locks/instances/01a0-dead.lock", "")
	p.write(".tmp/999999-1.tmp", "x")

	snapshot := func() string {
		var b strings.Builder
		filepath.WalkDir(p.path(""), func(path string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && !strings.Contains(path, "/events/") {
				data, _ := os.ReadFile(path)
				b.WriteString(path + "\n" + string(data) + "\n")
			}
			return nil
		})
		return b.String()
	}
	before := snapshot()
	r := p.fails(5, "doctor", "--json")
	var rep struct {
		Findings []struct{ Kind, Path string }
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.out)
	}
	kinds := map[string]bool{}
	for _, f := range rep.Findings {
		kinds[f.Kind] = true
	}
	for _, k := range []string{"duplicate-copy", "journal-gap", "dead-claim", "dead-wrapper", "stale-lock", "temp-file", "stale-index"} {
		if !kinds[k] {
			t.Errorf("doctor did not find a %s: %s", k, r.out)
		}
	}
	if snapshot() != before {
		t.Fatal("doctor without --fix changed the store")
	}
	if r := p.run("doctor", "--fix"); r.code != 0 {
		t.Fatalf("doctor --fix: %s", r)
	}
	if r := p.run("doctor"); r.code != 0 || !strings.Contains(r.out, "nothing found") {
		t.Fatalf("doctor after --fix: %s", r)
	}
	// The repairs: one copy left, the gap journaled as recovered, the
	// dead claim back in pending, the agent failed.
	if p.exists("queues/q/pending/"+dup+".md") == p.exists("queues/q/claimed/"+dup+".md") {
		t.Error("the duplicate item still has two copies (or none)")
	}
	log := p.ok("log", "--type", "item.completed", "--json")
	if !strings.Contains(log, gap) || !strings.Contains(log, `"recovered":true`) {
		t.Errorf("the journal gap was not filled: %s", log)
	}
	if !p.exists("queues/q/pending/" + dead + ".md") {
		t.Error("the dead claim was not reaped")
	}
	if st := p.fields("agents/zed")["state"]; st != "failed" {
		t.Errorf("agent zed is %v, want failed", st)
	}
}
