package main

// CLI tests of tuple, token, reserve and guard: they drive the built
// binary against a store in a temporary directory, as a script would.
// The binary is built once by TestTupleCLI and shared by its subtests.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

type cliRun struct {
	t   *testing.T
	bin string
	dir string // project directory holding .tavern/
	env []string
}

type cliResult struct {
	out, err string
	code     int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

func (p *cliRun) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Dir = p.dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "TAVERN_AGENT" && !strings.HasPrefix(k, "GIT_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Env = append(cmd.Env, p.env...)
	return cmd
}

func (p *cliRun) run(args ...string) cliResult {
	p.t.Helper()
	cmd := p.cmd(context.Background(), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{out: out.String(), err: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			p.t.Fatalf("%v: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

func (p *cliRun) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("tavern %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

func (p *cliRun) fails(code int, args ...string) cliResult {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code {
		p.t.Fatalf("tavern %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, code, r)
	}
	return r
}

func (p *cliRun) json(v any, args ...string) {
	p.t.Helper()
	out := p.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		p.t.Fatalf("tavern %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *cliRun) git(args ...string) cliResult {
	p.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = p.dir
	cmd.Env = p.cmd(context.Background()).Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return r
}

func TestTupleCLI(t *testing.T) {
	if os.Getenv("TAVERN_TUPLE_CLI_HELPER") != "" {
		t.Skip("helper process")
	}
	bin := filepath.Join(t.TempDir(), "tavern")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	newProj := func(t *testing.T) *cliRun {
		p := &cliRun{t: t, bin: bin, dir: t.TempDir()}
		p.ok("init")
		return p
	}
	t.Run("OutRdInLs", func(t *testing.T) { cliOutRdIn(newProj(t)) })
	t.Run("BlockingAcrossProcesses", func(t *testing.T) { cliBlocking(newProj(t)) })
	t.Run("TTL", func(t *testing.T) { cliTTL(newProj(t)) })
	t.Run("Tokens", func(t *testing.T) { cliTokens(newProj(t)) })
	t.Run("TokenAgentKilled", func(t *testing.T) { cliTokenAgentKilled(newProj(t)) })
	t.Run("Reserve", func(t *testing.T) { cliReserve(newProj(t)) })
	t.Run("GuardHook", func(t *testing.T) { cliGuardHook(newProj(t)) })
}

func cliOutRdIn(p *cliRun) {
	t := p.t
	id1 := strings.TrimSpace(p.ok("tuple", "out", "job", "status=pending", "n=3"))
	id2 := strings.TrimSpace(p.ok("tuple", "out", "job", "status=pending", "n=5", "title=two words"))
	if _, err := os.Stat(filepath.Join(p.dir, ".tavern", "tuples", "job", id1+".md")); err != nil {
		t.Fatalf("out did not write tuples/job/%s.md: %v", id1, err)
	}
	// rd (rdp) prints the document and does not consume it.
	for i := 0; i < 2; i++ {
		if out := p.ok("tuple", "rd", "job", "status=pending"); !strings.Contains(out, "id: "+id1) {
			t.Fatalf("rd #%d printed\n%s\nwant tuple %s", i, out, id1)
		}
	}
	var obj struct {
		ID       string         `json:"id"`
		Type     string         `json:"type"`
		Kind     string         `json:"kind"`
		Values   map[string]any `json:"values"`
		Captures map[string]any `json:"captures"`
	}
	p.json(&obj, "tuple", "rdp", "job", "n>4", "title=?")
	if obj.ID != id2 || obj.Type != "job" || obj.Kind != "tuple" || obj.Captures["title"] != "two words" || obj.Values["n"] != float64(5) {
		t.Fatalf("rdp --json = %+v", obj)
	}
	var list []map[string]any
	p.json(&list, "tuple", "ls", "job")
	if len(list) != 2 {
		t.Fatalf("ls --json = %d tuples, want 2", len(list))
	}
	p.json(&obj, "tuple", "in", "job", "n=?")
	if obj.ID != id1 || obj.Captures["n"] != float64(3) {
		t.Fatalf("in --json = %+v, want %s", obj, id1)
	}
	p.ok("tuple", "inp", "job")
	r := p.fails(3, "tuple", "in", "job")
	if !strings.Contains(r.err, `no tuple of type "job"`) {
		t.Fatalf("empty in: %s", r)
	}
	p.fails(3, "tuple", "rd", "job", "--wait", "100ms")
	p.fails(2, "tuple", "rd", "job", "not a pattern")
	p.fails(2, "tuple", "out", "job", "id=x")
	p.fails(2, "tuple", "out", "../x", "a=1")
	r = p.fails(3, "tuple", "in", "job", "--json")
	var e map[string]any
	if err := json.Unmarshal([]byte(r.err), &e); err != nil || e["code"] != float64(3) {
		t.Fatalf("--json error: %v %s", err, r.err)
	}
	if out := p.ok("tuple", "ls"); !strings.Contains(out, "job") {
		t.Fatalf("tuple ls without a type:\n%s", out)
	}
}

// cliBlocking: processes blocked in `tuple in --wait` are woken by `tuple
// out` from other processes; each tuple goes to exactly one of them, and a
// blocked `rd` sees a tuple without taking it.
func cliBlocking(p *cliRun) {
	t := p.t
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}
	start := func(args ...string) proc {
		c := p.cmd(ctx, args...)
		var out bytes.Buffer
		c.Stdout = &out
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return proc{c, &out}
	}
	var ins []proc
	for i := 0; i < 4; i++ {
		ins = append(ins, start("tuple", "in", "task", "kind=work", "--wait", "50s", "--json"))
	}
	rd := start("tuple", "rd", "task", "kind=probe", "--wait", "50s")
	// Write only once every reader is blocked on the directory: a reader
	// that had not started would still find the tuples, but then nothing
	// here would test the wake-up.
	pids := []int{rd.cmd.Process.Pid}
	for _, in := range ins {
		pids = append(pids, in.cmd.Process.Pid)
	}
	waitBlocked(t, pids)
	p.ok("tuple", "out", "task", "kind=probe")
	if err := rd.cmd.Wait(); err != nil {
		t.Fatalf("blocked rd: %v", err)
	}
	want := map[string]bool{}
	for i := 0; i < 4; i++ {
		want[strings.TrimSpace(p.ok("tuple", "out", "task", "kind=work", fmt.Sprintf("n=%d", i)))] = true
	}
	got := map[string]bool{}
	for _, in := range ins {
		if err := in.cmd.Wait(); err != nil {
			t.Fatalf("blocked in: %v", err)
		}
		var obj map[string]any
		if err := json.Unmarshal(in.out.Bytes(), &obj); err != nil {
			t.Fatal(err)
		}
		got[obj["id"].(string)] = true
	}
	if len(got) != 4 {
		t.Fatalf("4 blocked ins got %d distinct tuples", len(got))
	}
	for id := range got {
		if !want[id] {
			t.Fatalf("an in got %s, which is not a work tuple", id)
		}
	}
	// The probe was read, not taken.
	if left := p.ok("tuple", "ls", "task"); strings.Count(left, "kind=") != 1 || !strings.Contains(left, "kind=probe") {
		t.Fatalf("left after the ins:\n%s", left)
	}
}

// waitBlocked waits until every process in pids has an inotify
// descriptor open, i.e. is blocked in a wait on the tuple directory.
func waitBlocked(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, pid := range pids {
			if hasInotify(pid) {
				n++
			}
		}
		if n == len(pids) {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: there is no event for this
	}
	t.Fatalf("processes %v did not all block on inotify within 30s", pids)
}

func hasInotify(pid int) bool {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, _ := os.ReadDir(fdDir)
	for _, fd := range fds {
		if l, _ := os.Readlink(filepath.Join(fdDir, fd.Name())); l == "anon_inode:inotify" {
			return true
		}
	}
	return false
}

func cliTTL(p *cliRun) {
	t := p.t
	p.ok("tuple", "out", "lease", "who=a", "--ttl", "1ms")
	p.ok("tuple", "out", "lease", "who=b", "--ttl", "1h")
	time.Sleep(5 * time.Millisecond) // let the 1ms TTL pass (wall clock is the point here)
	p.fails(3, "tuple", "rd", "lease", "who=a")
	var list []map[string]any
	p.json(&list, "tuple", "ls", "lease")
	if len(list) != 1 {
		t.Fatalf("ls shows %d live tuples, want 1", len(list))
	}
	var st map[string]int
	p.json(&st, "tuple", "gc")
	if st["expired"] != 1 {
		t.Fatalf("gc = %v, want 1 expired", st)
	}
	trash, _ := filepath.Glob(filepath.Join(p.dir, ".tavern", ".trash", "*-tuples__lease__*.md"))
	if len(trash) != 1 {
		t.Fatalf("trash = %v", trash)
	}
}

func cliTokens(p *cliRun) {
	t := p.t
	p.fails(3, "token", "acquire", "merge")
	p.ok("token", "init", "merge", "--count", "2")
	h1 := strings.TrimSpace(p.ok("token", "acquire", "merge"))
	var tok map[string]any
	p.json(&tok, "token", "acquire", "merge", "--ttl", "1h", "--as", "bob")
	if tok["hold"] != "lease" || tok["held_by"] != "bob" {
		t.Fatalf("acquire --as bob (no wrapper) --ttl = %v", tok)
	}
	p.fails(3, "token", "acquire", "merge")
	start := time.Now()
	p.fails(3, "token", "acquire", "merge", "--wait", "300ms")
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("acquire --wait returned before its wait")
	}
	r := p.fails(1, "token", "acquire", "merge", "--as", "carol")
	if !strings.Contains(r.err, "no live process") {
		t.Fatalf("acquire --as a dead agent: %s", r)
	}
	p.fails(4, "token", "release", "merge", h1+"7") // wrong epoch
	p.ok("token", "release", "merge", h1)
	p.fails(4, "token", "release", "merge", h1)
	p.fails(4, "token", "release", "merge", "--as", "alice")
	p.ok("token", "release", "merge", "--as", "bob")
	var slots []map[string]any
	p.json(&slots, "token", "ls", "merge")
	if len(slots) != 2 || slots[0]["free"] != true || slots[1]["free"] != true {
		t.Fatalf("token ls = %v", slots)
	}
	p.fails(2, "token", "release", "merge")
}

// TestTupleCLIHelper is a stand-in for an agent's spawn wrapper: it holds
// the agent's liveness lock until killed.
func TestTupleCLIHelper(t *testing.T) {
	agent := os.Getenv("TAVERN_TUPLE_CLI_HELPER")
	if agent == "" {
		t.Skip("helper process only")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_STORE"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	l, err := s.Lock("agents/" + agent)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer l.Unlock()
	fmt.Println("alive")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// cliTokenAgentKilled: `token acquire --as alice` exits at once, and the
// slot stays held while alice's wrapper lives; SIGKILL the wrapper and a
// waiting acquire gets the slot.
func cliTokenAgentKilled(p *cliRun) {
	t := p.t
	p.ok("token", "init", "merge", "--count", "1")
	wrapper := exec.Command(os.Args[0], "-test.run=^TestTupleCLIHelper$")
	wrapper.Env = append(os.Environ(), "TAVERN_TUPLE_CLI_HELPER=alice", "TAVERN_STORE="+filepath.Join(p.dir, ".tavern"))
	stdout, _ := wrapper.StdoutPipe()
	if _, err := wrapper.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := wrapper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { wrapper.Process.Kill(); wrapper.Wait() }()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "alive" {
		t.Fatalf("wrapper said %q", line)
	}
	var tok map[string]any
	p.json(&tok, "token", "acquire", "merge", "--as", "alice")
	if tok["hold"] != "agent" {
		t.Fatalf("acquire --as a live agent = %v", tok)
	}
	p.fails(3, "token", "acquire", "merge")
	waiter := p.cmd(context.Background(), "token", "acquire", "merge", "--wait", "30s")
	var out bytes.Buffer
	waiter.Stdout = &out
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	if err := wrapper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wrapper.Wait()
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiting acquire after alice was killed: %v", err)
	}
	if h := strings.TrimSpace(out.String()); !strings.HasSuffix(h, ":2") {
		t.Fatalf("handle %q, want epoch 2", h)
	}
	if ev := p.ok("tuple", "ls"); !strings.Contains(ev, "token") {
		t.Fatalf("tuple ls:\n%s", ev)
	}
	journal, _ := filepath.Glob(filepath.Join(p.dir, ".tavern", "events", "*.jsonl"))
	var all []byte
	for _, j := range journal {
		b, _ := os.ReadFile(j)
		all = append(all, b...)
	}
	if !bytes.Contains(all, []byte(`"type":"token.reclaimed"`)) || !bytes.Contains(all, []byte("agent alice is not alive")) {
		t.Fatalf("journal lacks the reclaim:\n%s", all)
	}
}

func cliReserve(p *cliRun) {
	t := p.t
	p.ok("reserve", "src/a/b.go", "--as", "alice", "--reason", "fix")
	r := p.fails(4, "reserve", "src/**/*.go", "--as", "bob")
	if !strings.Contains(r.err, "reserved by alice") {
		t.Fatalf("broad over narrow: %s", r)
	}
	p.ok("reserve", "lib/", "--as", "bob")
	p.fails(4, "reserve", "lib/x/y.go", "--as", "carol")
	p.env = []string{"TAVERN_AGENT=carol"}
	p.ok("reserve", "docs/*.md")
	p.env = nil
	p.fails(2, "reserve", "../etc", "--as", "carol")
	p.fails(2, "reserve", "x")
	var rs []map[string]any
	p.json(&rs, "reservations")
	if len(rs) != 3 {
		t.Fatalf("reservations = %v", rs)
	}
	p.json(&rs, "reserve", "--list")
	if len(rs) != 3 || rs[0]["agent"] != "alice" || rs[0]["glob"] != "src/a/b.go" || rs[0]["reason"] != "fix" {
		t.Fatalf("reserve --list = %v", rs)
	}
	if out := p.ok("unreserve", "--as", "alice"); !strings.Contains(out, "released 1") {
		t.Fatalf("unreserve: %s", out)
	}
	p.ok("reserve", "src/**/*.go", "--as", "bob", "--ttl", "0")
}

// cliGuardHook installs `tavern guard` as the pre-commit hook of a real
// git repository and commits as different agents.
func cliGuardHook(p *cliRun) {
	t := p.t
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if r := p.git(args...); r.code != 0 {
			t.Fatalf("git %v: %s", args, r)
		}
	}
	os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte(".tavern/\n"), 0o644)
	hook := strings.TrimSpace(p.ok("guard", "--install"))
	if fi, err := os.Stat(hook); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("hook %s: %v", hook, err)
	}
	p.ok("reserve", "src/**/*.go", "--as", "alice")
	os.MkdirAll(filepath.Join(p.dir, "src", "a"), 0o755)
	os.WriteFile(filepath.Join(p.dir, "src", "a", "b.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(p.dir, "README.md"), []byte("hi\n"), 0o644)

	// An unreserved path commits for anyone.
	p.git("add", "README.md", ".gitignore")
	p.env = []string{"TAVERN_AGENT=bob"}
	if r := p.git("commit", "-q", "-m", "readme"); r.code != 0 {
		t.Fatalf("bob committing README: %s", r)
	}
	// bob may not commit alice's path.
	p.git("add", "src/a/b.go")
	r := p.git("commit", "-q", "-m", "b")
	if r.code == 0 || !strings.Contains(r.err, "src/a/b.go overlaps src/**/*.go reserved by alice") {
		t.Fatalf("bob committing alice's path: %s", r)
	}
	r = p.fails(4, "guard")
	p.env = nil
	var g map[string]any
	gr := p.fails(4, "guard", "--as", "bob", "--json")
	if err := json.Unmarshal([]byte(gr.out), &g); err != nil || g["ok"] != false {
		t.Fatalf("guard --json: %v %s", err, gr)
	}
	// alice may.
	p.env = []string{"TAVERN_AGENT=alice"}
	if r := p.git("commit", "-q", "-m", "b"); r.code != 0 {
		t.Fatalf("alice committing her path: %s", r)
	}
	p.env = nil
	if r := p.git("log", "--oneline"); strings.Count(r.out, "\n") != 2 {
		t.Fatalf("git log:\n%s", r.out)
	}
	// Without a store there is nothing reserved: the hook lets commits by.
	noStore := &cliRun{t: t, bin: p.bin, dir: t.TempDir()}
	if r := noStore.run("guard"); r.code != 0 || !strings.Contains(r.err, "no .tavern store") {
		t.Fatalf("guard without a store: %s", r)
	}
	// A foreign hook is kept unless --force.
	os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	p.fails(4, "guard", "--install") // exists: a conflict, like `new` on an existing document
	p.ok("guard", "--install", "--force")
}
