package main

// Acceptance tests: the CLI's documented contract (README), driven
// through the built binary the way an outside test suite would. Each test
// pins a mismatch found in review (see the commit messages).

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `tavern CMD ARGS --help` prints the command's help; the positionals
// used to be taken as a help topic ("No help topic for 'agents'").
func TestAcceptHelpAfterArgs(t *testing.T) {
	p := newProject(t)
	for _, args := range [][]string{
		{"ls", "agents", "--help"},
		{"queue", "add", "build", "--help"},
		{"edit", "agents/alice", "-h"},
		{"spawn", "--name", "x", "--help", "--", "echo", "hi"},
	} {
		r := p.run(args...)
		if r.code != 0 || !strings.Contains(r.out, "USAGE:") {
			t.Errorf("tavern %s: want help, exit 0\n%s", strings.Join(args, " "), r)
		}
	}
}

// A missing required flag is a usage error (exit 2), also under --json.
func TestAcceptRequiredFlagIsUsage(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice")
	p.fails(2, "commit", "add", "alice", "--desc", "tests pass")
	r := p.fails(2, "commit", "add", "alice", "--desc", "tests pass", "--json")
	if e := jsonErr(t, r); !strings.Contains(e["error"].(string), "assert") {
		t.Errorf("JSON error does not name the flag: %v", e)
	}
}

// `token acquire NAME --as A` from a shell (no spawn wrapper for A) holds
// the slot as a lease in A's name instead of failing.
func TestAcceptTokenAcquireAs(t *testing.T) {
	p := newProject(t)
	env := []string{"TAVERN_AGENT="}
	run := func(args ...string) result { return runIn(t, p.dir, "", env, args...) }
	p.ok("token", "init", "merge", "--count", "1")
	r := run("token", "acquire", "merge", "--as", "alice")
	if r.code != 0 || !strings.Contains(r.out, ":") || !strings.Contains(r.err, "lease") {
		t.Fatalf("acquire --as alice: %s", r)
	}
	if r := run("token", "acquire", "merge", "--as", "bob"); r.code != 3 {
		t.Fatalf("acquire of a full token: %s", r)
	}
	if r := run("token", "release", "merge", "--as", "alice"); r.code != 0 {
		t.Fatalf("release --as alice: %s", r)
	}
	r = run("token", "acquire", "merge", "--as", "bob", "--json")
	var tok map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.out), &tok) != nil || tok["held_by"] != "bob" || tok["hold"] != "lease" {
		t.Fatalf("acquire --as bob --json: %s", r)
	}
	if r.err != "" {
		t.Errorf("acquire --json wrote to stderr: %q", r.err)
	}
	// --ttl 0 asks for no lease: nothing can stand for bob.
	if r := run("token", "acquire", "merge", "--as", "carol", "--ttl", "0"); r.code != 1 {
		t.Errorf("acquire --as carol --ttl 0: %s", r)
	}
}

// knowledge add works without --as (contributor "user") and without
// --domain (domain "general"), as the issue's [--domain D] [--as AGENT].
func TestAcceptKnowledgeAddOptionalFlags(t *testing.T) {
	p := newProject(t)
	r := runIn(t, p.dir, "", []string{"TAVERN_AGENT="}, "knowledge", "add", "--domain", "decision", "We use Go")
	if r.code != 0 {
		t.Fatalf("knowledge add without --as: %s", r)
	}
	id := strings.TrimSpace(r.out)
	if !p.exists("knowledge/decision/" + id + ".md") {
		t.Fatalf("knowledge/decision/%s.md missing", id)
	}
	runIn(t, p.dir, "", []string{"TAVERN_AGENT="}, "knowledge", "add", "no domain given")
	var list []map[string]any
	if err := json.Unmarshal([]byte(p.ok("knowledge", "ls", "--json")), &list); err != nil || len(list) != 2 {
		t.Fatalf("knowledge ls --json: %v %v", err, list)
	}
	domains := map[string]bool{}
	for _, k := range list {
		domains[k["domain"].(string)] = true
		if k["contributor"] != "user" {
			t.Errorf("contributor = %v, want user", k["contributor"])
		}
	}
	if !domains["decision"] || !domains["general"] {
		t.Errorf("domains = %v, want decision and general", domains)
	}
	// memory stays private: --as is required, and the message names the command.
	r = runIn(t, p.dir, "", []string{"TAVERN_AGENT="}, "memory", "ls")
	if r.code != 2 || !strings.Contains(r.err, "memory ls needs --as") {
		t.Errorf("memory ls without --as: %s", r)
	}
}

// wake/sleep work for an agent that so far is only a name (send, memory
// and recv accept any --as): the agent document is created.
func TestAcceptWakeSleepNewAgent(t *testing.T) {
	p := newProject(t)
	p.ok("memory", "add", "--as", "zed", "--topic", "db", "we chose postgres")
	var b map[string]any
	if err := json.Unmarshal([]byte(p.ok("wake", "--as", "zed", "--json")), &b); err != nil {
		t.Fatal(err)
	}
	if b["spawns"] != float64(1) {
		t.Errorf("wake: spawns = %v, want 1", b["spawns"])
	}
	if f := p.fields("agents/zed"); f["spawns"] != float64(1) || f["state"] != "idle" {
		t.Errorf("agents/zed.md fields = %v", f)
	}
	p.ok("sleep", "--as", "newcomer", "--summary", "nothing yet")
	if f := p.fields("agents/newcomer"); f["last_sleep"] == nil {
		t.Errorf("sleep did not record last_sleep: %v", f)
	}
	p.fails(2, "wake", "--as", "../x")
}

// Engine changes made while no watcher ran are in the journal: a watcher
// starting from a stale .index must not journal them as external edits,
// while a real hand edit still is.
func TestAcceptWatchNoSpuriousExternal(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "early")
	p.ok("ls", "agents") // writes .tavern/.index
	p.ok("new", "agent", "engine")
	p.ok("set", "agents/early", "role=dev")
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q", "--title", "x")

	cmd := exec.Command(builtBin, "watch", "--json")
	cmd.Dir = p.dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
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
	deadline := time.Now().Add(20 * time.Second)
	var got []string
	for {
		got = externals()
		if strings.Contains(strings.Join(got, " "), "agents/byhand.md") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hand edit never journaled as external; externals: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	for _, path := range externals() {
		if path != "agents/byhand.md" {
			t.Errorf("engine change journaled as external: %s", path)
		}
	}
}

// helpCommands parses the COMMANDS: section of a help text.
func helpCommands(help string) []string {
	var names []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "COMMANDS:"):
			in = true
		case in && (strings.TrimSpace(line) == "" || !strings.HasPrefix(line, "   ")):
			in = false
		case in:
			name := strings.TrimSuffix(strings.Fields(line)[0], ",")
			if name != "help" {
				names = append(names, name)
			}
		}
	}
	return names
}

// Every command and subcommand shows at least one example in --help.
func TestAcceptHelpHasExamples(t *testing.T) {
	p := newProject(t)
	top := helpCommands(p.ok("--help"))
	if len(top) < 40 {
		t.Fatalf("tavern --help lists %d commands: %v", len(top), top)
	}
	for _, c := range top {
		help := p.ok(c, "--help")
		if !strings.Contains(help, "Example") {
			t.Errorf("tavern %s --help has no example", c)
		}
		for _, s := range helpCommands(help) {
			if !strings.Contains(p.ok(c, s, "--help"), "Example") {
				t.Errorf("tavern %s %s --help has no example", c, s)
			}
		}
	}
}

// An unknown command or subcommand is a usage error that names it, also
// when flags follow (they used to be blamed on the parent command).
func TestAcceptUnknownCommand(t *testing.T) {
	p := newProject(t)
	r := p.fails(2, "queue", "bogus")
	if !strings.Contains(r.err, `unknown command "bogus"`) || strings.Contains(r.err, `""`) {
		t.Errorf("queue bogus: %s", r)
	}
	r = p.fails(2, "lss", "agents")
	if !strings.Contains(r.err, `unknown command "lss"; did you mean "ls"?`) {
		t.Errorf("lss: %s", r)
	}
	r = p.fails(2, "item", "shwo", "x", "--json")
	if e := jsonErr(t, r); !strings.Contains(e["error"].(string), `unknown command "shwo"`) {
		t.Errorf("item shwo --json: %v", e)
	}
}

// check takes a REF or a store-relative path as show does, not only a
// file path relative to the working directory.
func TestAcceptCheckRef(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice")
	p.write("agents/y.md", "---\nname: y\nstate: bogus\n---\n")
	p.ok("check", "agents/alice")
	for _, arg := range []string{"agents/y", "agents/y.md", ".tavern/agents/y.md"} {
		r := p.fails(5, "check", arg)
		if !strings.Contains(r.err, "agents/y.md:3:8: state:") {
			t.Errorf("check %s: %s", arg, r)
		}
	}
	p.fails(3, "check", "agents/nobody")
}

// An item's state is its directory: ls items shows it, --where state=
// filters on it, and show --json / ls --json carry it.
func TestAcceptItemState(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	a := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "a"))
	b := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "b"))
	p.ok("queue", "take", "q")
	p.ok("item", "done", a)
	names := func(args ...string) (out []string) {
		for _, o := range objsOf(t, p.ok(append([]string{"ls", "items", "--json"}, args...)...)) {
			out = append(out, o["name"].(string)+":"+o["state"].(string))
		}
		return out
	}
	if got := strings.Join(names(), " "); got != "q/"+a+":done q/"+b+":pending" {
		t.Errorf("ls items --json: %s", got)
	}
	if got := strings.Join(names("--where", "state=done"), " "); got != "q/"+a+":done" {
		t.Errorf("ls items --where state=done: %s", got)
	}
	if got := strings.Join(names("--where", "state!=done", "--where", "title=b"), " "); got != "q/"+b+":pending" {
		t.Errorf("ls items --where state!=done: %s", got)
	}
	if out := p.ok("ls", "items"); !strings.Contains(out, "STATE") || !strings.Contains(out, "done") {
		t.Errorf("ls items table lacks the state:\n%s", out)
	}
	if st := p.showJSON("queues/q/done/" + a + ".md")["state"]; st != "done" {
		t.Errorf("show --json state = %v", st)
	}
	if _, ok := p.showJSON("queues/q/queue.md")["state"]; ok {
		t.Error("show --json of a queue has a state")
	}
}

// constitution sha is a read command: it takes --json like the others.
func TestAcceptConstitutionShaJSON(t *testing.T) {
	p := newProject(t)
	p.ok("constitution", "set", "builder", "--text", "Be careful.")
	var o map[string]string
	if err := json.Unmarshal([]byte(p.ok("constitution", "sha", "builder", "--json")), &o); err != nil {
		t.Fatal(err)
	}
	if o["role"] != "builder" || len(o["sha256"]) != 64 || strings.TrimSpace(p.ok("constitution", "sha", "builder")) != o["sha256"] {
		t.Errorf("constitution sha --json = %v", o)
	}
	jsonErr(t, p.fails(3, "constitution", "sha", "nobody", "--json"))
	p.fails(2, "constitution", "sha")
}
