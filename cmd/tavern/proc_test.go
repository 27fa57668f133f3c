package main

// CLI tests of several processes at once: concurrent clients, waits woken
// by another process, signals and killed holders, a long-running watch.
// The scripts in testdata/script hold the single-process contracts.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// tavernBin is the tavern the scripts run: this test binary, which
// testscript.Main installed on $PATH under that name, or under -race a
// plain build (binDir).
func tavernBin(tb testing.TB) string {
	tb.Helper()
	p, err := tavernPath()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// tavernPath is tavernBin for code without a testing.TB.
func tavernPath() (string, error) {
	dir, err := plainBuild()
	if err != nil || dir != "" {
		return filepath.Join(dir, "tavern"), err
	}
	return exec.LookPath("tavern")
}

type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// project is a directory holding an initialised .tavern store, and a
// runner for tavern in it.
type project struct {
	t   testing.TB
	dir string
	env []string // added to the environment
}

func newProject(t testing.TB) *project {
	t.Helper()
	p := &project{t: t, dir: t.TempDir()}
	p.ok("init")
	return p
}

// cmd is tavern (or another program, with prog) in the project, without
// the test's own TAVERN_*, EDITOR or git configuration.
func (p *project) cmd(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = p.dir
	// A test binary that times out runs no cleanup: the watchers, pools
	// and servers it started would run on, orphaned (the multi package's
	// TestWorkersDieWithTest shows the mechanism).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "TAVERN_") && !strings.HasPrefix(k, "GIT_") && k != "EDITOR" && k != "VISUAL" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Env = append(cmd.Env, p.env...)
	return cmd
}

func (p *project) tavern(args ...string) *exec.Cmd {
	return p.cmd(context.Background(), tavernBin(p.t), args...)
}

func (p *project) run(args ...string) result {
	p.t.Helper()
	return p.runEnv(nil, args...)
}

// runEnv is run with env added to the command's environment.
func (p *project) runEnv(env []string, args ...string) result {
	p.t.Helper()
	cmd := p.tavern(args...)
	cmd.Env = append(cmd.Env, env...)
	return runResult(p.t, cmd)
}

// runResult runs cmd with its stdout and stderr captured and returns
// them with its exit status; a command that could not run fails tb.
func runResult(tb testing.TB, cmd *exec.Cmd) result {
	tb.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			tb.Fatalf("%q: %v", cmd.Args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// ok runs a command that must succeed and returns its stdout.
func (p *project) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("tavern %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

// fails runs a command that must exit with code.
func (p *project) fails(code int, args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code {
		p.t.Fatalf("tavern %s: got exit %d, want %d\n%s", strings.Join(args, " "), r.code, code, r)
	}
	return r
}

// json runs a command with --json and decodes its output into v.
func (p *project) json(v any, args ...string) {
	p.t.Helper()
	out := p.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		p.t.Fatalf("tavern %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (p *project) path(rel string) string {
	return filepath.Join(p.dir, ".tavern", filepath.FromSlash(rel))
}

func (p *project) read(rel string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(rel))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

func (p *project) write(rel, data string) {
	p.t.Helper()
	full := p.path(rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) agentState(name string) string {
	p.t.Helper()
	var list []struct{ Name, State string }
	p.json(&list, "agent", "ls")
	for _, a := range list {
		if a.Name == name {
			return a.State
		}
	}
	return ""
}

// poll re-checks a condition produced by another process until a deadline.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Lost-update test through the CLI: 8 concurrent clients, each a loop of
// real tavern processes (show --json, then set --if-rev, retried on exit
// 4), increment one field; the total is exact. The default size keeps
// `go test` well inside its time budget (each increment costs two process
// starts, and conflicts multiply them); `-tags long` runs the full
// 8 × 200 (cliIncrements in lostupdate_{short,long}_test.go).
func TestLostUpdateCLI(t *testing.T) {
	const clients = 8
	p := newProject(t)
	p.ok("new", "agent", "counter", "spawns=0")
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	var mu sync.Mutex
	conflicts := 0
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < cliIncrements; {
				r := p.run("show", "agents/counter", "--json")
				if r.code != 0 {
					errs <- fmt.Errorf("show: %s", r)
					return
				}
				var obj struct {
					Rev    string
					Fields map[string]any
				}
				if err := json.Unmarshal([]byte(r.out), &obj); err != nil {
					errs <- err
					return
				}
				n, ok := obj.Fields["spawns"].(float64)
				if !ok {
					errs <- fmt.Errorf("spawns is %#v", obj.Fields["spawns"])
					return
				}
				r = p.run("set", "agents/counter", "spawns="+strconv.Itoa(int(n)+1), "--if-rev", obj.Rev)
				switch r.code {
				case 0:
					i++
				case 4:
					mu.Lock()
					conflicts++
					mu.Unlock()
				default:
					errs <- fmt.Errorf("set: %s", r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var obj struct{ Fields map[string]any }
	p.json(&obj, "show", "agents/counter")
	if got := obj.Fields["spawns"]; got != float64(clients*cliIncrements) {
		t.Fatalf("spawns = %v after %d×%d increments, want %d", got, clients, cliIncrements, clients*cliIncrements)
	}
	t.Logf("%d increments, %d conflicts retried", clients*cliIncrements, conflicts)
}

// startWatch starts `tavern watch ARGS` and waits for its ready line.
func startWatch(t *testing.T, p *project, args ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := p.tavern(append([]string{"watch"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "watching") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("watch never became ready")
	}
	return cmd, stdout
}

func TestWatchCommand(t *testing.T) {
	p := newProject(t)
	cmd, stdout := startWatch(t, p, "--json", "--kind", "agents")
	lines := make(chan journal.Event, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e journal.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("bad JSON line %q: %v", sc.Text(), err)
				continue
			}
			lines <- e
		}
		close(lines)
	}()
	var history []string
	defer func() {
		if t.Failed() {
			t.Logf("events seen:\n%s", strings.Join(history, "\n"))
		}
	}()
	// waitFor skips unrelated events (an "external" record of the hand
	// edit may come in between) until one matching want arrives.
	waitFor := func(what string, want func(journal.Event) bool) journal.Event {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case e := <-lines:
				b, _ := json.Marshal(e)
				history = append(history, string(b))
				if want(e) {
					return e
				}
			case <-deadline:
				t.Fatalf("no %s event", what)
			}
		}
	}
	// Hand edits land atomically (temp file, rename), so no intermediate
	// state can be observed whatever the machine's load.
	handWrite := func(rel, text string) {
		t.Helper()
		tmp := p.path(".tmp/hand")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p.path(rel)); err != nil {
			t.Fatal(err)
		}
	}
	handWrite("agents/hand.md", "---\nname: hand\n---\n")
	e := waitFor("doc.created", func(e journal.Event) bool { return e.Type == journal.TypeCreated })
	if e.Path != "agents/hand.md" || e.Kind != "agent" {
		t.Errorf("got %+v, want doc.created agents/hand.md", e)
	}
	// A set of state is a transition: applied_state and state_changed
	// follow, and the set journals agent.state too (skipped below).
	p.ok("set", "agents/hand", "state=working")
	e = waitFor("doc.updated", func(e journal.Event) bool { return e.Type == journal.TypeUpdated })
	if e.Path != "agents/hand.md" || fmt.Sprint(e.Data["changed"]) != "[applied_state state state_changed]" {
		t.Errorf("got %+v, want doc.updated changed=[applied_state state state_changed]", e)
	}
	// Not an agent: filtered out; the next agent event proves it was seen.
	handWrite("tavern.md", "---\nname: x\n---\n")
	handWrite("agents/hand.md", "---\nname: [\n---\n")
	e = waitFor("doc.invalid", func(e journal.Event) bool {
		return e.Type != journal.TypeExternal && e.Type != "agent.state"
	})
	if e.Type != journal.TypeInvalid || e.Path != "agents/hand.md" {
		t.Errorf("got %+v, want doc.invalid agents/hand.md", e)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGINT: %v", err)
	}
}

// Engine changes made while no watcher ran are in the journal: a watcher
// starting from a stale .index must not journal them as external edits,
// while a real hand edit still is.
func TestWatchNoSpuriousExternal(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "early")
	p.ok("ls", "agents") // writes .tavern/.index
	p.ok("new", "agent", "engine")
	p.ok("set", "agents/early", "role=dev")
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q", "--title", "x")
	cmd, _ := startWatch(t, p, "--json")
	// Written after the start-up scan, so its external decision comes
	// after those of the start-up changes.
	p.write("agents/byhand.md", "---\nname: byhand\nstate: idle\n---\n")
	externals := func() []string {
		var paths []string
		for _, line := range strings.Split(strings.TrimSpace(p.ok("log", "--type", "external", "--json")), "\n") {
			var e struct{ Path string }
			if json.Unmarshal([]byte(line), &e) == nil && e.Path != "" {
				paths = append(paths, e.Path)
			}
		}
		return paths
	}
	poll(t, "the hand edit journaled as external", func() bool {
		return strings.Contains(strings.Join(externals(), " "), "agents/byhand.md")
	})
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	for _, path := range externals() {
		if path != "agents/byhand.md" {
			t.Errorf("engine change journaled as external: %s", path)
		}
	}
}

// ask --wait in one process is answered by another.
func TestAskAnswerAcrossProcesses(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "root")
	p.ok("agent", "new", "boss", "--parent", "root")
	p.ok("agent", "new", "kid", "--parent", "boss")
	p.ok("agent", "state", "kid", "working")

	ask := p.tavern("ask", "--wait", "30s", "Postgres or SQLite?")
	ask.Env = append(ask.Env, "TAVERN_AGENT=kid")
	var out bytes.Buffer
	ask.Stdout = &out
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	var qs []struct{ ID, From, To, Question string }
	poll(t, "the question to reach boss", func() bool {
		p.json(&qs, "questions", "--as", "boss")
		return len(qs) == 1
	})
	if qs[0].From != "kid" || qs[0].Question != "Postgres or SQLite?" {
		t.Fatalf("question = %+v", qs[0])
	}
	// Ask writes the question, then moves the asker to waiting.
	poll(t, "the asker to wait", func() bool { return p.agentState("kid") == "waiting" })
	boss := &project{t: t, dir: p.dir, env: []string{"TAVERN_AGENT=boss"}}
	boss.ok("answer", qs[0].ID, "SQLite")
	if err := ask.Wait(); err != nil {
		t.Fatalf("ask: %v", err)
	}
	if got := strings.TrimSpace(out.String()); got != "SQLite" {
		t.Fatalf("ask printed %q", got)
	}
	if st := p.agentState("kid"); st != "working" {
		t.Fatalf("asker state %s after the answer, want working", st)
	}
}

// SIGTERM to the spawn wrapper is forwarded to the child; the agent goes
// back to idle.
func TestSpawnForwardsSignals(t *testing.T) {
	p := newProject(t)
	ready := filepath.Join(t.TempDir(), "ready")
	got := ready + ".sig"
	w := p.tavern("spawn", "--name", "w", "--", "sh", "-c",
		"trap 'echo TERM > "+got+"; exit 0' TERM; touch "+ready+"; while :; do sleep 0.05; done")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the child to start", func() bool { _, err := os.Stat(ready); return err == nil })
	w.Process.Signal(syscall.SIGTERM)
	if err := w.Wait(); err != nil {
		t.Fatalf("wrapper: %v", err)
	}
	if data, _ := os.ReadFile(got); strings.TrimSpace(string(data)) != "TERM" {
		t.Fatalf("child did not get SIGTERM: %q", data)
	}
	if st := p.agentState("w"); st != "idle" {
		t.Fatalf("state after interrupt %s, want idle", st)
	}
}

// `take --as AGENT` while the agent's liveness lock is held makes a
// liveness claim; when the lock is dropped (the wrapper died) `tavern
// reap` returns the item at once.
func TestQueueAgentLiveness(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q", "--lease", "1h")
	p.ok("agent", "new", "alice")
	id := strings.TrimSpace(p.ok("queue", "add", "q"))
	s, err := docstore.Open(p.path(""))
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Lock(schema.AgentLockKey("alice"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	p.json(&obj, "queue", "take", "q", "--as", "alice")
	f := obj["fields"].(map[string]any)
	if f["claim_kind"] != "liveness" || f["liveness_lock"] != "agents/alice" || f["claimed_by"] != "alice" {
		t.Fatalf("take --as alice with alice's lock held: %v", f)
	}
	if out := p.ok("reap"); out != "" {
		t.Fatalf("reap with the agent alive: %q", out)
	}
	l.Unlock() // as if alice's wrapper died
	if out := p.ok("reap", "q"); out != "returned "+id+"\n" {
		t.Fatalf("reap after the agent died: %q", out)
	}
}

// Processes blocked in `tuple in --wait` are woken by `tuple out` from
// other processes; each tuple goes to exactly one of them, and a blocked
// `rd` sees a tuple without taking it.
func TestTupleBlockingAcrossProcesses(t *testing.T) {
	p := newProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}
	start := func(args ...string) proc {
		c := p.cmd(ctx, tavernBin(t), args...)
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

// TestLivenessHolderHelper is a stand-in for an agent's spawn wrapper: it
// holds the agent's liveness lock until killed.
func TestLivenessHolderHelper(t *testing.T) {
	agent := os.Getenv("TAVERN_TEST_HOLDER")
	if agent == "" {
		t.Skip("helper process only")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_TEST_STORE"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	l, err := s.Lock(schema.AgentLockKey(agent))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer l.Unlock()
	fmt.Println("alive")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// `token acquire --as alice` exits at once, and the slot stays held while
// alice's wrapper lives; SIGKILL the wrapper and a waiting acquire gets
// the slot.
func TestTokenHolderKilled(t *testing.T) {
	p := newProject(t)
	p.ok("token", "init", "merge", "--count", "1")
	p.ok("agent", "new", "alice")
	wrapper := exec.Command(os.Args[0], "-test.run=^TestLivenessHolderHelper$")
	wrapper.Env = append(os.Environ(), "TAVERN_TEST_HOLDER=alice", "TAVERN_TEST_STORE="+p.path(""))
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
	waiter := p.tavern("token", "acquire", "merge", "--wait", "30s")
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
	reclaimed := p.ok("log", "--type", "token.reclaimed", "--json")
	if !strings.Contains(reclaimed, "agent alice is not alive") {
		t.Fatalf("journal lacks the reclaim:\n%s", reclaimed)
	}
}

// A wrapper whose child succeeded and which waits at its item's gate is
// interrupted (SIGTERM, as a pool's second Ctrl-C or a killed terminal
// sends): its item is released, not failed (no attempt spent, no
// backoff), the agent goes back to idle, and the wrapper exits 143 (the
// item is not done: `spawn ... && deploy` must not go on).
func TestSpawnInterruptedAtGate(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q", "--max-attempts", "1")
	id := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "needs review", "--gate", "human"))
	w := p.tavern("spawn", "--queue", "q", "--name", "rev", "--", "true")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the wrapper to wait at the gate", func() bool { return p.agentState("rev") == "waiting" })
	w.Process.Signal(syscall.SIGTERM)
	err := w.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("wrapper: %v, want exit 143", err)
	}
	doc := p.read("queues/q/pending/" + id + ".md")
	for _, bad := range []string{"last_error", "not_before", "attempts: 1"} {
		if strings.Contains(doc, bad) {
			t.Errorf("pending copy has %q (the item failed instead of being released):\n%s", bad, doc)
		}
	}
	if st := p.agentState("rev"); st != "idle" {
		t.Fatalf("agent state after the interrupt %s, want idle", st)
	}
}

// A pool whose command cannot be found is refused before any drone
// starts (exit 3): each drone would fail to start it, release its item
// and be replaced at once, forever. A path relative to the project
// directory, where drones run (./nosuch.sh), was not checked: the pool
// crash-looped for ever.
func TestPoolCommandNotFound(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q", "--title", "x")
	for _, prog := range []string{"tavern-no-such-command", "/nonexistent/cmd", "./nosuch.sh", "bin/nosuch"} {
		// Bounded: the pool this refuses used to run forever.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := p.cmd(ctx, tavernBin(t), "pool", "run", "p", "--queue", "q", "--max", "2", "--quiet", "--", prog)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("pool run -- %s: %v, want exit 3\n%s", prog, err, errb.String())
		}
		if !strings.Contains(errb.String(), prog) {
			t.Errorf("pool run -- %s: stderr %q does not name the command", prog, errb.String())
		}
	}
	if entries, _ := os.ReadDir(p.path("agents")); len(entries) != 0 {
		t.Fatalf("agents %v made by a pool refused before it started", entries)
	}
}

// Drones that keep crashing (here: the command kills its wrapper, which
// then reports nothing) are replaced with a growing wait, not as fast as
// they die. In four seconds the pool starts a handful (1 + 1 at once,
// then after 1s, 2s...), never dozens; it says so, and the item is left
// to the next drone.
func TestPoolCrashBackoff(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q", "--title", "x")
	cmd := p.tavern("pool", "run", "p", "--queue", "q", "--max", "1", "--quiet", "--json", "--", "sh", "-c", "kill -9 $PPID")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A window of the pool's life, not a synchronisation: the count of
	// drones started in it can only be lower on a slower machine.
	time.Sleep(4 * time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pool: %v\n%s", err, errb.String())
	}
	var mt struct{ Spawned, Crashed int }
	if err := json.Unmarshal(out.Bytes(), &mt); err != nil {
		t.Fatalf("pool --json: %v\n%s", err, out.String())
	}
	if mt.Crashed < 2 || mt.Spawned > 6 {
		t.Fatalf("in 4s: %d drones started, %d crashed; want 2..6 started, each crashed\n%s", mt.Spawned, mt.Crashed, errb.String())
	}
	if !strings.Contains(errb.String(), "crashed in a row: the next starts in") {
		t.Errorf("stderr does not report the wait:\n%s", errb.String())
	}
}

// A verifier SIGKILLed while an assertion runs takes the assertion's
// processes with it (they used to run on, reparented to init, with
// nobody left to time them out).
func TestVerifyKilledTakesAssertions(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "al")
	pids := filepath.Join(t.TempDir(), "pids")
	p.ok("commit", "add", "al", "--desc", "slow", "--assert", "echo $$ > "+pids+"; sleep 300 & echo $! >> "+pids+"; wait")
	v := p.tavern("verify", "al")
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	var procs []int
	poll(t, "the assertion to start", func() bool {
		data, _ := os.ReadFile(pids)
		procs = procs[:0]
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				procs = append(procs, n)
			}
		}
		return len(procs) == 2
	})
	t.Cleanup(func() { // on failure, nothing left behind
		for _, pid := range procs {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	v.Process.Kill()
	v.Wait()
	poll(t, "the assertion's shell and its child to die", func() bool {
		for _, pid := range procs {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// alive reports whether pid is a live process (a zombie is dead: in a
// container its reaper may be slow).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
