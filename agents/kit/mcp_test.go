package kit

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

// The tool surface stays small: at most MCPMaxTools tools whose names,
// descriptions and input schemas total at most MCPSchemaTokens tokens
// (characters / 4) — what sits in the model's context all session.
func TestMCPSchemaBudget(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cs := connectMCP(t, e)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Tools); n > MCPMaxTools || n < 6 {
		t.Errorf("%d tools, want 6..%d", n, MCPMaxTools)
	}
	total := 0
	for _, tool := range res.Tools {
		data, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		total += len(data)
	}
	if tokens := total / 4; tokens > MCPSchemaTokens {
		t.Errorf("tool schemas are %d tokens (chars/4), budget %d", tokens, MCPSchemaTokens)
	} else {
		t.Logf("%d tools, %d tokens of schema", len(res.Tools), tokens)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "Call prime first") {
		t.Errorf("instructions: %q", ins)
	}
}

// Without --as, the server acts as the agent of the hooked session whose
// tool started it: the agent whose pid is the server's parent.
func TestMCPIdentityFromSession(t *testing.T) {
	e := newEnv(t)
	m := e.Manager
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "claude-12345678"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EditAgent("claude-12345678", func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "session_id", Value: "s1"}, {Key: "host", Value: m.Host}, {Key: "pid", Value: os.Getppid()}})
	}); err != nil {
		t.Fatal(err)
	}
	ms := &mcpServer{e: e}
	if got, err := ms.whoami(); err != nil || got != "claude-12345678" {
		t.Errorf("whoami: %q %v", got, err)
	}
	if _, err := (&mcpServer{e: newEnv(t)}).whoami(); !errors.Is(err, ErrNoAgent) {
		t.Errorf("no session: got %v, want ErrNoAgent", err)
	}
}

// The session's agent is looked up again when the session that owned it
// is over: after /clear, Claude Code starts a new session (a new id, so a
// new agent, claude-<new id>) in the same process, and its MCP server went
// on acting as the old session's agent, whose items SessionEnd had given
// back, while the hooks and the prime spoke for the new one.
func TestMCPIdentityFollowsSession(t *testing.T) {
	e := newEnv(t)
	m := e.Manager
	own := func(name, session string) {
		t.Helper()
		if _, err := m.CreateAgent(agents.AgentSpec{Name: name}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.EditAgent(name, func(d *docstore.Doc) error {
			return d.SetMany([]docstore.Field{{Key: "session_id", Value: session}, {Key: "host", Value: m.Host}, {Key: "pid", Value: os.Getppid()}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	own("claude-11111111", "s1")
	ms := &mcpServer{e: e}
	if got, err := ms.whoami(); err != nil || got != "claude-11111111" {
		t.Fatalf("whoami: %q %v", got, err)
	}
	// SessionEnd (reason clear) clears the old agent's session; the new
	// session registers its own agent with the same tool pid.
	if _, err := m.EditAgent("claude-11111111", func(d *docstore.Doc) error {
		for _, k := range []string{"session_id", "pid", "host"} {
			if err := d.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	own("claude-22222222", "s2")
	if got, err := ms.whoami(); err != nil || got != "claude-22222222" {
		t.Errorf("whoami after /clear: %q %v, want claude-22222222", got, err)
	}
}

// The send tool obeys the CLI's rule (messages.Send): a channel that
// names nothing is a tool error and nothing is created; a direct message
// to an agent and a channel made on purpose go through.
func TestMCPSendUnknownChannel(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := connectMCP(t, e)
	send := func(channel string) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"channel": channel, "text": "hi"}})
		if err != nil {
			t.Fatalf("send %s: %v", channel, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	if got, isErr := send("nochan"); !isErr || !strings.Contains(got, `unknown channel "nochan"`) {
		t.Errorf("send nochan: %q (isError %v), want a tool error naming the unknown channel", got, isErr)
	}
	for _, rel := range []string{"channels/nochan.md", "messages/nochan"} {
		if _, err := os.Stat(filepath.Join(e.Store.Root(), rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after a refused send: %v, want it absent", rel, err)
		}
	}
	if got, isErr := send("@me"); isErr {
		t.Errorf("send @me: %s", got)
	}
	if _, err := messages.CreateChannel(e.Store, "general", ""); err != nil {
		t.Fatal(err)
	}
	if got, isErr := send("general"); isErr || !strings.HasPrefix(got, "sent ") {
		t.Errorf("send general: %q (isError %v)", got, isErr)
	}
}

// connectMCP serves e to agent "me" over in-memory transports and returns
// the connected client session (closed with the test).
func connectMCP(t *testing.T, e *Env) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := NewMCPServer(e, MCPOptions{Agent: "me"}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// report acts as the server's agent like every other tool: with none (no
// --as, no $TAVERN_AGENT, no hooked session) it refuses with
// ErrNoAgent and reports nothing — it completed the item as nobody, the
// person's way (fenced by the attempt only). With the session's agent it
// reports as that agent, so its own claim needs no attempt.
func TestMCPReportNeedsIdentity(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	m := e.Manager
	const agent = "claude-12345678"
	if _, err := m.CreateAgent(agents.AgentSpec{Name: agent}); err != nil {
		t.Fatal(err)
	}
	mustQueueItem(t, e, "build", "compile")
	b, _ := e.Broker()
	c, err := Take(ctx, b, agent, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	nobody := &mcpServer{e: e}
	if _, _, err := nobody.report(ctx, nil, reportIn{ID: c.ID, Attempt: c.Attempt, Outcome: "done"}); !errors.Is(err, ErrNoAgent) {
		t.Errorf("report with no identity: got %v, want ErrNoAgent", err)
	}
	if it, err := b.Get(c.ID); err != nil || it.State != "claimed" {
		t.Fatalf("item after the refused report: %+v %v, want still claimed", it, err)
	}
	if _, err := m.EditAgent(agent, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "session_id", Value: "s1"}, {Key: "host", Value: m.Host}, {Key: "pid", Value: os.Getppid()}})
	}); err != nil {
		t.Fatal(err)
	}
	res, _, err := (&mcpServer{e: e}).report(ctx, nil, reportIn{ID: c.ID, Outcome: "done", Text: "ok"})
	if err != nil {
		t.Fatalf("report as the session's agent, no attempt: %v", err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; !strings.HasSuffix(got, " done") {
		t.Errorf("report: %q", got)
	}
}
