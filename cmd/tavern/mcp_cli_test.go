package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tavernhq/tavern/agents/kit"
)

// The MCP server through the built binary, with the SDK's client on its
// stdin/stdout: initialize, list the tools (within the budget), call each
// one, and check the store afterwards with the CLI.
func TestMCPServerBuiltBinary(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "port the lexer")
	p.ok("knowledge", "add", "--domain", "decision", "--title", "Database", "We use PostgreSQL 17 with JSONB")
	p.ok("agent", "new", "bob")
	p.ok("agent", "new", "me")
	p.ok("send", "@me", "welcome aboard", "--as", "bob")

	ctx, cs, call := startMCP(t, p, "me")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "Call prime first") {
		t.Errorf("instructions: %q", ins)
	}
	size := 0
	for _, tool := range tools.Tools {
		data, _ := json.Marshal(tool)
		size += len(data)
	}
	if len(tools.Tools) > kit.MCPMaxTools || size/4 > kit.MCPSchemaTokens {
		t.Errorf("%d tools, %d tokens of schema: over the budget (%d tools, %d tokens)", len(tools.Tools), size/4, kit.MCPMaxTools, kit.MCPSchemaTokens)
	}
	called := map[string]bool{}
	do := func(name string, args map[string]any) string {
		called[name] = true
		return call(name, args)
	}

	if out := do("prime", nil); !strings.Contains(out, "you are me") || !strings.Contains(out, "port the lexer") {
		t.Errorf("prime: %s", out)
	}
	if out := do("next", nil); !strings.Contains(out, "port the lexer") {
		t.Errorf("next: %s", out)
	}
	out := do("next", map[string]any{"take": true})
	if !strings.Contains(out, "claimed build/") || !strings.Contains(out, "attempt 1") {
		t.Fatalf("next take: %s", out)
	}
	id := strings.Fields(strings.TrimPrefix(out, "claimed build/"))[0]
	if out := do("inbox", nil); !strings.Contains(out, "welcome aboard") {
		t.Errorf("inbox: %s", out)
	}
	do("send", map[string]any{"channel": "@bob", "text": "on it"})
	do("ask", map[string]any{"question": "Which lexer generator?", "to": "user"})
	do("reserve", map[string]any{"globs": []string{"src/lexer/**"}, "ttl": "30m"})
	if out := do("search", map[string]any{"query": "postgres databases"}); !strings.Contains(out, "PostgreSQL 17") {
		t.Errorf("search: %s", out)
	}
	if out := do("report", map[string]any{"id": id, "attempt": 1, "outcome": "done", "text": "lexer ported"}); !strings.Contains(out, "done") {
		t.Errorf("report: %s", out)
	}
	for _, tool := range tools.Tools {
		if !called[tool.Name] {
			t.Errorf("tool %s not called by the test", tool.Name)
		}
	}

	// The store afterwards, through the CLI.
	if out := p.ok("show", "items/"+id, "--json"); !strings.Contains(out, `"lexer ported"`) || !strings.Contains(out, "/done/") {
		t.Errorf("item after report:\n%s", out)
	}
	if out := p.ok("recv", "@bob", "--as", "bob"); !strings.Contains(out, "on it") {
		t.Errorf("bob's messages: %s", out)
	}
	if out := p.ok("questions"); !strings.Contains(out, "Which lexer generator?") {
		t.Errorf("questions to the user: %s", out)
	}
	if out := p.ok("reservations"); !strings.Contains(out, "src/lexer/**") || !strings.Contains(out, "me") {
		t.Errorf("reservations: %s", out)
	}
	// A tool error is a tool error, not a broken session.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "report", Arguments: map[string]any{"id": id, "attempt": 1, "outcome": "done"}})
	if err != nil || !res.IsError {
		t.Errorf("second report of a done item: %+v %v, want a tool error", res, err)
	}
	// send obeys the CLI's rule: a channel that names nothing is a tool
	// error and is not created (send --create is the CLI's way to make one).
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"channel": "nochan", "text": "hi"}})
	if err != nil || !res.IsError {
		t.Errorf("send to an unknown channel: %+v %v, want a tool error", res, err)
	}
	for _, rel := range []string{"channels/nochan.md", "messages/nochan"} {
		if _, err := os.Stat(filepath.Join(p.dir, ".tavern", rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after a refused send: %v, want it absent", rel, err)
		}
	}
}

// TestMCPPipedRequests: requests piped into `tavern mcp` (the input ends
// after the last one, as with `printf … | tavern mcp`) are all answered,
// and what they did is on disk. The SDK's stdio transport ended the
// session at the end of the input and answered at most the first request.
func TestMCPPipedRequests(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "me")
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"prime","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send","arguments":{"channel":"@me","text":"piped %d"}}}`,
	}, "\n") + "\n"
	for run := range 5 {
		cmd := p.tavern("mcp")
		cmd.Env = append(cmd.Env, "TAVERN_AGENT=me")
		cmd.Stdin = strings.NewReader(fmt.Sprintf(requests, run))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: tavern mcp: %v", run, err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Error  json.RawMessage `json:"error"`
				Result struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("run %d: not JSON-RPC: %q", run, line)
			}
			if m.Error != nil || m.Result.IsError {
				t.Errorf("run %d: error answer: %s", run, line)
			}
			got = append(got, string(m.ID))
		}
		slices.Sort(got) // answered as they finish
		if want := []string{"1", "2", "3", "4"}; !slices.Equal(got, want) {
			t.Fatalf("run %d: answers to ids %v, want %v", run, got, want)
		}
	}
	inbox := p.ok("recv", "@me", "--as", "me", "--all")
	for run := range 5 {
		if !strings.Contains(inbox, fmt.Sprintf("piped %d", run)) {
			t.Errorf("message of run %d not on disk; recv:\n%s", run, inbox)
		}
	}
}

// startMCP runs the built `tavern mcp` in p as agent and connects a real
// MCP client to it. call runs a tool and returns its text, failing the
// test on a tool error.
func startMCP(t *testing.T, p *project, agent string) (context.Context, *mcp.ClientSession, func(string, map[string]any) string) {
	t.Helper()
	return startMCPEnv(t, p, agent)
}

// startMCPEnv is startMCP with env added to the server's environment.
func startMCPEnv(t *testing.T, p *project, agent string, env ...string) (context.Context, *mcp.ClientSession, func(string, map[string]any) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.Command(tavernBin(t), "mcp")
	cmd.Dir = p.dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "TAVERN_AGENT" && k != "TAVERN_INSTANCE" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(append(cmd.Env, "TAVERN_AGENT="+agent), env...)
	client := mcp.NewClient(&mcp.Implementation{Name: "tavern-test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s: tool error: %s", name, b.String())
		}
		return b.String()
	}
	return ctx, cs, call
}

// TestMCPNextSkipped: the next tool names what it passed over that
// waiting will not fix (an item file that does not parse, an item whose
// dependency is dead), as the CLI's next warns; it used to answer an
// empty "next" that read as no work.
func TestMCPNextSkipped(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "me")
	p.ok("queue", "create", "build", "--max-attempts", "1")
	a := strings.TrimSpace(p.ok("queue", "add", "build", "--title", "a"))
	p.ok("queue", "add", "build", "--title", "b", "--depends-on", a)
	p.ok("queue", "take", "build")
	p.ok("item", "fail", a, "--reason", "no")
	if err := os.WriteFile(filepath.Join(p.dir, ".tavern/queues/build/pending/p00-0-handmade.md"), []byte("---\ntitle: ok\npriority: [1\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, call := startMCP(t, p, "me")
	var got struct {
		Next    []any    `json:"next"`
		Skipped []string `json:"skipped"`
	}
	out := call("next", nil)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("next: %v\n%s", err, out)
	}
	joined := strings.Join(got.Skipped, "\n")
	if len(got.Next) != 0 || !strings.Contains(joined, "queues/build/pending/p00-0-handmade.md:3:1") || !strings.Contains(joined, "dependency "+a+" is dead") {
		t.Errorf("next: got %s, want no item and both skipped (the broken file at 3:1, the item blocked by %s)", out, a)
	}
}

// TestMCPReportTakesNextsName: next answers "claimed QUEUE/ID ...,
// attempt N", and report refused that name ("invalid name ... contains a
// path separator") and a unique id prefix, which `tavern item done`
// takes; its attempt, which the tool's code treats as optional (the
// agent's own claim), was required by the schema, so a client could not
// leave it out. report takes the names the item commands take now, and
// no attempt for the agent's own claim.
func TestMCPReportTakesNextsName(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "one")
	p.ok("queue", "add", "build", "--title", "two")
	p.ok("agent", "new", "me")
	_, _, call := startMCP(t, p, "me")
	for _, title := range []string{"one", "two"} {
		out := call("next", map[string]any{"take": true})
		name, _, ok := strings.Cut(strings.TrimPrefix(out, "claimed "), " ")
		if !strings.HasPrefix(out, "claimed build/") || !ok {
			t.Fatalf("next take: %s", out)
		}
		ref := name // build/ID, as next printed it
		if title == "two" {
			ref = strings.TrimPrefix(name, "build/")[:26] // a unique prefix of the id
		}
		if got := call("report", map[string]any{"id": ref, "outcome": "done", "text": "ok " + title}); !strings.Contains(got, "done") {
			t.Errorf("report %s: %s", ref, got)
		}
		if out := p.ok("show", "items/"+strings.TrimPrefix(name, "build/"), "--json"); !strings.Contains(out, "/done/") {
			t.Errorf("item %s after report:\n%s", name, out)
		}
	}
}

// TestMCPReleaseAll: reserve's release says "all if none", but its globs
// were required by the schema, so {"release": true} was refused by the
// SDK's validation and the agent's reservations stayed. Without globs it
// releases them all; without globs and release it reserves nothing.
func TestMCPReleaseAll(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "me")
	ctx, cs, call := startMCP(t, p, "me")
	call("reserve", map[string]any{"globs": []string{"src/a/**", "src/b/**"}})
	if out := call("reserve", map[string]any{"release": true}); !strings.Contains(out, "released 2") {
		t.Errorf("release all: %s", out)
	}
	if out := p.ok("reservations", "--json"); strings.Contains(out, "src/") {
		t.Errorf("reservations after release all:\n%s", out)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reserve", Arguments: map[string]any{}})
	if err != nil || !res.IsError {
		t.Errorf("reserve of nothing: %+v %v, want a tool error", res, err)
	}
}

// TestMCPNextEngineUnreachable: with coordination git and no sync remote
// the next tool answered this machine's items without a word, where the
// CLI's next and queue ls warn that items held or finished on other
// machines are not known. It answers the warning too.
func TestMCPNextEngineUnreachable(t *testing.T) {
	t.Setenv("TAVERN_SYNC_REMOTE", "")
	p := newProject(t)
	p.ok("agent", "new", "me")
	p.ok("queue", "create", "build")
	p.ok("queue", "add", "build", "--title", "a")
	p.ok("set", "tavern.md", "coordination=git")
	_, _, call := startMCP(t, p, "me")
	var got struct {
		Next    []any  `json:"next"`
		Warning string `json:"warning"`
	}
	out := call("next", nil)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("next: %v\n%s", err, out)
	}
	if len(got.Next) != 1 || !strings.Contains(got.Warning, "no sync remote") {
		t.Errorf("next: got %s, want the item and a warning naming the missing remote", out)
	}
}

// TestMCPReserveDeadInstanceFenced: the MCP server's reserve obeys the
// instance fence of `tavern reserve`: a server running as a dead spawn
// instance ($TAVERN_INSTANCE of a wrapper that has exited: what an
// orphan of a killed wrapper's tool would run) reserves nothing and
// answers "fenced"; it used to take a 1h reservation in the agent's name.
// A server with no instance (a person's, a hooked session's) reserves.
func TestMCPReserveDeadInstanceFenced(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "me")
	p.ok("spawn", "--name", "me", "--", "true")
	var doc struct{ Fields struct{ Instance string } }
	p.json(&doc, "show", "agents/me")
	if doc.Fields.Instance == "" {
		t.Fatal("spawn recorded no instance")
	}
	ctx, cs, _ := startMCPEnv(t, p, "me", "TAVERN_INSTANCE="+doc.Fields.Instance)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "reserve", Arguments: map[string]any{"globs": []string{"src/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !res.IsError || !strings.Contains(text.String(), "fenced") || !strings.Contains(text.String(), "instance "+doc.Fields.Instance+" of me is not alive") {
		t.Errorf("reserve as the dead instance: error %v: %s", res.IsError, text.String())
	}
	if out := p.ok("reservations", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("reservations after a fenced reserve:\n%s", out)
	}
	_, _, call := startMCP(t, p, "me")
	call("reserve", map[string]any{"globs": []string{"src/**"}})
}
