package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

// MCPSchemaTokens bounds the tools' total schema (names, descriptions,
// input schemas), counted as characters / 4: MCP tool schemas sit in the
// model's context for the whole session (peers' servers cost 5-50k
// tokens; this one must stay small). A test fails past it.
const MCPSchemaTokens = 2000

// MCPMaxTools bounds the number of tools.
const MCPMaxTools = 8

// MCPInstructions are the server instructions a client shows the model.
const MCPInstructions = "Tavern coordinates the agents of this project. Call prime first: it says who you are, " +
	"what you hold, what is waiting for you and what to do next. Reserve paths before editing shared files; " +
	"report items done or failed; you cannot stop while an item you hold has failing commitments."

// MCPOptions configure NewMCPServer.
type MCPOptions struct {
	// Agent is the identity (--as, $TAVERN_AGENT). "" finds the agent of
	// the hooked session whose tool started this server (the agent whose
	// pid is the server's parent); without one, the tools that act as an
	// agent say so.
	Agent string
	// Instance is the agent's spawn instance (--instance,
	// $TAVERN_INSTANCE), or "": reserve records it, and refuses it when
	// it is dead (replaced, or its spawn wrapper gone: tuples.ErrFenced),
	// as the CLI's reserve does.
	Instance string
	Version  string
}

type mcpServer struct {
	e     *Env
	opt   MCPOptions
	mu    sync.Mutex
	agent string
	known bool // agent names an existing agent
}

// NewMCPServer returns the MCP server of the store: eight tools — prime,
// next, report, send, inbox, ask, reserve, search — each a thin call into
// the same library functions the CLI uses.
func NewMCPServer(e *Env, opt MCPOptions) *mcp.Server {
	ms := &mcpServer{e: e, opt: opt, agent: opt.Agent}
	s := mcp.NewServer(&mcp.Implementation{Name: "tavern", Version: opt.Version}, &mcp.ServerOptions{
		Instructions: MCPInstructions,
		Capabilities: &mcp.ServerCapabilities{},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "prime", Description: "Who you are, your items, messages, questions, reservations, commitments. Call first."}, nearHinted(ms.prime))
	mcp.AddTool(s, &mcp.Tool{Name: "next", Description: "The next items nobody holds; take=true claims the first (returns id and attempt)."}, nearHinted(ms.next))
	mcp.AddTool(s, &mcp.Tool{Name: "report", Description: "Report a held item: done (with result), failed (with reason) or released."}, nearHinted(ms.report))
	mcp.AddTool(s, &mcp.Tool{Name: "send", Description: "Send a message to a channel; @name is a direct message."}, nearHinted(ms.send))
	mcp.AddTool(s, &mcp.Tool{Name: "inbox", Description: "Read your unread messages (and mark them read)."}, nearHinted(ms.inbox))
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Ask the user, your parent or an agent a question."}, nearHinted(ms.ask))
	mcp.AddTool(s, &mcp.Tool{Name: "reserve", Description: "Reserve path globs before editing them (others' edits are refused), or release yours."}, nearHinted(ms.reserve))
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search memory, knowledge, messages and notes."}, nearHinted(ms.search))
	return s
}

// hintError is a tool error with the advice the CLI prints after it
// (its hint): the model reads only the error's text.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e *hintError) Unwrap() error { return e.err }

// nearHinted gives a tool's errors the CLI's "did you mean": a name that
// names nothing (a channel, queue or agent) but is near one is answered
// with the near names, so the model can correct itself instead of
// guessing.
func nearHinted[In any](h mcp.ToolHandlerFor[In, any]) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := h(ctx, req, in)
		var he *hintError
		var ue *schema.UnknownError
		if err != nil && !errors.As(err, &he) && errors.As(err, &ue) && len(ue.Near) > 0 {
			err = &hintError{err: err, hint: "did you mean " + schema.NearList(ue.Near) + "?"}
		}
		return res, out, err
	}
}

// whoami resolves the acting agent once.
func (ms *mcpServer) whoami() (string, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.opt.Agent != "" {
		// A name given (--as, $TAVERN_AGENT) must name an agent, as the
		// CLI's --as must: a typo acts as nobody, instead of sending,
		// reserving and claiming under a name no agent has. Checked until
		// it holds (the agent may be created while the server runs).
		if !ms.known {
			if err := agents.AgentExists(ms.e.Store, ms.agent); err != nil {
				var ue *schema.UnknownError
				if errors.As(err, &ue) {
					hint := "create it with `tavern agent new " + ms.agent + "`"
					if len(ue.Near) > 0 {
						hint = "did you mean " + strings.Join(ue.Near, ", ") + "? or " + hint
					}
					return "", &hintError{err: err, hint: hint}
				}
				return "", err
			}
			ms.known = true
		}
		return ms.agent, nil
	}
	// The agent of the session whose tool started the server: looked up
	// again once that session is over (a /clear in Claude Code ends it
	// and starts another, with its own agent, in the same process).
	m := ms.e.Manager
	parent := os.Getppid()
	ours := func(a *agents.Agent) bool { return a.SessionID != "" && a.Host == m.Host && a.PID == parent }
	if ms.agent != "" {
		if a, err := m.GetAgent(ms.agent); err == nil && ours(a) {
			return a.Name, nil
		}
		ms.agent = ""
	}
	list, _ := m.ListAgents()
	for _, a := range list {
		if ours(a) {
			ms.agent = a.Name
			return a.Name, nil
		}
	}
	return "", fmt.Errorf("%w: start the server with --as NAME or TAVERN_AGENT (or from a session that ran `tavern hook session-start`)", ErrNoAgent)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func jsonText(v any) (*mcp.CallToolResult, error) {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return nil, err
	}
	return text(string(data)), nil
}

type primeIn struct{}

func (ms *mcpServer) prime(_ context.Context, _ *mcp.CallToolRequest, _ primeIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	p, err := BuildPrime(ms.e.Store, agent, PrimeOptions{Now: ms.e.now()})
	if err != nil {
		return nil, nil, err
	}
	return text(mcpPrime(p.Text())), nil, nil
}

// mcpPrime points prime's CLI examples at the MCP tools too.
func mcpPrime(s string) string {
	return s + "\n(Through MCP: the tools next, report, send, inbox, ask, reserve and search do the same.)\n"
}

type nextIn struct {
	Take  bool   `json:"take,omitempty" jsonschema:"claim the first"`
	Queue string `json:"queue,omitempty" jsonschema:"only this queue"`
}

func (ms *mcpServer) next(ctx context.Context, _ *mcp.CallToolRequest, in nextIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	b, err := ms.e.Broker()
	if err != nil {
		return nil, nil, err
	}
	var qs []string
	if in.Queue != "" {
		qs = []string{in.Queue}
	}
	if in.Take {
		c, err := Take(ctx, b, agent, qs, 0)
		if err != nil {
			return nil, nil, err
		}
		body := strings.TrimSpace(string(c.Doc.Body()))
		head := fmt.Sprintf("claimed %s/%s %q, attempt %d", c.Item.Queue, c.ID, c.Item.Title, c.Attempt)
		if note := LeaseNote(c, agent); note != "" {
			head += ". " + note
		}
		if w := b.DoneWork(c.Item); w != nil {
			// Its work was done by an earlier claim: not to be redone.
			head += ". Its work is done already (work_done): " + w.Next()
		}
		return text(head + "\n\n" + body), nil, nil
	}
	held, err := agents.ClaimedItems(ms.e.Store, agent)
	if err != nil {
		return nil, nil, err
	}
	var diag queues.Diagnostics
	next, err := Next(b, agent, NextOptions{Queues: qs, Limit: 3, Now: ms.e.now(), Diag: &diag})
	if err != nil {
		return nil, nil, err
	}
	answer := map[string]any{"held": held, "next": next}
	// What it passed over that waiting will not fix (a broken item file,
	// a dead dependency), as the CLI's next warns: an empty "next" must
	// not read as "no work" when work is stuck.
	var skipped []string
	for _, e := range diag.Invalid {
		skipped = append(skipped, e.Error())
	}
	for _, bl := range diag.Blocked {
		skipped = append(skipped, bl.String())
	}
	if len(skipped) > 0 {
		answer["skipped"] = skipped
	}
	if diag.View != nil {
		// The engine could not be asked: an item offered may be held
		// or finished on another machine (the CLI's next warns so).
		answer["warning"] = diag.View.Error()
	}
	r, err := jsonText(answer)
	return r, nil, err
}

type reportIn struct {
	ID      string `json:"id" jsonschema:"as next names it (QUEUE/ID), or a unique id prefix"`
	Attempt int    `json:"attempt,omitempty" jsonschema:"the attempt next gave (default: your claim)"`
	Outcome string `json:"outcome" jsonschema:"done, failed or released"`
	Text    string `json:"text,omitempty" jsonschema:"result (done) or reason (failed)"`
}

func (ms *mcpServer) report(_ context.Context, _ *mcp.CallToolRequest, in reportIn) (*mcp.CallToolResult, any, error) {
	// The attempt is the fence, as in `tavern item done --as`; report
	// acts as the server's agent like every other tool: with none it
	// refuses (ErrNoAgent) instead of reporting as nobody, the person's
	// way; a typo reports nothing; without an attempt the claim must be
	// the agent's (queues.CompleteAs).
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	b, err := ms.e.Broker()
	if err != nil {
		return nil, nil, err
	}
	// The names `tavern item done` takes: QUEUE/ID as next prints it, a
	// unique prefix.
	if in.ID, err = b.ResolveID(in.ID); err != nil {
		return nil, nil, err
	}
	switch in.Outcome {
	case "done":
		it, err := b.CompleteAs(in.ID, in.Attempt, agent, in.Text)
		if err != nil {
			return nil, nil, err
		}
		return text(it.ID + " " + it.State), nil, nil
	case "failed", "fail":
		it, err := b.FailAs(in.ID, in.Attempt, agent, in.Text)
		if err != nil {
			return nil, nil, err
		}
		return text(it.ID + " " + it.State), nil, nil
	case "released", "release":
		it, err := b.ReleaseAs(in.ID, in.Attempt, agent)
		if err != nil {
			return nil, nil, err
		}
		return text(it.ID + " " + it.State), nil, nil
	}
	return nil, nil, fmt.Errorf("outcome %q: want done, failed or released", in.Outcome)
}

type sendIn struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

func (ms *mcpServer) send(_ context.Context, _ *mcp.CallToolRequest, in sendIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	// As the CLI's send without --create: an unknown channel is a tool
	// error, never created (messages.Send).
	id, err := messages.Send(ms.e.Store, in.Channel, agent, in.Text, messages.SendOptions{})
	if err != nil {
		return nil, nil, err
	}
	return text("sent " + id), nil, nil
}

type inboxIn struct {
	Channel string `json:"channel,omitempty" jsonschema:"one channel (default: all)"`
}

func (ms *mcpServer) inbox(_ context.Context, _ *mcp.CallToolRequest, in inboxIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	chans := []string{in.Channel}
	if in.Channel == "" {
		unread, err := messages.Inbox(ms.e.Store, agent)
		if err != nil {
			return nil, nil, err
		}
		chans = nil
		for _, u := range unread {
			if u.Count > 0 {
				chans = append(chans, u.Channel)
			}
		}
	}
	var b strings.Builder
	for _, ch := range chans {
		msgs, err := messages.Recv(ms.e.Store, agent, ch, messages.RecvOptions{Limit: 50})
		if err != nil {
			return nil, nil, err
		}
		for _, m := range msgs {
			fmt.Fprintf(&b, "[%s] %s %s: %s\n", ch, m.Time.UTC().Format(time.RFC3339), m.Sender, m.Text)
		}
	}
	if b.Len() == 0 {
		return text("no unread messages"), nil, nil
	}
	return text(b.String()), nil, nil
}

type askIn struct {
	Question string `json:"question"`
	To       string `json:"to,omitempty" jsonschema:"user, parent (default) or an agent"`
}

func (ms *mcpServer) ask(_ context.Context, _ *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	q, err := ms.e.Manager.Ask(agent, in.To, 0, in.Question)
	if err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("asked %s (question %s); the answer arrives with your messages", q.To, q.ID)), nil, nil
}

type reserveIn struct {
	Globs   []string `json:"globs,omitempty" jsonschema:"e.g. src/parser/**"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"e.g. 2h (default 1h; 0: until released)"`
	Release bool     `json:"release,omitempty" jsonschema:"release these (all if none)"`
}

func (ms *mcpServer) reserve(_ context.Context, _ *mcp.CallToolRequest, in reserveIn) (*mcp.CallToolResult, any, error) {
	agent, err := ms.whoami()
	if err != nil {
		return nil, nil, err
	}
	sp, err := ms.e.Space()
	if err != nil {
		return nil, nil, err
	}
	if in.Release {
		n, err := sp.Unreserve(agent, in.Globs, tuples.UnreserveOptions{Instance: ms.opt.Instance})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("released %d", n)), nil, nil
	}
	ttl := time.Hour
	if in.TTL != "" {
		if ttl, err = time.ParseDuration(in.TTL); err != nil {
			// Go's parse error names neither the argument nor its form.
			return nil, nil, fmt.Errorf("ttl %q: want a duration such as 2h or 30m (0: until released)", in.TTL)
		}
	}
	rs, err := sp.Reserve(agent, in.Globs, tuples.ReserveOptions{TTL: ttl, Instance: ms.opt.Instance})
	var re *tuples.ReservedError
	if errors.As(err, &re) {
		var lines []string
		for _, c := range re.Conflicts {
			lines = append(lines, c.String())
		}
		return nil, nil, fmt.Errorf("not reserved (nothing was): %s", strings.Join(lines, "; "))
	}
	if err != nil {
		return nil, nil, err
	}
	var lines []string
	for _, r := range rs {
		until := "unreserved" // ttl 0, as the CLI's --ttl 0
		if !r.Expires.IsZero() {
			until = schema.FormatTime(r.Expires.Time)
		}
		lines = append(lines, r.Glob+" until "+until)
	}
	return text("reserved " + strings.Join(lines, ", ")), nil, nil
}

type searchIn struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

func (ms *mcpServer) search(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
	agent, _ := ms.whoami() // without an identity: knowledge and shared channels only
	hits, err := Search(ms.e, agent, in.Query, in.Limit)
	skipped := recall.Skipped(err) // files that do not parse: answer from the rest
	if err != nil && skipped == nil {
		return nil, nil, err
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "%s %s [%s] %s: %s\n", h.Source, h.ID, h.Where, h.Who, clip(h.Text, 300))
	}
	if len(hits) == 0 {
		b.WriteString("nothing found\n")
	}
	// In the result, not on stderr: the model reads the result, and a
	// client may not show the server's stderr to anyone.
	for _, e := range skipped {
		fmt.Fprintf(&b, "warning: skipped %v\n", e)
	}
	return text(b.String()), nil, nil
}
