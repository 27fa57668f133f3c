package main

// CLI tests of the workflow commands (issue 19): plan, gate, approve,
// reject, pool/spawn --worktree and the merge queue, usage, budget,
// trace, workspace, demo workflow. They drive the built binary in real
// git repositories.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wf is a project for the workflow tests, optionally in a git
// repository.
type wf struct {
	*project
}

func newWF(t *testing.T) *wf {
	t.Helper()
	return &wf{project: newProject(t)}
}

// runEnv runs tavern with env added and stdin.
func (w *wf) runEnv(env []string, stdin string, args ...string) result {
	w.t.Helper()
	cmd := w.tavern(args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			w.t.Fatalf("tavern %q: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

func (w *wf) must(args ...string) string {
	w.t.Helper()
	return w.ok(args...)
}

func (w *wf) mustStdin(stdin string, args ...string) string {
	w.t.Helper()
	r := w.runEnv(nil, stdin, args...)
	if r.code != 0 {
		w.t.Fatalf("tavern %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

// jsonOf runs a command with --json (put after its other arguments,
// unless the caller placed it before a "--") and decodes its output.
func (w *wf) jsonOf(v any, args ...string) {
	w.t.Helper()
	if !strings.Contains(strings.Join(args, " "), "--json") {
		args = append(args, "--json")
	}
	out := w.must(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		w.t.Fatalf("tavern %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// doctorFindings runs `doctor --json`, which must find something (exit
// 5), and returns its findings.
func (w *wf) doctorFindings(what string) []struct{ Kind, Path, Detail string } {
	w.t.Helper()
	return w.doctorReport(what, true)
}

// doctorReport is doctorFindings that, unless mustFind, accepts a clean
// store (exit 0) too.
func (w *wf) doctorReport(what string, mustFind bool) []struct{ Kind, Path, Detail string } {
	w.t.Helper()
	r := w.runEnv(nil, "", "doctor", "--json")
	if r.code != 5 && (mustFind || r.code != 0) {
		w.t.Fatalf("%s: %s", what, r)
	}
	var rep struct {
		Findings []struct{ Kind, Path, Detail string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		w.t.Fatal(err)
	}
	return rep.Findings
}

func (w *wf) fields(ref string) map[string]any {
	w.t.Helper()
	var d wfDoc
	w.jsonOf(&d, "show", ref)
	return d.Fields
}

func (w *wf) git(args ...string) string {
	w.t.Helper()
	cmd := w.cmd(context.Background(), "git", args...)
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// initRepo makes the project a git repository with main (one commit)
// and copies the demo's drone and check scripts in.
func (w *wf) initRepo() {
	w.t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		w.t.Skip("git is not installed")
	}
	os.WriteFile(filepath.Join(w.dir, "banner.txt"), []byte("BANNER\n"), 0o644)
	os.WriteFile(filepath.Join(w.dir, ".gitignore"), []byte(".tavern/\n.demo/\nscripts/\n"), 0o644)
	w.git("init", "-q", "-b", "main")
	w.git("add", ".")
	w.git("commit", "-qm", "start")
	os.MkdirAll(filepath.Join(w.dir, "scripts"), 0o755)
	for _, f := range []string{"drone.sh", "check.sh"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "workflow", f))
		if err != nil {
			w.t.Fatal(err)
		}
		os.WriteFile(filepath.Join(w.dir, "scripts", f), data, 0o755)
	}
}

func (w *wf) script(name string) string { return filepath.Join(w.dir, "scripts", name) }

type wfDoc struct {
	Fields map[string]any `json:"fields"`
	Rel    string         `json:"rel"`
}

func (w *wf) item(id string) wfDoc {
	w.t.Helper()
	var it wfDoc
	w.jsonOf(&it, "item", "show", id)
	return it
}

func (w *wf) state(id string) string {
	it := w.item(id)
	parts := strings.Split(it.Rel, "/")
	if len(parts) < 3 {
		w.t.Fatalf("item path %q", it.Rel)
	}
	return parts[2]
}

func TestPoolWorktreeMergeQueueCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real pool")
	}
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "code", "--max-attempts", "3", "--backoff", "100ms", "--on-empty", "terminate")
	for i := 0; i < 6; i++ {
		w.mustStdin(fmt.Sprintf("file: f%d.txt\ntext: drone %d\n", i, i), "queue", "add", "code", "--title", fmt.Sprintf("file %d", i), "--body", "-")
	}
	for _, word := range []string{"Welcome", "Bienvenue"} {
		w.mustStdin("file: banner.txt\ntext: "+word+"\nmeet: banner\n", "queue", "add", "code", "--title", "banner "+word, "--body", "-")
	}
	var mt struct {
		ItemsDone   int `json:"items_done"`
		ItemsFailed int `json:"items_failed"`
	}
	w.jsonOf(&mt, "pool", "run", "coders", "--queue", "code", "--max", "8", "--on-empty", "terminate", "--quiet",
		"--worktree", "--check", "sh "+w.script("check.sh"), "--json", "--", "sh", w.script("drone.sh"))
	if mt.ItemsDone != 8 || mt.ItemsFailed != 1 {
		t.Fatalf("pool: %d done, %d failed; want 8 done after one failed merge", mt.ItemsDone, mt.ItemsFailed)
	}
	if n := w.git("rev-list", "--count", "main"); n != "9" {
		t.Fatalf("main has %s commits, want 9 (start + 8)", n)
	}
	if b := w.git("show", "main:banner.txt"); !strings.Contains(b, "Welcome") || !strings.Contains(b, "Bienvenue") {
		t.Fatalf("banner.txt on main: %q", b)
	}
	out := w.must("log", "--type", "item.failed", "--json")
	if !strings.Contains(out, "merge conflict in banner.txt") {
		t.Fatalf("no item failed with the conflict:\n%s", out)
	}
	var list []any
	w.jsonOf(&list, "workspace", "ls")
	if len(list) != 0 {
		t.Fatalf("worktrees left: %v", list)
	}
	if br := w.git("branch", "--list", "tavern/*"); br != "" {
		t.Fatalf("merged branches left:\n%s", br)
	}
	// Each done item records where its branch landed.
	var items []wfDoc
	w.jsonOf(&items, "ls", "items")
	for _, it := range items {
		if m, _ := it.Fields["merged"].(string); len(m) != 40 {
			t.Errorf("%s: merged = %q", it.Rel, it.Fields["merged"])
		}
	}
}

// TestMergerSIGKILLCLI kills a spawn wrapper in the middle of its merge
// (during the check): the check and its children die with it (they ran
// on in the worktree, orphaned, while the slot came back to the next
// merger), main does not move, the slot and the item come back, and the
// next spawn rolls the merge back and lands the branch.
func TestMergerSIGKILLCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "code", "--backoff", "10ms")
	id := strings.TrimSpace(w.mustStdin("file: x.txt\ntext: x\n", "queue", "add", "code", "--title", "x", "--body", "-"))
	before := w.git("rev-parse", "main")
	tmp := t.TempDir()
	ready, pidf := filepath.Join(tmp, "ready"), filepath.Join(tmp, "pid")
	check := fmt.Sprintf(`echo $$ > %s; sleep 60 & echo $! >> %s; touch %s; wait`, pidf, pidf, ready)
	cmd := w.tavern("spawn", "--name", "m1", "--queue", "code", "--worktree", "--check", check, "--", "sh", w.script("drone.sh"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, ready)
	var pids []int
	for _, f := range strings.Fields(readText(t, pidf)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
		defer syscall.Kill(pid, syscall.SIGKILL) // on failure, no orphan
	}
	fds := pidfds(t, pids)
	// A merger at work (it holds the merge slot) is no finding.
	for _, f := range w.doctorReport("doctor during the check", false) {
		if f.Kind == "unfinished-merge" {
			t.Fatalf("doctor reported a live merger's record: %+v", f)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if left := awaitExits(fds, 30*time.Second); len(left) > 0 {
		t.Fatalf("the check's processes %v still run 30s after its wrapper was SIGKILLed", left)
	}
	if now := w.git("rev-parse", "main"); now != before {
		t.Fatal("main moved though the merger died before landing")
	}
	var recs []wfDoc
	w.jsonOf(&recs, "ls", "merges")
	if len(recs) != 1 || recs[0].Fields["status"] != "rebased" {
		t.Fatalf("merge records after the kill: %+v", recs)
	}
	// The record's pid is reused by a live process (here: this test's):
	// the merger is still dead, since nothing holds the merge slot.
	w.must("set", recs[0].Rel, "pid="+strconv.Itoa(os.Getpid()))
	// doctor reports the record the dead merger left unfinished, and
	// without --fix leaves it as it is.
	findings := w.doctorFindings("doctor after the merger died")
	found := false
	for _, f := range findings {
		found = found || (f.Kind == "unfinished-merge" && f.Path == recs[0].Rel && strings.Contains(f.Detail, "rebased") && strings.Contains(f.Detail, "roll"))
	}
	if !found {
		t.Fatalf("doctor did not report the unfinished merge %s: %+v", recs[0].Rel, findings)
	}
	w.jsonOf(&recs, "ls", "merges")
	if len(recs) != 1 || recs[0].Fields["status"] != "rebased" {
		t.Fatalf("doctor without --fix changed the merge record: %+v", recs)
	}
	// The item comes back (its holder died) and the next spawn lands it.
	w.must("reap", "code")
	if got := w.state(id); got != "pending" {
		t.Fatalf("after reap the item is %s", got)
	}
	// doctor --fix settles the record as the next merge would have.
	if out := w.must("doctor", "--fix"); !strings.Contains(out, "unfinished-merge "+recs[0].Rel) || !strings.Contains(out, "(fixed)") {
		t.Fatalf("doctor --fix:\n%s", out)
	}
	w.jsonOf(&recs, "ls", "merges")
	if len(recs) != 1 || recs[0].Fields["status"] != "rolled_back" {
		t.Fatalf("merge records after doctor --fix: %+v", recs)
	}
	if r := w.run("doctor"); r.code != 0 || r.out != "" || !strings.Contains(r.err, "nothing found") {
		t.Fatalf("doctor after the fix (want nothing on stdout, nothing found on stderr):\n%s", r)
	}
	r := w.runEnv(nil, "", "spawn", "--name", "m2", "--queue", "code", "--worktree", "--check", "true", "--", "sh", w.script("drone.sh"))
	if r.code != 0 {
		t.Fatalf("second spawn: %s", r)
	}
	w.jsonOf(&recs, "ls", "merges")
	statuses := map[any]int{}
	for _, rec := range recs {
		statuses[rec.Fields["status"]]++
	}
	if statuses["rolled_back"] != 1 || statuses["landed"] != 1 {
		t.Fatalf("merge records: %v", statuses)
	}
	if got := w.git("show", "main:x.txt"); got != "x" {
		t.Fatalf("x.txt on main: %q", got)
	}
	w.git("fsck", "--no-progress")
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	poll(t, path, func() bool { _, err := os.Stat(path); return err == nil })
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUsageBudgetTraceCLI(t *testing.T) {
	w := newWF(t)
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "agents", "testdata", "usage", "claude.json"))
	w.must("queue", "create", "q", "--backoff", "10ms", "--on-empty", "terminate")
	id := strings.TrimSpace(w.must("queue", "add", "q", "--title", "first"))
	// Attempt 1 fails, attempt 2 prints a Claude Code result.
	w.runEnv(nil, "", "spawn", "--name", "solo", "--queue", "q", "--", "sh", "-c", "echo trying; exit 2")
	t0 := time.Now()
	time.Sleep(20 * time.Millisecond)
	poll(t, "the backoff", func() bool {
		return w.runEnv(nil, "", "spawn", "--name", "solo", "--queue", "q", "--", "sh", "-c", "echo working; cat "+fixture).code == 0
	})
	var u struct {
		Rows []struct {
			Key       string  `json:"key"`
			Runs      int     `json:"runs"`
			Failed    int     `json:"failed"`
			TokensIn  int64   `json:"tokens_in"`
			TokensOut int64   `json:"tokens_out"`
			Cost      float64 `json:"cost_usd"`
		} `json:"rows"`
	}
	w.jsonOf(&u, "usage", "--by", "item")
	if len(u.Rows) != 1 || u.Rows[0].Key != id || u.Rows[0].Runs != 2 || u.Rows[0].Failed != 1 || u.Rows[0].TokensIn != 17380 || u.Rows[0].TokensOut != 611 || u.Rows[0].Cost != 0.0421375 {
		t.Fatalf("usage by item: %+v", u.Rows)
	}
	if out := w.must("usage", "--by", "day"); !strings.Contains(out, "0.0421") || !strings.Contains(out, "(1/2)") {
		t.Fatalf("usage table:\n%s", out)
	}
	// Trace: both attempts, the output of each holder, the usage.
	var tr struct {
		State    string `json:"state"`
		Attempts []struct {
			Holder, Outcome string
		} `json:"attempts"`
		Timeline []struct{ Kind, Summary string } `json:"timeline"`
		Usage    struct{ Runs int }
	}
	w.jsonOf(&tr, "trace", id)
	if tr.State != "done" || len(tr.Attempts) != 2 || tr.Attempts[0].Outcome != "failed" || tr.Usage.Runs != 2 {
		t.Fatalf("trace: %+v", tr)
	}
	saw := 0
	for _, e := range tr.Timeline {
		if e.Kind == "message" && (strings.Contains(e.Summary, "trying") || strings.Contains(e.Summary, "working")) {
			saw++
		}
	}
	if saw != 2 {
		t.Fatalf("the trace shows %d of the holder's 2 messages", saw)
	}
	if out := w.must("trace", id); !strings.Contains(out, "attempt 1: solo") || !strings.Contains(out, "attempt 2: solo") {
		t.Fatalf("trace text:\n%s", out)
	}
	// --at: the item between its attempts.
	var snap struct {
		Item struct {
			State string `json:"state"`
			Error string `json:"last_error"`
		} `json:"item"`
	}
	w.jsonOf(&snap, "trace", "--at", t0.UTC().Format(time.RFC3339Nano), "items/"+id)
	if snap.Item.State != "pending" || !strings.Contains(snap.Item.Error, "exit status 2") {
		t.Fatalf("item at t0: %+v", snap.Item)
	}
	if r := w.runEnv(nil, "", "trace", "--at", "1h", "agents/nobody"); r.code != 3 {
		t.Fatalf("trace of nothing: %s", r)
	}
	// A budget: the pool stops taking items once it is spent.
	w.must("budget", "set", "daily", "--pool", "p", "--cost", "0.01")
	for i := 0; i < 3; i++ {
		w.must("queue", "add", "q", "--title", fmt.Sprint("more ", i))
	}
	var mt struct {
		ItemsDone int    `json:"items_done"`
		Paused    string `json:"paused"`
	}
	// It stops paused with items left: exit 4, so `pool run ... && next`
	// does not go on.
	r := w.runEnv(nil, "", "pool", "run", "p", "--queue", "q", "--max", "1", "--quiet", "--json", "--", "sh", "-c", "cat "+fixture)
	if r.code != 4 {
		t.Fatalf("a pool stopped by its budget with items left: %s", r)
	}
	if err := json.Unmarshal([]byte(r.out), &mt); err != nil {
		t.Fatalf("pool run --json: %v\n%s", err, r.out)
	}
	if mt.ItemsDone != 1 || !strings.Contains(mt.Paused, "budget daily") {
		t.Fatalf("a pool with a $0.01 budget did %d items at $0.04 each (paused %q), want 1, paused by budget daily", mt.ItemsDone, mt.Paused)
	}
	pool := w.fields("pools/p")
	if p, _ := pool["paused"].(string); !strings.Contains(p, "budget daily") || !strings.Contains(p, "cost 0.04 of 0.01 USD") {
		t.Fatalf("pools/p.md paused: %v", pool["paused"])
	}
	var budgets []struct {
		Name string
		Over []string
	}
	w.jsonOf(&budgets, "budget", "ls")
	if len(budgets) != 1 || len(budgets[0].Over) != 1 {
		t.Fatalf("budget ls: %+v", budgets)
	}
	// The needs-you list says so.
	var needs []struct{ Kind, What, Why, Path string }
	w.jsonOf(&needs, "ui", "--json", "--lens", "needs")
	found := false
	for _, n := range needs {
		found = found || (n.Kind == "budget" && strings.Contains(n.What, "budget daily") && strings.Contains(n.Why, "cost 0.04 of 0.01 USD") && strings.Contains(n.Why, "pool p") && n.Path == "budgets/daily.md")
	}
	if !found {
		t.Fatalf("needs you does not list the spent budget: %+v", needs)
	}
	// A budget of every pool also refuses a spawn of no pool: nothing
	// changes, and the refusal is journaled.
	w.must("budget", "set", "all", "--cost", "0.01")
	late := strings.TrimSpace(w.must("queue", "add", "q", "--title", "late"))
	r = w.runEnv(nil, "", "spawn", "--name", "newcomer", "--queue", "q", "--", "true")
	if r.code != 4 || !strings.Contains(r.err, "budget all") {
		t.Fatalf("spawn under a spent budget: %s", r)
	}
	if st := w.state(late); st != "pending" {
		t.Fatalf("the refused spawn's item is %s", st)
	}
	// Nor is its agent made: a refused spawn changes no state.
	if _, err := os.Stat(filepath.Join(w.dir, ".tavern", "agents", "newcomer.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("agents/newcomer.md after a refused spawn: %v, want none", err)
	}
	if out := w.must("log", "--type", "agent.spawn_refused"); !strings.Contains(out, "budget all") {
		t.Fatalf("refusal not journaled:\n%s", out)
	}
}

// A drone's worktree outlives its wrapper when the wrapper is killed:
// once the item is dead (reaped on its last attempt), `tavern doctor`
// reports the orphan worktree (exit 5, nothing changed), and --fix
// removes it — directory and git's record — keeping the dead item's
// branch for a person.
func TestDoctorOrphanWorktreeCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "code", "--max-attempts", "1")
	id := strings.TrimSpace(w.must("queue", "add", "code", "--title", "slow work"))
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := w.tavern("spawn", "--name", "d1", "--queue", "code", "--worktree", "--", "sh", "-c", "echo wip > wip.txt; touch "+ready+"; sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, ready)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	it := w.item(id)
	wt, _ := it.Fields["worktree"].(string)
	branch, _ := it.Fields["branch"].(string)
	if wt == "" || branch == "" {
		t.Fatalf("the item records no worktree: %v", it.Fields)
	}
	poll(t, "the drone to die with its wrapper", func() bool {
		return w.runEnv(nil, "", "reap", "code").code == 0 && w.state(id) == "dead"
	})
	if _, err := os.Stat(filepath.Join(wt, "wip.txt")); err != nil {
		t.Fatalf("the orphan worktree is not there to find: %v", err)
	}
	findings := w.doctorFindings("doctor with an orphan worktree")
	found := false
	for _, f := range findings {
		found = found || (f.Kind == "orphan-worktree" && f.Path == wt && strings.Contains(f.Detail, id) && strings.Contains(f.Detail, "dead"))
	}
	if !found {
		t.Fatalf("doctor did not report the orphan worktree %s: %+v", wt, findings)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("doctor without --fix removed the worktree: %v", err)
	}
	if out := w.must("doctor", "--fix"); !strings.Contains(out, "orphan-worktree "+wt) || !strings.Contains(out, "(fixed)") {
		t.Fatalf("doctor --fix:\n%s", out)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there after --fix: %v", err)
	}
	if list := w.git("worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Fatalf("git still lists the worktree:\n%s", list)
	}
	w.git("rev-parse", "--verify", "refs/heads/"+branch) // a dead item's branch stays
	if r := w.run("doctor"); r.code != 0 || r.out != "" || !strings.Contains(r.err, "nothing found") {
		t.Fatalf("doctor after the fix (want nothing on stdout, nothing found on stderr):\n%s", r)
	}
}

// The worktrees' disk is bounded: with --max-disk below what the
// worktrees already take and no orphan to prune, a new worktree is
// refused — the spawn fails with the reason, its item goes back to
// pending, no worktree is made — and without the bound it goes ahead.
func TestWorktreeDiskBoundCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes")
	}
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "qa")
	w.must("queue", "create", "qb")
	a := strings.TrimSpace(w.must("queue", "add", "qa", "--title", "a"))
	// a's wrapper is killed: its worktree (with 64 KiB in it) stays,
	// and it is no orphan (the item will be retried).
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := w.tavern("spawn", "--name", "d1", "--queue", "qa", "--worktree", "--", "sh", "-c", "head -c 65536 /dev/zero > big.bin; touch "+ready+"; sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, ready)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	poll(t, "a to come back", func() bool { return w.runEnv(nil, "", "reap", "qa").code == 0 && w.state(a) == "pending" })

	b := strings.TrimSpace(w.must("queue", "add", "qb", "--title", "b"))
	r := w.runEnv(nil, "", "spawn", "--name", "d2", "--queue", "qb", "--worktree", "--max-disk", "16K", "--", "sh", "-c", "echo b > b.txt")
	if r.code == 0 || !strings.Contains(r.err, "worktree limit reached") || !strings.Contains(r.err, "at most 16384") {
		t.Fatalf("a worktree past the disk bound: %s", r)
	}
	if st := w.state(b); st != "pending" {
		t.Fatalf("b after the refused worktree is %s", st)
	}
	var list []struct{ Item string }
	w.jsonOf(&list, "workspace", "ls")
	if len(list) != 1 || list[0].Item != a {
		t.Fatalf("worktrees after the refusal: %+v", list)
	}
	if r := w.runEnv(nil, "", "spawn", "--name", "d2", "--queue", "qb", "--worktree", "--max-disk", "none", "--", "sh", "-c", "echo b > b.txt"); r.code != 0 {
		t.Fatalf("without a bound: %s", r)
	}
	if got := w.git("show", "main:b.txt"); got != "b" {
		t.Fatalf("b.txt on main: %q", got)
	}
}

// TestSpawnMergeFailureExit: a drone whose command succeeds but whose
// branch fails the merge queue's check has failed its item, and the
// wrapper says so by its exit status; it exited 0 ("exit 0, failed"),
// so `tavern spawn ... && deploy` went on.
func TestSpawnMergeFailureExit(t *testing.T) {
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "code", "--backoff", "10ms")
	id := strings.TrimSpace(w.mustStdin("file: x.txt\ntext: x\n", "queue", "add", "code", "--title", "x", "--body", "-"))
	before := w.git("rev-parse", "main")
	r := w.runEnv(nil, "", "spawn", "--name", "d1", "--queue", "code", "--worktree", "--check", "echo tests broke >&2; exit 1", "--", "sh", w.script("drone.sh"))
	if r.code != 1 || !strings.Contains(r.err, "the item failed after the command succeeded") {
		t.Fatalf("spawn whose merge check fails: %s", r)
	}
	if now := w.git("rev-parse", "main"); now != before {
		t.Fatal("main moved though the check failed")
	}
	if got := w.state(id); got != "pending" {
		t.Fatalf("the item is %s, want pending (retried like any failure)", got)
	}
	var res struct {
		ExitCode int    `json:"exit_code"`
		Outcome  string `json:"outcome"`
		Failure  string `json:"failure"`
	}
	r = w.runEnv(nil, "", "spawn", "--json", "--name", "d2", "--queue", "code", "--worktree", "--check", "exit 1", "--", "sh", w.script("drone.sh"))
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != 1 {
		t.Fatalf("spawn --json: %v %s", err, r)
	}
	if res.ExitCode != 0 || res.Outcome != "failed" || res.Failure == "" {
		t.Fatalf("spawn --json result: %+v", res)
	}
}

// A wrapper interrupted (SIGTERM: a second Ctrl-C of its pool, or its
// pool dying) while the merge queue ran its check failed its item with
// "check stopped after 10m0s" and the agent went to failed, though nothing
// was judged. The item is now released as an interrupted child's is (no
// attempt spent, the agent idle, exit 128+15), the check is stopped, main
// does not move, and the next spawn rolls the merge back and lands it.
func TestMergeInterruptedReleasesCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("signals processes")
	}
	w := newWF(t)
	w.initRepo()
	w.must("queue", "create", "code", "--backoff", "10ms")
	id := strings.TrimSpace(w.mustStdin("file: x.txt\ntext: x\n", "queue", "add", "code", "--title", "x", "--body", "-"))
	before := w.git("rev-parse", "main")
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := w.tavern("spawn", "--name", "m1", "--queue", "code", "--json", "--worktree", "--check", "touch "+ready+"; exec sleep 60", "--", "sh", w.script("drone.sh"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitForFile(t, ready)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("spawn interrupted in its check: %v, want exit %d\n%s\n%s", err, 128+int(syscall.SIGTERM), out.String(), errb.String())
	}
	var res struct{ Outcome, State, Interrupted_by string }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Outcome != "released" || res.State != "idle" || res.Interrupted_by != "SIGTERM" {
		t.Fatalf("spawn --json: %v %+v, want released by SIGTERM, agent idle\n%s", err, res, out.String())
	}
	it := w.item(id)
	if got := w.state(id); got != "pending" || it.Fields["attempts"] != float64(0) || it.Fields["last_error"] != nil {
		t.Fatalf("item after the interrupt: %s %v, want pending, no attempt spent, no error", got, it.Fields)
	}
	if now := w.git("rev-parse", "main"); now != before {
		t.Fatal("main moved though the merge was interrupted before landing")
	}
	r := w.runEnv(nil, "", "spawn", "--name", "m2", "--queue", "code", "--worktree", "--check", "true", "--", "sh", w.script("drone.sh"))
	if r.code != 0 {
		t.Fatalf("second spawn: %s", r)
	}
	if got := w.git("show", "main:x.txt"); got != "x" {
		t.Fatalf("x.txt on main: %q", got)
	}
}
