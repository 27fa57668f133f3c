package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tavernEnv runs the built binary with extra environment variables and
// returns stdout, stderr and the exit code.
func tavernEnv(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(tavernBin(t), append(append([]string{}, args...), "--dir", dir)...)
	cmd.Dir = filepath.Dir(dir)
	cmd.Env = append(append(os.Environ(), "TAVERN_AGENT="), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func wantCode(t *testing.T, dir string, env []string, code int, args ...string) string {
	t.Helper()
	out, errs, got := tavernEnv(t, dir, env, args...)
	if got != code {
		t.Fatalf("tavern %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errs)
	}
	return out
}

// poll re-checks a condition produced by another process until a deadline.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func agentState(t *testing.T, dir, name string) string {
	t.Helper()
	out := wantCode(t, dir, nil, 0, "agent", "ls", "--json")
	var list []struct{ Name, State string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Name == name {
			return a.State
		}
	}
	return ""
}

func TestAgentStateMachineCLI(t *testing.T) {
	dir := initStore(t)
	wantCode(t, dir, nil, 0, "agent", "new", "alice")
	wantCode(t, dir, nil, 2, "agent", "new", "Bad Name")
	wantCode(t, dir, nil, 0, "agent", "state", "alice", "working")
	wantCode(t, dir, nil, 0, "agent", "state", "alice", "waiting")
	wantCode(t, dir, nil, 0, "agent", "state", "alice", "idle")
	if st := agentState(t, dir, "alice"); st != "idle" {
		t.Fatalf("state %s", st)
	}
}

func TestAgentIllegalTransitionsCLI(t *testing.T) {
	dir := initStore(t)
	wantCode(t, dir, nil, 0, "agent", "new", "bob")
	wantCode(t, dir, nil, 4, "agent", "state", "bob", "done")      // idle -> done
	wantCode(t, dir, nil, 4, "agent", "state", "bob", "verifying") // idle -> verifying
	wantCode(t, dir, nil, 0, "agent", "state", "bob", "working")
	wantCode(t, dir, nil, 0, "agent", "state", "bob", "done")
	wantCode(t, dir, nil, 4, "agent", "state", "bob", "working") // done -> working

	// A hand edit to an illegal state is invalid: check and audit exit 5,
	// and the engine refuses to act on the agent.
	p := filepath.Join(dir, "agents", "bob.md")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("\nstate: done\n"), []byte("\nstate: verifying\n"), 1), 0o644)
	_, errs, code := tavernEnv(t, dir, nil, "check")
	if code != 5 || !strings.Contains(errs, "edited by hand") {
		t.Fatalf("check: exit %d %s", code, errs)
	}
	wantCode(t, dir, nil, 5, "agent", "audit")
	wantCode(t, dir, nil, 5, "agent", "state", "bob", "idle")
	wantCode(t, dir, nil, 0, "agent", "state", "bob", "idle", "--force")
	wantCode(t, dir, nil, 0, "check")
}

func TestCommitAndVerifyCLI(t *testing.T) {
	dir := initStore(t)
	wantCode(t, dir, nil, 0, "agent", "new", "carl")
	wantCode(t, dir, nil, 0, "commit", "add", "carl", "--desc", "flag exists", "--assert", "test -f flag")
	wantCode(t, dir, nil, 0, "agent", "state", "carl", "working")
	wantCode(t, dir, nil, 0, "agent", "state", "carl", "verifying")
	// The agent itself may neither verify nor write a status.
	self := []string{"TAVERN_AGENT=carl"}
	wantCode(t, dir, self, 4, "verify", "carl")
	var cs []struct{ Path, Status string }
	json.Unmarshal([]byte(wantCode(t, dir, nil, 0, "commit", "ls", "carl", "--json")), &cs)
	if len(cs) != 1 {
		t.Fatalf("commitments: %v", cs)
	}
	wantCode(t, dir, self, 4, "set", cs[0].Path, "status=passed")
	wantCode(t, dir, self, 0, "set", cs[0].Path, "description=still fine")

	// Failing: exit 1, back to working with the failure in its notes.
	out := wantCode(t, dir, nil, 1, "verify", "carl")
	if !strings.Contains(out, "FAIL still fine") || agentState(t, dir, "carl") != "working" {
		t.Fatalf("verify output %q, state %s", out, agentState(t, dir, "carl"))
	}
	os.WriteFile(filepath.Join(filepath.Dir(dir), "flag"), nil, 0o644)
	wantCode(t, dir, nil, 0, "agent", "state", "carl", "verifying")
	wantCode(t, dir, nil, 0, "verify", "carl")
	if st := agentState(t, dir, "carl"); st != "done" {
		t.Fatalf("state after passing verification: %s", st)
	}
}

// ask --wait in one process is answered by another.
func TestAskAnswerAcrossProcesses(t *testing.T) {
	dir := initStore(t)
	wantCode(t, dir, nil, 0, "agent", "new", "root")
	wantCode(t, dir, nil, 0, "agent", "new", "boss", "--parent", "root")
	wantCode(t, dir, nil, 0, "agent", "new", "kid", "--parent", "boss")
	wantCode(t, dir, nil, 0, "agent", "state", "kid", "working")

	ask := exec.Command(tavernBin(t), "ask", "--wait", "30s", "Postgres or SQLite?", "--dir", dir)
	ask.Env = append(os.Environ(), "TAVERN_AGENT=kid")
	var out bytes.Buffer
	ask.Stdout = &out
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	var qs []struct{ ID, From, To, Question string }
	poll(t, "the question to reach boss", func() bool {
		json.Unmarshal([]byte(wantCode(t, dir, nil, 0, "questions", "--as", "boss", "--json")), &qs)
		return len(qs) == 1
	})
	if qs[0].From != "kid" || qs[0].Question != "Postgres or SQLite?" {
		t.Fatalf("question = %+v", qs[0])
	}
	if st := agentState(t, dir, "kid"); st != "waiting" {
		t.Fatalf("asker state %s, want waiting", st)
	}
	wantCode(t, dir, []string{"TAVERN_AGENT=boss"}, 0, "answer", qs[0].ID, "SQLite")
	if err := ask.Wait(); err != nil {
		t.Fatalf("ask: %v", err)
	}
	if got := strings.TrimSpace(out.String()); got != "SQLite" {
		t.Fatalf("ask printed %q", got)
	}
	if st := agentState(t, dir, "kid"); st != "working" {
		t.Fatalf("asker state %s after the answer, want working", st)
	}

	// Unanswered: timeout is exit 3, and bubbling moves it up to the user.
	wantCode(t, dir, []string{"TAVERN_AGENT=kid"}, 3, "ask", "--wait", "50ms", "Ship it?")
	wantCode(t, dir, nil, 0, "bubble", "--after", "1ns")
	json.Unmarshal([]byte(wantCode(t, dir, nil, 0, "questions", "--as", "root", "--json")), &qs)
	if len(qs) != 1 || qs[0].Question != "Ship it?" {
		t.Fatalf("root's questions after one bubble: %+v", qs)
	}
	wantCode(t, dir, nil, 0, "bubble", "--after", "1ns")
	json.Unmarshal([]byte(wantCode(t, dir, nil, 0, "questions", "--json")), &qs)
	if len(qs) != 1 || qs[0].To != "@user" {
		t.Fatalf("user's questions: %+v", qs)
	}
}

func TestSpawnCLI(t *testing.T) {
	dir := initStore(t)
	out, errs, code := tavernEnv(t, dir, nil, "spawn", "--name", "w", "--tee", "--", "sh", "-c", "echo out-line; echo err-line >&2; exit 7")
	if code != 7 || !strings.Contains(out, "out-line") || !strings.Contains(errs, "err-line") {
		t.Fatalf("spawn: exit %d\n%s\n%s", code, out, errs)
	}
	if st := agentState(t, dir, "w"); st != "failed" {
		t.Fatalf("state %s", st)
	}
	log := wantCode(t, dir, nil, 0, "agent", "log", "w")
	if !strings.Contains(log, "w: out-line") || !strings.Contains(log, "w:stderr: err-line") {
		t.Fatalf("captured:\n%s", log)
	}

	// SIGTERM to the wrapper is forwarded to the child; the agent goes idle.
	ready := filepath.Join(t.TempDir(), "ready")
	got := ready + ".sig"
	w := exec.Command(tavernBin(t), "spawn", "--name", "w", "--dir", dir, "--", "sh", "-c",
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
	if st := agentState(t, dir, "w"); st != "idle" {
		t.Fatalf("state after interrupt %s, want idle", st)
	}
}

func TestDemoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real pool")
	}
	cmd := exec.Command(tavernBin(t), "demo")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"== summary ==", "lead: done", "passed  every done item has its output file", "passed  nothing left pending or claimed"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
