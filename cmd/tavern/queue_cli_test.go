package main

// Queue and item commands, driven through the built binary against a
// store in t.TempDir(). The binary is built once (sync.Once, not TestMain,
// so this file merges with other CLI test files).

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

var (
	qBinOnce sync.Once
	qBin     string
	qBinErr  error
)

func queueBin(t *testing.T) string {
	t.Helper()
	qBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tavern-queue-cli-")
		if err != nil {
			qBinErr = err
			return
		}
		qBin = filepath.Join(dir, "tavern")
		out, err := exec.Command("go", "build", "-o", qBin, ".").CombinedOutput()
		if err != nil {
			qBinErr = &exec.Error{Name: "go build: " + string(out), Err: err}
		}
	})
	if qBinErr != nil {
		t.Fatal(qBinErr)
	}
	return qBin
}

type qres struct {
	out, err string
	code     int
}

// qstore is an initialised store and a runner for tavern in it.
type qstore struct {
	t   *testing.T
	dir string // project dir holding .tavern
}

func newQStore(t *testing.T) *qstore {
	q := &qstore{t: t, dir: t.TempDir()}
	if r := q.run("", "init"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	return q
}

func (q *qstore) run(stdin string, args ...string) qres {
	q.t.Helper()
	cmd := exec.Command(queueBin(q.t), args...)
	cmd.Dir = q.dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TAVERN_DIR=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := qres{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		q.t.Fatal(err)
	}
	return r
}

// ok runs tavern and fails the test unless it exits 0.
func (q *qstore) ok(args ...string) string {
	q.t.Helper()
	r := q.run("", args...)
	if r.code != 0 {
		q.t.Fatalf("tavern %v: exit %d\n%s%s", args, r.code, r.out, r.err)
	}
	return r.out
}

func (q *qstore) code(want int, args ...string) qres {
	q.t.Helper()
	r := q.run("", args...)
	if r.code != want {
		q.t.Fatalf("tavern %v: exit %d, want %d\n%s%s", args, r.code, want, r.out, r.err)
	}
	return r
}

func TestQueueCLIFlow(t *testing.T) {
	q := newQStore(t)
	q.ok("queue", "create", "build", "--max-attempts", "2", "--backoff", "1ms", "--lease", "10m")
	q.code(4, "queue", "create", "build")
	q.code(2, "queue", "create", "x", "--priority", "-3")
	q.code(3, "queue", "add", "nope")
	r := q.code(3, "queue", "take", "nope")
	if !strings.Contains(r.err, "unknown queue") {
		t.Errorf("unknown queue message: %q", r.err)
	}
	q.code(3, "queue", "take", "build") // empty
	q.code(2, "queue", "add", "build", "--priority", "100")

	low := strings.TrimSpace(q.ok("queue", "add", "build", "--title", "low", "--priority", "9"))
	r = q.run("the assignment\n", "queue", "add", "build", "--title", "high", "--priority", "1", "--body", "-")
	high := strings.TrimSpace(r.out)
	if r.code != 0 || !strings.HasPrefix(high, "p01-") || !strings.HasPrefix(low, "p09-") {
		t.Fatalf("ids %q %q (%+v)", low, high, r)
	}
	// Text take: "ID ATTEMPT" then the file.
	out := q.ok("queue", "take", "build")
	first, rest, _ := strings.Cut(out, "\n")
	if first != high+" 1" || !strings.Contains(rest, "the assignment") || !strings.Contains(rest, "claimed_by:") {
		t.Fatalf("take output:\n%s", out)
	}
	// Fencing through the CLI: a stale attempt exits 4 and changes nothing.
	path := filepath.Join(q.dir, ".tavern/queues/build/claimed", high+".md")
	before, _ := os.ReadFile(path)
	q.code(4, "item", "done", high, "--attempt", "2")
	q.code(4, "item", "renew", high, "--attempt", "5")
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("stale done changed the file")
	}
	if got := q.ok("item", "renew", high, "--attempt", "1"); got != high+" claimed\n" {
		t.Errorf("renew: %q", got)
	}
	r = q.run("built it\nall fine\n", "item", "done", high, "--attempt", "1", "--result", "-")
	if r.code != 0 || r.out != high+" done\n" {
		t.Fatalf("done: %+v", r)
	}
	// show finds it by id in done/, both ways.
	if out := q.ok("show", "items/"+high); !strings.Contains(out, "## Result") || !strings.Contains(out, "completed:") {
		t.Errorf("show items/ID:\n%s", out)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(q.ok("item", "show", high, "--json")), &obj); err != nil {
		t.Fatal(err)
	}
	if obj["state"] != "done" || obj["id"] != high || obj["kind"] != "item" {
		t.Errorf("item show --json: %v", obj)
	}

	// JSON take; fail twice -> dead; retry.
	if err := json.Unmarshal([]byte(q.ok("queue", "take", "build", "--json")), &obj); err != nil {
		t.Fatal(err)
	}
	if obj["id"] != low || obj["queue"] != "build" || obj["attempt"] != float64(1) {
		t.Fatalf("take --json: %v", obj)
	}
	if got := q.ok("item", "fail", low, "--attempt", "1", "--reason", "flaky"); got != low+" pending\n" {
		t.Fatalf("fail: %q", got)
	}
	// Backoff is 1ms: wait for it with --wait (event/timer driven).
	out = q.ok("queue", "take", "build", "--wait", "10s")
	if !strings.HasPrefix(out, low+" 2\n") {
		t.Fatalf("take after backoff: %q", out)
	}
	if got := q.ok("item", "fail", low, "--reason", "flaky again"); got != low+" dead\n" {
		t.Fatalf("second fail: %q", got)
	}
	q.code(4, "queue", "retry", "build", high) // done, not dead
	if got := q.ok("queue", "retry", "build"); got != low+" pending\n" {
		t.Fatalf("retry: %q", got)
	}
	ls := q.ok("queue", "ls")
	if !strings.Contains(ls, "build") || !strings.Contains(ls, "PENDING") {
		t.Errorf("queue ls:\n%s", ls)
	}
	var lsj []map[string]any
	if err := json.Unmarshal([]byte(q.ok("queue", "ls", "build", "--json")), &lsj); err != nil {
		t.Fatal(err)
	}
	if len(lsj) != 1 || lsj[0]["pending"] != float64(1) || lsj[0]["done"] != float64(1) {
		t.Errorf("queue ls --json: %v", lsj)
	}
}

func TestQueueCLIBadInputAndDeps(t *testing.T) {
	q := newQStore(t)
	q.ok("queue", "create", "q", "--max-attempts", "1")
	a := strings.TrimSpace(q.ok("queue", "add", "q", "--title", "a"))
	b := strings.TrimSpace(q.ok("queue", "add", "q", "--title", "b", "--depends-on", a))
	q.code(2, "queue", "add", "q", "--depends-on", "p00-nothing")
	bad := filepath.Join(q.dir, ".tavern/queues/q/pending/p00-0-handmade.md")
	if err := os.WriteFile(bad, []byte("---\ntitle: ok\npriority: [1\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := q.code(0, "queue", "take", "q")
	if !strings.HasPrefix(r.out, a+" 1") {
		t.Fatalf("take with a broken item at the head: %q", r.out)
	}
	if !strings.Contains(r.err, "queues/q/pending/p00-0-handmade.md:3:") {
		t.Errorf("take did not report the broken file with path:line:col: %q", r.err)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("broken file moved: %v", err)
	}
	r = q.code(0, "queue", "ls", "q")
	if !strings.Contains(r.err, "p00-0-handmade.md:3:") {
		t.Errorf("ls did not report the broken file: %q", r.err)
	}
	r = q.code(5, "check")
	if !strings.Contains(r.err+r.out, "p00-0-handmade.md:3") {
		t.Errorf("check did not report the broken file: %q", r.err+r.out)
	}
	// a dies: b is blocked, and take says so.
	q.ok("item", "fail", a, "--reason", "no")
	r = q.code(3, "queue", "take", "q")
	if !strings.Contains(r.err, b) || !strings.Contains(r.err, "dead") {
		t.Errorf("take with a dead dependency: %q", r.err)
	}
	r = q.code(0, "queue", "ls", "q")
	if !strings.Contains(r.err, "dependency "+a+" is dead") {
		t.Errorf("ls with a dead dependency: %q", r.err)
	}
}

// TestQueueCLIAgentLiveness: `take --as AGENT` while the agent's liveness
// lock is held makes a liveness claim; when the lock is dropped (the
// wrapper died) `tavern reap` returns the item at once.
func TestQueueCLIAgentLiveness(t *testing.T) {
	q := newQStore(t)
	q.ok("queue", "create", "q", "--lease", "1h")
	id := strings.TrimSpace(q.ok("queue", "add", "q"))
	s, err := docstore.Open(filepath.Join(q.dir, ".tavern"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Lock(schema.AgentLockKey("alice"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(q.ok("queue", "take", "q", "--as", "alice", "--json")), &obj); err != nil {
		t.Fatal(err)
	}
	f := obj["fields"].(map[string]any)
	if f["claim_kind"] != "liveness" || f["liveness_lock"] != "agents/alice" || f["claimed_by"] != "alice" {
		t.Fatalf("take --as alice with alice's lock held: %v", f)
	}
	if out := q.ok("reap"); out != "" {
		t.Fatalf("reap with the agent alive: %q", out)
	}
	l.Unlock() // as if alice's wrapper died
	if out := q.ok("reap", "q"); out != "returned "+id+"\n" {
		t.Fatalf("reap after the agent died: %q", out)
	}
}

// TestQueueCLITakeWaitWakes: a blocked take is woken by an add from
// another process, long before its timeout.
func TestQueueCLITakeWaitWakes(t *testing.T) {
	q := newQStore(t)
	q.ok("queue", "create", "q")
	cmd := exec.Command(queueBin(t), "queue", "take", "q", "--wait", "60s")
	cmd.Dir = q.dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whether the add lands before or after the taker's first scan, the
	// taker must end up with the item (the library test checks that the
	// wake-up comes from the file event).
	id := strings.TrimSpace(q.ok("queue", "add", "q"))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("take --wait: %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("take --wait not woken by the add")
	}
	if !strings.HasPrefix(out.String(), id+" 1\n") {
		t.Fatalf("take --wait got %q, want %s", out.String(), id)
	}
}
