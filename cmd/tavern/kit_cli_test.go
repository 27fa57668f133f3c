package main

// The agent integration kit through the built binary: setup writes the
// tools' settings, the hooks run the commands written there (sh -c, as the
// tools do) with the payloads the tools document (agents/kit/testdata/hooks),
// and the store is checked afterwards.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// fixture reads a recorded hook payload with its placeholders filled in.
func fixture(t *testing.T, tool kit.Tool, ev kit.Event, cwd, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "agents", "kit", "testdata", "hooks", string(tool), string(ev)+".payload"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	rel, _ := filepath.Rel(cwd, file)
	return strings.TrimSpace(strings.NewReplacer("{{cwd}}", cwd, "{{file}}", file, "{{relfile}}", rel).Replace(strings.Join(lines, "\n")))
}

// hookCommands reads the commands setup wrote into a tool's settings file,
// by the tool's event name.
func hookCommands(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for ev, groups := range settings.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if strings.Contains(h.Command, " hook ") {
					out[ev] = h.Command
				}
			}
		}
	}
	return out
}

// session drives one tool's hooks the way the tool does: sh -c COMMAND in
// the project, the payload on stdin.
type session struct {
	t        *testing.T
	p        *project
	tool     kit.Tool
	commands map[string]string
	env      []string
}

func newSession(t *testing.T, p *project, tool kit.Tool, settings string, env ...string) *session {
	return &session{t: t, p: p, tool: tool, commands: hookCommands(t, filepath.Join(p.dir, settings)), env: env}
}

func (s *session) fire(ev kit.Event, file string) result {
	s.t.Helper()
	cmdline, ok := s.commands[kit.NativeEvent(s.tool, ev)]
	if !ok {
		s.t.Fatalf("%s: setup installed no hook for %s", s.tool, kit.NativeEvent(s.tool, ev))
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = s.p.dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "TAVERN_AGENT" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, s.env...)
	cmd.Stdin = strings.NewReader(fixture(s.t, s.tool, ev, s.p.dir, file))
	r := runResult(s.t, cmd)
	if r.code != 0 {
		s.t.Fatalf("%s %s: hooks must exit 0\n%s", s.tool, ev, r)
	}
	return r
}

// stand-in tool process: the session lives while it does.
func standIn(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func openProjectStore(t *testing.T, p *project) *docstore.Store {
	t.Helper()
	s, err := docstore.Open(filepath.Join(p.dir, ".tavern"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitFor re-checks cond (a state another process produces) until it
// holds or the deadline passes.
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

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

func hookSpecific(t *testing.T, out string) map[string]any {
	t.Helper()
	v := decodeJSON(t, out)
	hso, ok := v["hookSpecificOutput"].(map[string]any)
	if !ok {
		t.Fatalf("no hookSpecificOutput: %s", out)
	}
	return hso
}

// The "done when", for Claude Code: from tavern init + tavern setup
// claude to a session that is primed, whose edit of a path reserved by
// another agent is denied, whose messages arrive as context (once), whose
// stop is blocked until its commitment passes, and whose end releases what
// it held.
func TestClaudeSessionEndToEnd(t *testing.T) {
	p := newProject(t)
	p.ok("setup", "claude", "--bin", tavernBin(t))
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "rewrite the lexer")
	tool := standIn(t)
	envFile := filepath.Join(t.TempDir(), "claude-env.sh")
	s := newSession(t, p, kit.Claude, ".claude/settings.json",
		"TAVERN_SESSION_PID="+fmt.Sprint(tool.Process.Pid), "CLAUDE_ENV_FILE="+envFile)
	lexer := filepath.Join(p.dir, "src", "parser", "lexer.go")

	// Primed, and registered.
	r := s.fire(kit.SessionStart, "")
	hso := hookSpecific(t, r.out)
	ctxText, _ := hso["additionalContext"].(string)
	agent := "claude-0f1e2d3c"
	if hso["hookEventName"] != "SessionStart" || !strings.Contains(ctxText, "you are "+agent) || !strings.Contains(ctxText, "rewrite the lexer") || !strings.Contains(ctxText, "## Commands") {
		t.Fatalf("session-start answer:\n%s", r.out)
	}
	if len(ctxText)/4 > kit.PrimeTokens {
		t.Errorf("prime is %d tokens", len(ctxText)/4)
	}
	if env, _ := os.ReadFile(envFile); !strings.Contains(string(env), "export TAVERN_AGENT='"+agent+"'") {
		t.Errorf("CLAUDE_ENV_FILE: %q", env)
	}
	store := openProjectStore(t, p)
	a := agentDoc(t, store, agent)
	if a.State != agents.Working || a.Spawns != 1 || a.SessionID == "" || a.PID != tool.Process.Pid {
		t.Errorf("agent after session start: %+v", a)
	}
	if held, _ := agents.LockHeld(store, schema.AgentLockKey(agent)); !held {
		t.Error("nobody holds the session agent's liveness lock")
	}

	// The session takes the item (as its shell commands would, with the
	// TAVERN_AGENT the env file exports): a liveness claim.
	take := runIn(t, p.dir, "", []string{"TAVERN_AGENT=" + agent}, "next", "--take", "--json")
	if take.code != 0 {
		t.Fatal(take)
	}
	item := decodeJSON(t, take.out)
	if fields := item["fields"].(map[string]any); fields["claimed_by"] != agent || fields["claim_kind"] != "liveness" {
		t.Errorf("claim: %v", fields)
	}

	// bob reserved the parser: the edit is denied, naming bob.
	p.ok("agent", "new", "bob")
	p.ok("reserve", "src/parser/**", "--as", "bob", "--reason", "parser rewrite")
	r = s.fire(kit.PreToolUse, lexer)
	hso = hookSpecific(t, r.out)
	reason, _ := hso["permissionDecisionReason"].(string)
	if hso["permissionDecision"] != "deny" || !strings.Contains(reason, "reserved by bob") || !strings.Contains(reason, "tavern send @bob") {
		t.Errorf("pre-tool-use on a reserved path:\n%s", r.out)
	}
	// Another path: no decision at all (the tool's own permissions apply).
	if r = s.fire(kit.PreToolUse, filepath.Join(p.dir, "README.md")); r.out != "" {
		t.Errorf("pre-tool-use on a free path answered %q", r.out)
	}

	// Messages arrive as context, once.
	p.ok("send", "@"+agent, "the lexer tests live in testdata/", "--as", "bob")
	r = s.fire(kit.UserPromptSubmit, "")
	hso = hookSpecific(t, r.out)
	if hso["hookEventName"] != "UserPromptSubmit" || !strings.Contains(hso["additionalContext"].(string), "the lexer tests live in testdata/") {
		t.Errorf("user-prompt-submit:\n%s", r.out)
	}
	if r = s.fire(kit.PostToolUse, lexer); r.out != "" {
		t.Errorf("the message came twice:\n%s", r.out)
	}

	// Stop is blocked until the commitment passes.
	p.ok("commit", "add", agent, "--desc", "lexer tests pass", "--assert", "test -f lexer.ok")
	r = s.fire(kit.Stop, "")
	v := decodeJSON(t, r.out)
	if v["decision"] != "block" || !strings.Contains(v["reason"].(string), "lexer tests pass") {
		t.Errorf("stop with a failing commitment:\n%s", r.out)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "lexer.ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r = s.fire(kit.Stop, ""); r.out != "" {
		t.Errorf("stop with the commitment passing: %s", r.out)
	}

	// Session end: the item goes back, the summary is written, the keeper
	// lets go of the lock.
	s.fire(kit.SessionEnd, "")
	if out := p.ok("ls", "items", "--json"); !strings.Contains(out, `"pending"`) || strings.Contains(out, `"claimed"`) {
		t.Errorf("items after session end:\n%s", out)
	}
	if out := p.ok("memory", "ls", "--as", agent, "--topic", "summary"); !strings.Contains(out, "ended (prompt_input_exit)") {
		t.Errorf("sleep summary: %s", out)
	}
	if a := agentDoc(t, store, agent); a.State != agents.Idle || a.SessionID != "" {
		t.Errorf("agent after session end: %+v", a)
	}
	waitFor(t, 10*time.Second, "the keeper to let go of the lock", func() bool {
		held, _ := agents.LockHeld(store, schema.AgentLockKey(agent))
		return !held
	})
}

func agentDoc(t *testing.T, s *docstore.Store, name string) *agents.Agent {
	t.Helper()
	m := &agents.Manager{Store: s}
	a, err := m.GetAgent(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Every recorded payload of every tool, through the commands setup wrote:
// the answer in the tool's format and the store afterwards.
func TestHookPayloadsAllTools(t *testing.T) {
	for _, tc := range []struct {
		tool     kit.Tool
		settings string
		agent    string
	}{
		{kit.Claude, ".claude/settings.json", "claude-0f1e2d3c"},
		{kit.Codex, ".codex/hooks.json", "codex-b5f6c1c2"},
		{kit.Gemini, ".gemini/settings.json", "gemini-7c9e6679"},
	} {
		t.Run(string(tc.tool), func(t *testing.T) {
			p := newProject(t)
			p.ok("setup", string(tc.tool), "--bin", tavernBin(t))
			tool := standIn(t)
			s := newSession(t, p, tc.tool, tc.settings, "TAVERN_SESSION_PID="+fmt.Sprint(tool.Process.Pid))
			file := filepath.Join(p.dir, "src", "parser", "lexer.go")

			r := s.fire(kit.SessionStart, "")
			hso := hookSpecific(t, r.out)
			if hso["hookEventName"] != "SessionStart" || !strings.Contains(hso["additionalContext"].(string), "you are "+tc.agent) {
				t.Errorf("session-start: %s", r.out)
			}
			if env, ok := hso["env"].(map[string]any); tc.tool == kit.Codex && (!ok || env["TAVERN_AGENT"] != tc.agent) {
				t.Errorf("codex session-start env: %s", r.out)
			} else if tc.tool != kit.Codex && ok {
				t.Errorf("%s got an env answer it does not document: %s", tc.tool, r.out)
			}

			p.ok("agent", "new", "bob")
			p.ok("reserve", "src/parser/**", "--as", "bob")
			r = s.fire(kit.PreToolUse, file)
			if tc.tool == kit.Gemini {
				v := decodeJSON(t, r.out)
				if v["decision"] != "deny" || !strings.Contains(v["reason"].(string), "reserved by bob") || len(v) != 2 {
					t.Errorf("gemini BeforeTool: %s", r.out)
				}
			} else {
				hso = hookSpecific(t, r.out)
				if hso["permissionDecision"] != "deny" || len(hso) != 3 || len(decodeJSON(t, r.out)) != 1 {
					t.Errorf("%s PreToolUse: %s", tc.tool, r.out)
				}
			}
			p.ok("unreserve", "--as", "bob")
			if r = s.fire(kit.PreToolUse, file); r.out != "" {
				t.Errorf("after unreserve: %s", r.out)
			}

			p.ok("send", "@"+tc.agent, "ping from bob", "--as", "bob")
			r = s.fire(kit.UserPromptSubmit, "")
			hso = hookSpecific(t, r.out)
			if hso["hookEventName"] != kit.NativeEvent(tc.tool, kit.UserPromptSubmit) || !strings.Contains(hso["additionalContext"].(string), "ping from bob") {
				t.Errorf("prompt hook: %s", r.out)
			}
			p.ok("send", "general", "pong", "--as", "bob", "--create")
			r = s.fire(kit.PostToolUse, file)
			hso = hookSpecific(t, r.out)
			if hso["hookEventName"] != kit.NativeEvent(tc.tool, kit.PostToolUse) || !strings.Contains(hso["additionalContext"].(string), "pong") || strings.Contains(hso["additionalContext"].(string), "ping from bob") {
				t.Errorf("post-tool hook: %s", r.out)
			}

			p.ok("queue", "create", "build")
			p.ok("queue", "add", "build", "--title", "x")
			runIn(t, p.dir, "", []string{"TAVERN_AGENT=" + tc.agent}, "next", "--take")
			p.ok("commit", "add", tc.agent, "--desc", "never", "--assert", "false")
			r = s.fire(kit.Stop, "")
			v := decodeJSON(t, r.out)
			want := "block"
			if tc.tool == kit.Gemini {
				want = "deny"
			}
			if v["decision"] != want || len(v) != 2 {
				t.Errorf("stop: %s", r.out)
			}

			if r = s.fire(kit.SessionEnd, ""); r.out != "" {
				t.Errorf("session-end printed %q", r.out)
			}
			store := openProjectStore(t, p)
			if a := agentDoc(t, store, tc.agent); a.State != agents.Idle || a.SessionID != "" {
				t.Errorf("after session end: %+v", a)
			}
			waitFor(t, 10*time.Second, "the keeper to end", func() bool {
				held, _ := agents.LockHeld(store, schema.AgentLockKey(tc.agent))
				return !held
			})
		})
	}
}

// A session whose tool dies without a session-end hook is ended by its
// keeper: the item comes back at once.
func TestHookToolDiesKeeperEnds(t *testing.T) {
	p := newProject(t)
	p.ok("setup", "claude", "--bin", tavernBin(t))
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "x")
	tool := standIn(t)
	s := newSession(t, p, kit.Claude, ".claude/settings.json", "TAVERN_SESSION_PID="+fmt.Sprint(tool.Process.Pid))
	s.fire(kit.SessionStart, "")
	agent := "claude-0f1e2d3c"
	runIn(t, p.dir, "", []string{"TAVERN_AGENT=" + agent}, "next", "--take")
	tool.Process.Kill()
	tool.Wait()
	store := openProjectStore(t, p)
	waitFor(t, 30*time.Second, "the keeper to end the session", func() bool {
		return agentDoc(t, store, agent).State == agents.Idle
	})
	if out := p.ok("ls", "items", "--json"); !strings.Contains(out, `"pending"`) {
		t.Errorf("item not released:\n%s", out)
	}
}

// Outside a Tavern project every hook and prime say nothing and exit 0.
func TestHooksOutsideProject(t *testing.T) {
	dir := t.TempDir()
	for _, ev := range kit.Events {
		in := fixture(t, kit.Claude, ev, dir, filepath.Join(dir, "a.go"))
		r := runIn(t, dir, in, nil, "hook", string(ev), "--tool", "claude")
		if r.code != 0 || r.out != "" || r.err != "" {
			t.Errorf("hook %s outside a project: %s", ev, r)
		}
	}
	r := runIn(t, dir, "", []string{"TAVERN_AGENT=x"}, "prime", "--hook-json")
	if r.code != 0 || r.out != "" || r.err != "" {
		t.Errorf("prime outside a project: %s", r)
	}
}

// A broken payload or a broken store never stops the tool.
func TestHookFailsOpen(t *testing.T) {
	p := newProject(t)
	r := runIn(t, p.dir, "{not json", nil, "hook", "pre-tool-use", "--tool", "claude")
	if r.code != 0 || r.out != "" || !strings.Contains(r.err, "tavern hook pre-tool-use") {
		t.Errorf("bad payload: %s", r)
	}
	// A reservation file that does not parse: the gate lets the edit
	// through (not a definite conflict) and names the file, to the user
	// (systemMessage) and on stderr (hook_bad_reservation.txtar).
	os.MkdirAll(p.path("tuples/reservation"), 0o755)
	os.WriteFile(p.path("tuples/reservation/bad.md"), []byte("---\nagent: [\n---\n"), 0o644)
	in := fixture(t, kit.Claude, kit.PreToolUse, p.dir, filepath.Join(p.dir, "src", "a.go"))
	r = runIn(t, p.dir, in, nil, "hook", "pre-tool-use", "--tool", "claude")
	if r.code != 0 || strings.Contains(r.out, "permissionDecision") || !strings.Contains(r.out, `"systemMessage"`) ||
		!strings.Contains(r.out, "bad.md:3:1") || !strings.Contains(r.err, "bad.md:3:1") {
		t.Errorf("broken reservation file: %s", r)
	}
}

func TestPrimeCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "first")
	p.ok("agent", "new", "alice")
	out := p.ok("prime", "--as", "alice")
	if !strings.Contains(out, "you are alice") || !strings.Contains(out, "first") || len(out)/4 > kit.PrimeTokens {
		t.Errorf("prime:\n%s", out)
	}
	var js struct {
		Agent    string         `json:"agent"`
		Next     []kit.NextItem `json:"next"`
		Commands []kit.Command  `json:"commands"`
	}
	if err := json.Unmarshal([]byte(p.ok("prime", "--as", "alice", "--json")), &js); err != nil || js.Agent != "alice" || len(js.Next) != 1 || len(js.Commands) < 6 {
		t.Errorf("prime --json: %+v %v", js, err)
	}
	hso := hookSpecific(t, p.ok("prime", "--as", "alice", "--hook-json"))
	if hso["hookEventName"] != "SessionStart" || !strings.Contains(hso["additionalContext"].(string), "you are alice") {
		t.Errorf("prime --hook-json: %v", hso)
	}
	// The session's agent from a hook payload on stdin.
	in := fixture(t, kit.Claude, kit.SessionStart, p.dir, "")
	r := runIn(t, p.dir, in, nil, "prime", "--hook-json")
	if !strings.Contains(r.out, "you are claude-0f1e2d3c") {
		t.Errorf("prime --hook-json with a payload: %s", r)
	}
	// No identity: the person's prime (prime_person.txtar).
	if out := p.ok("prime"); !strings.Contains(out, "you are the person") {
		t.Errorf("prime without an agent:\n%s", out)
	}
	// PRIME.md replaces the commands; check accepts it.
	os.WriteFile(p.path("PRIME.md"), []byte("Use make only, {{agent}}.\n"), 0o644)
	if out := p.ok("prime", "--as", "alice"); !strings.Contains(out, "Use make only, alice.") || strings.Contains(out, "remember something") {
		t.Errorf("PRIME.md:\n%s", out)
	}
	p.ok("check")
}

func TestNextCLI(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	first := strings.TrimSpace(p.ok("queue", "add", "build", "--title", "first"))
	second := strings.TrimSpace(p.ok("queue", "add", "build", "--title", "second"))
	p.ok("agent", "new", "bob")
	p.ok("agent", "new", "alice")
	p.ok("queue", "take", "build", "--as", "bob") // bob holds first
	out := p.ok("next", "--as", "alice")
	if strings.Contains(out, first) || !strings.Contains(out, second) {
		t.Errorf("next offers what bob holds:\n%s", out)
	}
	line := strings.SplitN(p.ok("next", "--take", "--as", "alice"), "\n", 2)[0]
	if !strings.HasPrefix(line, second+" ") {
		t.Errorf("next --take: %q, want %s", line, second)
	}
	out = p.ok("next", "--as", "alice")
	if !strings.Contains(out, "held (attempt 1)") {
		t.Errorf("held items not shown:\n%s", out)
	}
	p.fails(3, "next", "--take", "--as", "carol")
}

func TestSetupCLI(t *testing.T) {
	p := newProject(t)
	p.fails(3, "setup", "claude", "--check", "--bin", tavernBin(t))
	p.ok("setup", "claude", "--bin", tavernBin(t))
	p.ok("setup", "claude", "--check", "--bin", tavernBin(t))
	p.fails(2, "setup", "vim")
	p.ok("setup", "claude", "--remove")
	if _, err := os.Stat(filepath.Join(p.dir, ".claude")); err == nil {
		t.Error(".claude/ left behind by remove")
	}
	os.MkdirAll(filepath.Join(p.dir, ".gemini"), 0o755)
	os.WriteFile(filepath.Join(p.dir, ".gemini", "settings.json"), []byte("{\n  \"theme\": \n}\n"), 0o644)
	r := p.fails(5, "setup", "gemini")
	if !strings.Contains(r.err, ".gemini/settings.json:3:1") {
		t.Errorf("bad settings: %s", r)
	}
	outside := t.TempDir()
	if r := runIn(t, outside, "", nil, "setup", "claude"); r.code != 3 {
		t.Errorf("setup outside a project: %s", r)
	}
}

// Under the spawn wrapper (print mode in a pool), the tool's hooks find the
// wrapper holding the agent's lock: they prime, but the agent's state,
// its spawn count and its item stay the wrapper's.
func TestHookUnderSpawnWrapper(t *testing.T) {
	p := newProject(t)
	p.ok("setup", "claude", "--bin", tavernBin(t))
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "one")
	payloads := t.TempDir()
	start := filepath.Join(payloads, "start.json")
	end := filepath.Join(payloads, "end.json")
	os.WriteFile(start, []byte(fixture(t, kit.Claude, kit.SessionStart, p.dir, "")), 0o644)
	os.WriteFile(end, []byte(fixture(t, kit.Claude, kit.SessionEnd, p.dir, "")), 0o644)
	script := fmt.Sprintf("%s hook session-start --tool claude < %s > primed.json && %s hook session-end --tool claude < %s", tavernBin(t), start, tavernBin(t), end)
	r := runIn(t, p.dir, "", nil, "spawn", "--name", "w", "--queue", "build", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatal(r)
	}
	primed, _ := os.ReadFile(filepath.Join(p.dir, "primed.json"))
	if !strings.Contains(string(primed), "you are w") {
		t.Errorf("prime under the wrapper: %s", primed)
	}
	a := agentDoc(t, openProjectStore(t, p), "w")
	if a.Spawns != 1 || a.State != agents.Done || a.SessionID != "" {
		t.Errorf("agent after a hooked print-mode run: %+v", a)
	}
	if out := p.ok("ls", "items", "--json"); !strings.Contains(out, `"done"`) {
		t.Errorf("the wrapper's item:\n%s", out)
	}
}

// runIn runs tavern in dir with stdin and extra environment, without the
// test's own TAVERN_* variables.
func runIn(t testing.TB, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tavernBin(t), args...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "TAVERN_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("tavern %q: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// The stop gate cannot be passed by marking the item done first: a
// session whose agent completed an item during the session (as itself,
// or as a person with TAVERN_AGENT removed) is held at its stop while its
// commitments fail, exactly as while it still held the item; the stop
// goes through once they pass. Each tool's own block format.
func TestStopGateAfterItemDone(t *testing.T) {
	for _, tc := range []struct {
		tool     kit.Tool
		settings string
		agent    string
		block    string // the tool's block decision
		asPerson bool   // the item is completed without TAVERN_AGENT
	}{
		{kit.Claude, ".claude/settings.json", "claude-0f1e2d3c", "block", false},
		{kit.Codex, ".codex/hooks.json", "", "block", true},
		{kit.Gemini, ".gemini/settings.json", "", "deny", false},
	} {
		t.Run(string(tc.tool), func(t *testing.T) {
			p := newProject(t)
			p.ok("setup", string(tc.tool), "--bin", tavernBin(t))
			p.ok("queue", "create", "build")
			p.ok("queue", "add", "build", "--title", "rewrite the lexer")
			tool := standIn(t)
			s := newSession(t, p, tc.tool, tc.settings, "TAVERN_SESSION_PID="+fmt.Sprint(tool.Process.Pid))
			s.fire(kit.SessionStart, "")
			store := openProjectStore(t, p)
			agent := tc.agent
			if agent == "" {
				as, err := store.Docs("agents")
				if err != nil || len(as) != 1 {
					t.Fatalf("agents after session start: %v %v", as, err)
				}
				agent = strings.TrimSuffix(filepath.Base(as[0]), ".md")
			}
			env := []string{"TAVERN_AGENT=" + agent}
			take := runIn(t, p.dir, "", env, "next", "--take", "--json")
			if take.code != 0 {
				t.Fatal(take)
			}
			id, _ := decodeJSON(t, take.out)["id"].(string)
			p.ok("commit", "add", agent, "--desc", "lexer tests pass", "--assert", "test -f lexer.ok")

			// Done first, then stop: still blocked.
			doneEnv := env
			if tc.asPerson {
				doneEnv = nil
			}
			if r := runIn(t, p.dir, "", doneEnv, "item", "done", id); r.code != 0 {
				t.Fatalf("item done: %s", r)
			}
			r := s.fire(kit.Stop, "")
			if r.out == "" {
				t.Fatalf("stop after marking the item done with a failing commitment went through (%s)", r.err)
			}
			v := decodeJSON(t, r.out)
			reason, _ := v["reason"].(string)
			if v["decision"] != tc.block || !strings.Contains(reason, "lexer tests pass") || !strings.Contains(reason, id) {
				t.Errorf("stop after item done:\n%s", r.out)
			}
			// Passing, the stop goes through.
			if err := os.WriteFile(filepath.Join(p.dir, "lexer.ok"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if r = s.fire(kit.Stop, ""); r.out != "" {
				t.Errorf("stop with the commitment passing: %s", r.out)
			}
			s.fire(kit.SessionEnd, "")
		})
	}
}

// setup, --check and --remove against settings files as people write
// them: other indentation, tabs, one-line arrays, Gemini's comments
// (its settings.json is JSON with comments), Aider's YAML lists. Setup
// keeps every byte of the file outside what it adds, running it again
// changes nothing, --check passes, and --remove gives the file back byte
// for byte.
func TestSetupRealConfigFiles(t *testing.T) {
	files := []struct {
		tool   string
		path   string
		text   string
		events []string // the tool's events setup must add
	}{
		{"claude", ".claude/settings.json", `{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Bash(npm test:*)"],
        "deny": ["Read(./.env)"]
    },
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./scripts/no-rm-rf.sh"}]
            }
        ]
    },
    "model": "opus"
}
`, []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}},
		{"codex", ".codex/hooks.json", "{\n\t\"hooks\": {\n\t\t\"SessionStart\": [{\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\", \"timeout\": 5}]}]\n\t}\n}\n",
			[]string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}},
		{"gemini", ".gemini/settings.json", `{
  // Gemini CLI strips comments before parsing its settings.
  "theme": "GitHub",
  "hooksConfig": { "enabled": true },
  /* a shell guard of our own */
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          { "name": "guard", "type": "command", "command": "./guard.sh", "timeout": 5000 } // ms
        ]
      }
    ]
  },
  "mcpServers": {}
}
`, []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"}},
	}
	for _, f := range files {
		t.Run(f.tool, func(t *testing.T) {
			p := newProject(t)
			path := filepath.Join(p.dir, f.path)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
				t.Fatal(err)
			}
			p.ok("setup", f.tool, "--bin", tavernBin(t))
			got := readText(t, path)
			// Every line of the user's file is still there, in order.
			rest := got
			for _, line := range strings.Split(strings.TrimSuffix(f.text, "\n"), "\n") {
				if line == "}" {
					continue // the closing braces now close more
				}
				i := strings.Index(rest, strings.TrimRight(line, ",]}"))
				if i < 0 {
					t.Fatalf("setup lost or reordered %q:\n%s", line, got)
				}
				rest = rest[i:]
			}
			cmds := hookCommandsJSONC(t, got)
			for _, ev := range f.events {
				if !strings.Contains(cmds[ev], "hook ") || !strings.Contains(cmds[ev], "--tool "+f.tool) {
					t.Errorf("%s: no tavern hook for %s:\n%s", f.tool, ev, got)
				}
			}
			p.ok("setup", f.tool, "--bin", tavernBin(t))
			if again := readText(t, path); again != got {
				t.Errorf("second setup changed the file:\n%s", again)
			}
			p.ok("setup", f.tool, "--check", "--bin", tavernBin(t))
			p.ok("setup", f.tool, "--remove")
			if back := readText(t, path); back != f.text {
				t.Errorf("remove did not give the file back:\ngot:\n%s\nwant:\n%s", back, f.text)
			}
		})
	}

	t.Run("aider", func(t *testing.T) {
		for _, conf := range []string{
			"# aider settings\nmodel: sonnet\nread:\n  - CONVENTIONS.md   # team rules\n  - docs/style.md\nauto-commits: false\n",
			"model: sonnet\nread: CONVENTIONS.md\n",
			"read: [CONVENTIONS.md, docs/style.md]  # both\n",
			"model: sonnet",
		} {
			p := newProject(t)
			path := filepath.Join(p.dir, ".aider.conf.yml")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			p.ok("setup", "aider")
			got := readText(t, path)
			var v struct {
				Read any `yaml:"read"`
			}
			if err := yaml.Unmarshal([]byte(got), &v); err != nil || !strings.Contains(fmt.Sprint(v.Read), "AGENTS.md") {
				t.Errorf("after setup (%v):\n%s", err, got)
			}
			p.ok("setup", "aider")
			if again := readText(t, path); again != got {
				t.Errorf("second setup changed the file:\n%s", again)
			}
			p.ok("setup", "aider", "--check")
			p.ok("setup", "aider", "--remove")
			if back := readText(t, path); strings.TrimSuffix(back, "\n") != strings.TrimSuffix(conf, "\n") {
				t.Errorf("remove did not give the file back:\ngot:\n%s\nwant:\n%s", back, conf)
			}
		}
	})

	// Switches that keep the tools from running the hooks are reported.
	t.Run("switched off", func(t *testing.T) {
		p := newProject(t)
		os.MkdirAll(filepath.Join(p.dir, ".gemini"), 0o755)
		os.WriteFile(filepath.Join(p.dir, ".gemini", "settings.json"), []byte(`{"hooksConfig": {"enabled": false, "disabled": ["tavern-stop"]}}`), 0o644)
		p.ok("setup", "gemini", "--bin", tavernBin(t))
		out := p.ok("setup", "gemini", "--check", "--bin", tavernBin(t))
		if !strings.Contains(out, "hooksConfig.enabled") || !strings.Contains(out, "tavern-stop") {
			t.Errorf("gemini check:\n%s", out)
		}
		os.MkdirAll(filepath.Join(p.dir, ".codex"), 0o755)
		os.WriteFile(filepath.Join(p.dir, ".codex", "config.toml"), []byte("model = \"o3\"\n\n[features]\nhooks = false\n"), 0o644)
		p.ok("setup", "codex", "--bin", tavernBin(t))
		r := runIn(t, p.dir, "", []string{"CODEX_HOME=" + t.TempDir()}, "setup", "codex", "--check", "--bin", tavernBin(t))
		if r.code != 0 || !strings.Contains(r.out, ".codex/config.toml:4") || !strings.Contains(r.out, "features.hooks") {
			t.Errorf("codex check: %s", r)
		}
	})
}

// hookCommandsJSONC is hookCommands for text that may hold comments.
func hookCommandsJSONC(t *testing.T, text string) map[string]string {
	t.Helper()
	var b strings.Builder
	inStr := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inStr:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(text) {
				i++
				b.WriteByte(text[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			b.WriteByte(c)
		case strings.HasPrefix(text[i:], "//"):
			for i < len(text) && text[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case strings.HasPrefix(text[i:], "/*"):
			i += strings.Index(text[i:], "*/") + 1
		default:
			b.WriteByte(c)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "s.json")
	os.WriteFile(f, []byte(b.String()), 0o644)
	return hookCommands(t, f)
}

// A Write of a large file (its content is in the payload) is still gated:
// the hook read at most 16 MiB of stdin, so a bigger payload was cut, did
// not parse, and the edit of a reserved path went through with "unexpected
// end of JSON input" on stderr.
func TestHookLargePayload(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice")
	p.ok("reserve", "src/**", "--as", "alice")
	in, err := json.Marshal(map[string]any{
		"session_id": "s-big-1", "hook_event_name": "PreToolUse", "tool_name": "Write",
		"tool_input": map[string]any{"file_path": "src/big.go", "content": strings.Repeat("x", 17<<20)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := runIn(t, p.dir, string(in), nil, "hook", "pre-tool-use", "--tool", "claude")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	if got := hookSpecific(t, r.out)["permissionDecision"]; got != "deny" {
		t.Errorf("permissionDecision: got %v, want deny (stderr: %s)", got, r.err)
	}
}

// Two sessions started with the same $TAVERN_AGENT (two terminals with it
// in the profile): the second is not the agent's owner, yet its prime
// said "you are alice" and listed the first session's items as its own,
// so both worked on one claim and edited under one set of reservations.
// The second session is now told, and so is the user; the owner's own
// resume is not.
func TestHookSecondSessionSameAgent(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice")
	payload := func(id string) string {
		return `{"session_id":"` + id + `","hook_event_name":"SessionStart","source":"startup"}`
	}
	a, b := standIn(t), standIn(t)
	envA := []string{"TAVERN_AGENT=alice", fmt.Sprintf("TAVERN_SESSION_PID=%d", a.Process.Pid)}
	envB := []string{"TAVERN_AGENT=alice", fmt.Sprintf("TAVERN_SESSION_PID=%d", b.Process.Pid)}

	r := runIn(t, p.dir, payload("sess-a-11111111"), envA, "hook", "session-start", "--tool", "claude")
	if r.code != 0 || strings.Contains(r.out, "another session") {
		t.Fatalf("first session: %s", r)
	}
	r = runIn(t, p.dir, payload("sess-b-22222222"), envB, "hook", "session-start", "--tool", "claude")
	if r.code != 0 {
		t.Fatalf("second session: %s", r)
	}
	v := decodeJSON(t, r.out)
	ctx, _ := v["hookSpecificOutput"].(map[string]any)["additionalContext"].(string)
	msg, _ := v["systemMessage"].(string)
	for what, s := range map[string]string{"context": ctx, "systemMessage": msg} {
		if !strings.Contains(s, "alice is already in another session (sess-a-11111111") {
			t.Errorf("second session's %s: %q, want it to name the session that owns alice", what, s)
		}
	}
	// The owner resuming (same session id) is not warned.
	r = runIn(t, p.dir, `{"session_id":"sess-a-11111111","hook_event_name":"SessionStart","source":"resume"}`, envA, "hook", "session-start", "--tool", "claude")
	if strings.Contains(r.out, "another session") {
		t.Errorf("the owner's resume was warned: %s", r.out)
	}

	// A session that died without its end leaves its session_id; a
	// spawn of the agent then owns it, and the session-start hook of the
	// tool it runs is not told of a session that is gone.
	b.Process.Kill()
	b.Wait()
	a.Process.Kill()
	a.Wait()
	waitFor(t, 10*time.Second, "the sessions' keepers to let alice go", func() bool {
		return !strings.Contains(p.ok("agent", "show", "alice"), "state: working")
	})
	p.ok("set", "agents/alice", "session_id=sess-dead-3333")
	if err := os.WriteFile(filepath.Join(p.dir, "start.json"), []byte(payload("sess-c-44444444")), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ok("spawn", "--name", "alice", "--", "sh", "-c", tavernBin(t)+" hook session-start --tool claude < start.json > out.json")
	out, err := os.ReadFile(filepath.Join(p.dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "you are alice") || strings.Contains(string(out), "another session") {
		t.Errorf("the spawned tool's session-start: %s", out)
	}
}

// keeperPIDs finds the session keepers (`tavern hook keep`) running on
// the project's store, from /proc: a zombie's command line is empty, so
// a keeper that exited is not listed.
func keeperPIDs(t *testing.T, p *project) []int {
	t.Helper()
	root := filepath.Join(p.dir, ".tavern")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) > 2 && args[1] == "hook" && args[2] == "keep" && strings.Contains(string(data), "\x00--dir\x00"+root+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// `kill PID` (SIGTERM) or SIGINT stops a session keeper at once, and it
// lets go of the agent's lock as it does when the session ends.
func TestHookKeeperStopsOnSignal(t *testing.T) {
	p := newProject(t)
	p.ok("setup", "claude", "--bin", tavernBin(t))
	tool := standIn(t)
	s := newSession(t, p, kit.Claude, ".claude/settings.json", "TAVERN_SESSION_PID="+fmt.Sprint(tool.Process.Pid))
	store := openProjectStore(t, p)
	agent := "claude-0f1e2d3c"
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		s.fire(kit.SessionStart, "")
		pids := keeperPIDs(t, p)
		if len(pids) != 1 {
			t.Fatalf("%v: keepers running: %v, want one", sig, pids)
		}
		if held, _ := agents.LockHeld(store, schema.AgentLockKey(agent)); !held {
			t.Fatalf("%v: nobody holds the agent's lock after session start", sig)
		}
		// A signal that comes before the keeper's main has armed its
		// handler ends it the Go runtime's way: wait for its first look
		// at the agent document, which only the keeper opens now.
		waitOpened(t, filepath.Join(p.dir, ".tavern", agents.AgentPath(agent)))
		if err := syscall.Kill(pids[0], sig); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("the keeper to stop on %v", sig), func() bool {
			held, _ := agents.LockHeld(store, schema.AgentLockKey(agent))
			return !held && len(keeperPIDs(t, p)) == 0
		})
	}
}

// waitOpened waits until some process opens path (inotify IN_OPEN).
func waitOpened(t *testing.T, path string) {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	waitFor(t, 10*time.Second, "a process to open "+path, func() bool {
		n, _ := syscall.Read(fd, buf)
		return n > 0
	})
}
