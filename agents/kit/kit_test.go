package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// newEnv is an Env on a fresh store in a temp dir.
func newEnv(tb testing.TB) *Env {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := OpenEnv(s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// payload reads a recorded hook payload (testdata/hooks/TOOL/EVENT.payload)
// with its placeholders filled in.
func payload(tb testing.TB, tool Tool, ev Event, cwd, file string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "hooks", string(tool), string(ev)+".payload"))
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	rel, _ := filepath.Rel(cwd, file)
	r := strings.NewReplacer("{{cwd}}", cwd, "{{file}}", file, "{{relfile}}", rel)
	return []byte(strings.TrimSpace(r.Replace(strings.Join(lines, "\n"))))
}

func mustInput(tb testing.TB, tool Tool, ev Event, cwd, file string) *Input {
	tb.Helper()
	in, err := ParseInput(tool, ev, payload(tb, tool, ev, cwd, file))
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// Every recorded payload parses; without --tool the tool is recognised
// from the payload itself.
func TestFixturesParse(t *testing.T) {
	for _, tool := range HookTools {
		for _, ev := range Events {
			data := payload(t, tool, ev, "/proj", "/proj/src/a.go")
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatalf("%s/%s: not JSON: %v", tool, ev, err)
			}
			in, err := ParseInput("", ev, data)
			if err != nil {
				t.Fatal(err)
			}
			if in.Tool != tool {
				t.Errorf("%s/%s: detected tool %s", tool, ev, in.Tool)
			}
			if in.SessionID == "" || in.Cwd != "/proj" {
				t.Errorf("%s/%s: session %q cwd %q", tool, ev, in.SessionID, in.Cwd)
			}
			if got, _ := ParseEvent(in.HookEventName); got != ev {
				t.Errorf("%s/%s: hook_event_name %q is event %q", tool, ev, in.HookEventName, got)
			}
		}
	}
}

// The answers, byte for byte, in each tool's documented format.
func TestRender(t *testing.T) {
	tests := []struct {
		tool Tool
		ev   Event
		r    Response
		want string
	}{
		{Claude, SessionStart, Response{Context: "hi", Env: map[string]string{"TAVERN_AGENT": "a"}},
			`{"hookSpecificOutput":{"additionalContext":"hi","hookEventName":"SessionStart"}}`},
		{Codex, SessionStart, Response{Context: "hi", Env: map[string]string{"TAVERN_AGENT": "a"}},
			`{"hookSpecificOutput":{"additionalContext":"hi","env":{"TAVERN_AGENT":"a"},"hookEventName":"SessionStart"}}`},
		{Gemini, SessionStart, Response{Context: "hi"},
			`{"hookSpecificOutput":{"additionalContext":"hi","hookEventName":"SessionStart"}}`},
		{Claude, PreToolUse, Response{Deny: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		{Codex, PreToolUse, Response{Deny: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		{Gemini, PreToolUse, Response{Deny: "no"}, `{"decision":"deny","reason":"no"}`},
		{Claude, UserPromptSubmit, Response{Context: "m"}, `{"hookSpecificOutput":{"additionalContext":"m","hookEventName":"UserPromptSubmit"}}`},
		{Gemini, UserPromptSubmit, Response{Context: "m"}, `{"hookSpecificOutput":{"additionalContext":"m","hookEventName":"BeforeAgent"}}`},
		{Codex, PostToolUse, Response{Context: "m"}, `{"hookSpecificOutput":{"additionalContext":"m","hookEventName":"PostToolUse"}}`},
		{Gemini, PostToolUse, Response{Context: "m"}, `{"hookSpecificOutput":{"additionalContext":"m","hookEventName":"AfterTool"}}`},
		{Claude, Stop, Response{Block: "wait"}, `{"decision":"block","reason":"wait"}`},
		{Codex, Stop, Response{Block: "wait"}, `{"decision":"block","reason":"wait"}`},
		{Gemini, Stop, Response{Block: "wait"}, `{"decision":"deny","reason":"wait"}`},
		{Claude, SessionEnd, Response{Context: "x"}, ``},
		{Claude, PreToolUse, Response{Message: "fix it"}, `{"systemMessage":"fix it"}`},
		{Codex, PreToolUse, Response{Deny: "no", Message: "fix it"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"},"systemMessage":"fix it"}`},
		{Gemini, PreToolUse, Response{Message: "fix it"}, `{"systemMessage":"fix it"}`},
		{Claude, SessionStart, Response{Context: "hi", Message: "typo"},
			`{"hookSpecificOutput":{"additionalContext":"hi","hookEventName":"SessionStart"},"systemMessage":"typo"}`},
		{Claude, SessionEnd, Response{Message: "x"}, ``},
		{Claude, PreToolUse, Response{}, ``},
	}
	for _, tt := range tests {
		out, err := tt.r.Render(tt.tool, tt.ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s %s: got %s, want %s", tt.tool, tt.ev, got, tt.want)
		}
	}
	if out, _ := (*Response)(nil).Render(Claude, Stop); out != nil {
		t.Errorf("nil response rendered %q", out)
	}
}

func TestSessionAgent(t *testing.T) {
	if got := SessionAgent(Claude, "0F1E2D3C-4b5a-4697"); got != "claude-0f1e2d3c" {
		t.Errorf("got %q", got)
	}
	got := SessionAgent(Gemini, "x!")
	if err := schema.ValidAgentName(got); err != nil || !strings.HasPrefix(got, "gemini-") || len(got) != len("gemini-")+8 {
		t.Errorf("short id: got %q (%v)", got, err)
	}
}

func reserve(tb testing.TB, e *Env, agent string, globs ...string) {
	tb.Helper()
	sp, err := e.Space()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := sp.Reserve(agent, globs, tuples.ReserveOptions{Reason: "parser rewrite"}); err != nil {
		tb.Fatal(err)
	}
}

// The reservation gate, for each tool's file-editing tool.
func TestCheckWrite(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	reserve(t, e, "bob", "src/parser/**")
	file := filepath.Join(proj, "src", "parser", "lexer.go")
	for _, tool := range HookTools {
		in := mustInput(t, tool, PreToolUse, proj, file)
		agent := SessionAgent(tool, in.SessionID)
		if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: agent}); err != nil { // session-start registered it
			t.Fatal(err)
		}
		r, err := CheckWrite(e, in, agent)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || !strings.Contains(r.Deny, "src/parser/lexer.go is reserved by bob") || !strings.Contains(r.Deny, "tavern send @bob") {
			t.Errorf("%s: got %+v, want a deny naming bob and the way out", tool, r)
		}
		// The holder itself may edit.
		if r, _ := CheckWrite(e, in, "bob"); r != nil {
			t.Errorf("%s: bob denied his own path: %+v", tool, r)
		}
		// Another path is free.
		in = mustInput(t, tool, PreToolUse, proj, filepath.Join(proj, "src", "main.go"))
		if r, _ := CheckWrite(e, in, agent); r != nil {
			t.Errorf("%s: unreserved path denied: %+v", tool, r)
		}
		// Outside the project is not Tavern's business.
		in = mustInput(t, tool, PreToolUse, proj, "/elsewhere/src/parser/lexer.go")
		if r, _ := CheckWrite(e, in, agent); r != nil {
			t.Errorf("%s: path outside the project denied: %+v", tool, r)
		}
	}
}

func TestDeliverOnce(t *testing.T) {
	e := newEnv(t)
	s := e.Store
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	messages.SendMessage(s, "@me", "bob", "the parser is yours")
	messages.SendMessage(s, "general", "bob", "standup at 10")
	messages.SendMessage(s, "general", "me", "my own words")
	q, err := e.Manager.Ask("me", "bob", 0, "Which lexer?")
	if err != nil {
		t.Fatal(err)
	}
	toMe, err := e.Manager.Ask("bob", "me", 0, "Can you review?")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Manager.Answer(q.ID, "use the hand-written one", "bob"); err != nil {
		t.Fatal(err)
	}
	text, err := Deliver(e, "me")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the parser is yours", "standup at 10", "use the hand-written one", "Can you review?", "tavern answer " + toMe.ID} {
		if !strings.Contains(text, want) {
			t.Errorf("delivery lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "my own words") {
		t.Errorf("own message delivered:\n%s", text)
	}
	if again, err := Deliver(e, "me"); again != "" || err != nil {
		t.Errorf("second delivery: %q %v, want nothing", again, err)
	}
	// New things arrive once, even with concurrent hooks.
	messages.SendMessage(s, "@me", "bob", "one more")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, err := Deliver(e, "me")
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, text)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := strings.Count(strings.Join(got, ""), "one more"); n != 1 {
		t.Errorf("concurrent deliveries gave the message %d times: %q", n, got)
	}
}

func mustQueueItem(tb testing.TB, e *Env, queue, title string) *queues.Item {
	tb.Helper()
	b, err := e.Broker()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := b.Queue(queue); err != nil {
		if _, err := b.CreateQueue(queue, queues.QueueOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	it, err := b.Add(queue, queues.AddOptions{Title: title})
	if err != nil {
		tb.Fatal(err)
	}
	return it
}

func TestStopGate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	m := e.Manager
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(filepath.Dir(e.Store.Root()), "done.flag")
	if _, err := m.AddCommitment("me", "the flag exists", "test -f done.flag", time.Minute); err != nil {
		t.Fatal(err)
	}
	// No item held: commitments alone do not gate.
	if reason, err := StopGate(ctx, e, "me"); reason != "" || err != nil {
		t.Fatalf("no item: %q %v", reason, err)
	}
	mustQueueItem(t, e, "build", "make the flag")
	b, _ := e.Broker()
	c, err := Take(ctx, b, "me", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	reason, err := StopGate(ctx, e, "me")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reason, "the flag exists") || !strings.Contains(reason, "tavern item release "+c.ID) {
		t.Errorf("block reason: %q", reason)
	}
	// One failing commitment is said in the singular (it read "1 of your
	// commitments do not pass yet").
	if !strings.Contains(reason, "and 1 of your commitments does not pass yet:") {
		t.Errorf("block reason for one failing commitment: %q", reason)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if reason, err := StopGate(ctx, e, "me"); reason != "" || err != nil {
		t.Errorf("commitments pass: got %q %v, want the stop let through", reason, err)
	}
	cs, _ := m.Commitments("me")
	if cs[0].Status != agents.StatusPassed || cs[0].VerifiedBy != "hook:stop" {
		t.Errorf("commitment after the passing stop: %+v", cs[0])
	}
}

// The stop gate does not block twice in a row: when the tool says it is
// already going on because of a stop hook (stop_hook_active, in all three
// tools' Stop payloads), a failing check lets the stop through, tells the
// user (systemMessage) and journals it. Blocking again could keep the
// session from ever stopping.
func TestStopGateNotTwiceInARow(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Manager.AddCommitment("me", "the flag exists", "test -f done.flag", time.Minute); err != nil {
		t.Fatal(err)
	}
	mustQueueItem(t, e, "build", "make the flag")
	b, _ := e.Broker()
	if _, err := Take(ctx, b, "me", nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, tool := range HookTools {
		stop := func(active bool) *Response {
			t.Helper()
			data := fmt.Sprintf(`{"session_id":"s1234567890","stop_hook_active":%v}`, active)
			in, err := ParseInput(tool, Stop, []byte(data))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Handle(ctx, e, in, HookOptions{Agent: "me"})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := stop(false); r == nil || !strings.Contains(r.Block, "the flag exists") {
			t.Fatalf("%s: first stop: got %+v, want it blocked", tool, r)
		}
		r := stop(true)
		if r == nil || r.Block != "" || !strings.Contains(r.Message, "the flag exists") || !strings.Contains(r.Message, "does not block twice") {
			t.Fatalf("%s: stop with stop_hook_active: got %+v, want it let through with a message", tool, r)
		}
		out, err := r.Render(tool, Stop)
		if err != nil || strings.Contains(string(out), `"decision"`) || !strings.Contains(string(out), `"systemMessage"`) {
			t.Errorf("%s: rendered: %s %v", tool, out, err)
		}
	}
	evs, _, err := journal.Tail(e.Store.Root(), 10, journal.Filter{Types: []string{"session.stop_unverified"}, Agent: "me"})
	if err != nil || len(evs) != len(HookTools) {
		t.Errorf("journaled stops let through: %d %v, want %d", len(evs), err, len(HookTools))
	}
}

// A session owns its agent while its keeper runs: liveness claims, the
// spawn counted once, and session end releasing everything.
func TestSessionStartEnd(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var keepers sync.WaitGroup
	defer keepers.Wait()
	opt := SessionOptions{StartKeeper: func(agent, session string, pid int) (func(bool) error, bool, error) {
		// A second Store: the keeper is another process in real life.
		s2, err := docstore.Open(e.Store.Root())
		if err != nil {
			return nil, false, err
		}
		e2 := &Env{Store: s2, Manager: &agents.Manager{Store: s2, Journal: e.Manager.Journal, Host: e.Manager.Host}}
		l, ok, err := s2.TryLock(schema.AgentLockKey(agent))
		if err != nil || !ok {
			return nil, false, err
		}
		return func(start bool) error {
			if !start {
				return l.Unlock()
			}
			keepers.Add(1)
			go func() {
				defer keepers.Done()
				defer l.Unlock()
				if err := KeepSession(ctx, e2, agent, session, pid); err != nil {
					t.Error(err)
				}
			}()
			return nil
		}, true, nil
	}}
	in := mustInput(t, Claude, SessionStart, proj, "")
	agent := SessionAgent(Claude, in.SessionID)
	r, err := StartSession(e, in, agent, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Context, "you are "+agent) || r.Env["TAVERN_AGENT"] != agent {
		t.Errorf("prime: %+v", r)
	}
	a, _ := e.Manager.GetAgent(agent)
	if a.State != agents.Working || a.Spawns != 1 || a.SessionID != in.SessionID {
		t.Errorf("agent after start: %+v", a)
	}
	if held, _ := agents.LockHeld(e.Store, schema.AgentLockKey(agent)); !held {
		t.Error("liveness lock not held during the session")
	}
	// A compaction re-primes without counting.
	in.Source = "compact"
	if _, err := StartSession(e, in, agent, opt); err != nil {
		t.Fatal(err)
	}
	if a, _ := e.Manager.GetAgent(agent); a.Spawns != 1 {
		t.Errorf("spawns after compact: %d", a.Spawns)
	}
	// wake inside the session counts nothing either.
	if b, err := agents.Wake(e.Store, agent, time.Now()); err != nil || b.Spawns != 1 {
		t.Errorf("wake in the session: %+v %v", b, err)
	}

	mustQueueItem(t, e, "build", "an item")
	b, _ := e.Broker()
	c, err := Take(ctx, b, agent, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Item.ClaimKind != "liveness" {
		t.Errorf("claim kind %q, want liveness (the keeper holds the lock)", c.Item.ClaimKind)
	}
	reserve(t, e, agent, "docs/**")

	if err := EndSession(e, agent, in.SessionID, "prompt_input_exit"); err != nil {
		t.Fatal(err)
	}
	it, _ := b.Get(c.ID)
	if it.State != queues.Pending {
		t.Errorf("item after session end: %s", it.State)
	}
	sp, _ := e.Space()
	if rs, _ := sp.Reservations(); len(rs) != 0 {
		t.Errorf("reservations after session end: %v", rs)
	}
	a, _ = e.Manager.GetAgent(agent)
	if a.State != agents.Idle || a.SessionID != "" || a.Host != "" {
		t.Errorf("agent after end: %+v", a)
	}
	mems, _ := recall.ListMemory(e.Store, agent, recall.MemoryFilter{Topic: agents.SummaryTopic})
	if len(mems) != 1 || !strings.Contains(mems[0].Text, "Released unfinished: build/"+c.ID) {
		t.Errorf("sleep summary: %+v", mems)
	}
	keepers.Wait() // the keeper saw the session end and let go
	if held, _ := agents.LockHeld(e.Store, schema.AgentLockKey(agent)); held {
		t.Error("lock still held after the keeper ended")
	}
}

// A session-start naming (--as, $TAVERN_AGENT) an agent that does not
// exist but is near one that does is a typo: nothing is created, and the
// answer and the error say so. A name near nobody is registered; a name
// derived from the session id is never judged, however near another
// session's.
func TestSessionStartNearName(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	for _, name := range []string{"alice", "claude-0f1e2d3c"} {
		if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	in := mustInput(t, Claude, SessionStart, proj, "")
	in.SessionID = "0f1e2d3d-4b5a-4697-8a0b-000000000000"
	ctx := context.Background()

	r, err := Handle(ctx, e, in, HookOptions{Agent: "alcie"})
	var ue *schema.UnknownError
	if !errors.As(err, &ue) || ue.Name != "alcie" || len(ue.Near) == 0 || ue.Near[0] != "alice" {
		t.Fatalf("got error %v, want unknown agent alcie near alice", err)
	}
	if r == nil || !strings.Contains(r.Context, `did you mean "alice"?`) || !strings.Contains(r.Context, "tavern agent new alcie") ||
		!strings.Contains(r.Message, `no agent "alcie"`) || r.Env != nil {
		t.Errorf("answer: %+v", r)
	}
	if _, err := e.Store.Stat(agents.AgentPath("alcie")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alcie: got %v, want no file", err)
	}

	for _, opt := range []HookOptions{{Agent: "zed"}, {}} {
		r, err := Handle(ctx, e, in, opt)
		want := HookAgent(in, opt)
		if err != nil || r == nil || !strings.Contains(r.Context, "you are "+want) {
			t.Errorf("%q: got %+v, %v", want, r, err)
		}
		if _, err := e.Manager.GetAgent(want); err != nil {
			t.Errorf("%q not created: %v", want, err)
		}
	}
}

// The keeper ends the session itself when the tool dies without a
// session-end hook.
func TestKeeperEndsSessionWhenToolDies(t *testing.T) {
	e := newEnv(t)
	proj := filepath.Dir(e.Store.Root())
	tool := startSleeper(t)
	done := make(chan error, 1)
	opt := SessionOptions{ToolPID: tool.Process.Pid, StartKeeper: func(agent, session string, pid int) (func(bool) error, bool, error) {
		s2, _ := docstore.Open(e.Store.Root())
		e2 := &Env{Store: s2, Manager: &agents.Manager{Store: s2, Journal: e.Manager.Journal, Host: e.Manager.Host}}
		l, ok, err := s2.TryLock(schema.AgentLockKey(agent))
		if err != nil || !ok {
			return nil, false, err
		}
		return func(start bool) error {
			if !start {
				return l.Unlock()
			}
			go func() {
				defer l.Unlock()
				done <- KeepSession(context.Background(), e2, agent, session, pid)
			}()
			return nil
		}, true, nil
	}}
	in := mustInput(t, Gemini, SessionStart, proj, "")
	agent := SessionAgent(Gemini, in.SessionID)
	if _, err := StartSession(e, in, agent, opt); err != nil {
		t.Fatal(err)
	}
	mustQueueItem(t, e, "build", "an item")
	b, _ := e.Broker()
	c, err := Take(context.Background(), b, agent, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	tool.Process.Kill()
	tool.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("keeper did not notice the tool's death")
	}
	if it, _ := b.Get(c.ID); it.State != queues.Pending {
		t.Errorf("item after the tool died: %s", it.State)
	}
	if a, _ := e.Manager.GetAgent(agent); a.State != agents.Idle || a.SessionID != "" {
		t.Errorf("agent after the tool died: %+v", a)
	}
}

// startSleeper starts a stand-in tool process the test can kill.
func startSleeper(tb testing.TB) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestHandlePanicFailsOpen: a handler that panics (here on an Env that
// was never opened) returns an error the hook fails open on, instead of
// crashing the process with exit 2, which the tools read as "block".
func TestHandlePanicFailsOpen(t *testing.T) {
	for _, ev := range []Event{PreToolUse, SessionStart, Stop} {
		resp, err := Handle(context.Background(), nil, &Input{Event: ev, Tool: Claude}, HookOptions{Agent: "alice"})
		if resp != nil || !errors.Is(err, ErrHandlerPanic) {
			t.Errorf("%s: got %v, %v; want nil and an error wrapping ErrHandlerPanic", ev, resp, err)
		}
	}
}
