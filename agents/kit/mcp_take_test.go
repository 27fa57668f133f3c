package kit

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
)

// MCP's next with take obeys the take rules of the CLI: an item whose
// work is done (an earlier claim ran it and waited at its gate) is
// claimed with a note that it is not to be redone and what to do
// instead; an agent that failed claims nothing (agents.CheckTaker), a
// tool error that says how to revive it.
func TestMCPNextTakeRules(t *testing.T) {
	e := newEnv(t)
	m := e.Manager
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	b, err := e.Broker()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateQueue("build", queues.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := b.Add("build", queues.AddOptions{Title: "reviewed", Gate: queues.GateHuman})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := b.Take(ctx, queues.TakeOptions{Queues: []string{"build"}, As: "earlier"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MarkWorkDone("built"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Release(); err != nil {
		t.Fatal(err)
	}

	cs := connectMCP(t, e)
	next := func() (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "next", Arguments: map[string]any{"take": true}})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String(), res.IsError
	}
	got, isErr := next()
	if isErr || !strings.Contains(got, "Its work is done already") || !strings.Contains(got, "tavern approve "+it.ID) {
		t.Fatalf("next take of a work-done item: %q (isError %v), want it claimed with the work-done note", got, isErr)
	}

	if _, err := b.Add("build", queues.AddOptions{Title: "fresh"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Transition("me", agents.Failed, agents.TransitionOptions{By: "test", Reason: "crashed"}); err != nil {
		t.Fatal(err)
	}
	got, isErr = next()
	if !isErr || !strings.Contains(got, "me is failed") || !strings.Contains(got, "tavern agent state me idle") {
		t.Fatalf("next take for a failed agent: %q (isError %v), want a tool error saying how to revive it", got, isErr)
	}
	if st, err := b.Stats("build"); err != nil || st.Pending != 1 {
		t.Fatalf("pending after the refused take: %+v %v, want the fresh item", st, err)
	}
}
