package agents

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// The usage ledger: every spawn that ran a child appends one record,
// usage/<agent>/<id>.md, with its wall time, CPU time and exit status,
// and — when the child is an LLM CLI that reports them on stdout — its
// tokens and cost. Package agents/usage reads and totals the ledger.
//
// What each CLI documents, and what is taken from it (testdata/usage has
// a fixture of each, with its source):
//
//   - Claude Code, `claude -p --output-format json`: one object
//     {"type":"result", "total_cost_usd", "usage": {"input_tokens",
//     "output_tokens", "cache_creation_input_tokens",
//     "cache_read_input_tokens"}, "session_id", "modelUsage": {model:
//     ...}}; with --output-format stream-json the last line is that
//     object. tokens_in is input + cache creation + cache reads (every
//     input token), cost_usd is total_cost_usd.
//   - Codex, `codex exec --json`: JSON lines; each {"type":
//     "turn.completed", "usage": {"input_tokens", "cached_input_tokens",
//     "output_tokens"}} is one turn, summed. Codex reports no cost.
//   - Gemini CLI, `gemini -p --output-format json`: one object
//     {"session_id", "response", "stats": {"models": {model: {"tokens":
//     {"prompt", "candidates", "cached", "thoughts", ...}}}}}, summed over
//     models (prompt includes cached; tokens_out is candidates +
//     thoughts); with stream-json the {"type":"result","stats":
//     {"input_tokens","output_tokens","cached"}} line. No cost.
//
// Output that is none of these leaves the token and cost fields out: a
// ledger says "unknown", never a guess.

// MaxUsageOutput is how much of a child's stdout (its end) is kept to
// find its usage report.
const MaxUsageOutput = 1 << 20

// AgentUsage is what an agent CLI reported about its own run.
type AgentUsage struct {
	Source     string   `json:"source"` // claude | codex | gemini
	Model      string   `json:"model,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	TokensIn   int64    `json:"tokens_in"`
	TokensOut  int64    `json:"tokens_out"`
	CacheRead  int64    `json:"tokens_cache_read,omitempty"`
	CacheWrite int64    `json:"tokens_cache_write,omitempty"`
	CostUSD    *float64 `json:"cost_usd,omitempty"` // nil: not reported
}

// ParseUsage finds the usage report of Claude Code, Codex or Gemini CLI
// in a child's stdout (see above). ok is false when there is none.
func ParseUsage(out []byte) (u AgentUsage, ok bool) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return u, false
	}
	// The whole output is one JSON object (claude/gemini --output-format json).
	if u, ok := parseObject(out); ok {
		return u, true
	}
	// JSON lines (claude/gemini stream-json, codex --json).
	if u, ok := parseLines(out); ok {
		return u, true
	}
	// The object printed last, after other output: from the last line
	// that opens an object at column 0.
	for i := len(out) - 1; i > 0; i-- {
		if out[i] == '{' && out[i-1] == '\n' {
			if u, ok := parseObject(out[i:]); ok {
				return u, true
			}
			break
		}
	}
	return u, false
}

type claudeResult struct {
	Type         string   `json:"type"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	CostUSD      *float64 `json:"cost_usd"` // older Claude Code versions
	SessionID    string   `json:"session_id"`
	Usage        *struct {
		Input       int64 `json:"input_tokens"`
		Output      int64 `json:"output_tokens"`
		CacheCreate int64 `json:"cache_creation_input_tokens"`
		CacheRead   int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]json.RawMessage `json:"modelUsage"`
}

type geminiTokens struct {
	Prompt     int64 `json:"prompt"`
	Candidates int64 `json:"candidates"`
	Cached     int64 `json:"cached"`
	Thoughts   int64 `json:"thoughts"`
}

type geminiOutput struct {
	SessionID string `json:"session_id"`
	Stats     *struct {
		Models map[string]struct {
			Tokens geminiTokens `json:"tokens"`
		} `json:"models"`
	} `json:"stats"`
}

func parseObject(b []byte) (AgentUsage, bool) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return AgentUsage{}, false
	}
	if _, ok := probe["stats"]; ok {
		var g geminiOutput
		if json.Unmarshal(b, &g) == nil && g.Stats != nil && len(g.Stats.Models) > 0 {
			u := AgentUsage{Source: "gemini", SessionID: g.SessionID}
			var models []string
			for name, m := range g.Stats.Models {
				models = append(models, name)
				u.TokensIn += m.Tokens.Prompt
				u.CacheRead += m.Tokens.Cached
				u.TokensOut += m.Tokens.Candidates + m.Tokens.Thoughts
			}
			sort.Strings(models)
			u.Model = strings.Join(models, ",")
			return u, true
		}
	}
	return claudeObject(b)
}

func claudeObject(b []byte) (AgentUsage, bool) {
	var c claudeResult
	if json.Unmarshal(b, &c) != nil || c.Type != "result" || (c.Usage == nil && c.TotalCostUSD == nil && c.CostUSD == nil) {
		return AgentUsage{}, false
	}
	u := AgentUsage{Source: "claude", SessionID: c.SessionID, CostUSD: c.TotalCostUSD}
	if u.CostUSD == nil {
		u.CostUSD = c.CostUSD
	}
	if c.Usage != nil {
		u.TokensIn = c.Usage.Input + c.Usage.CacheCreate + c.Usage.CacheRead
		u.TokensOut = c.Usage.Output
		u.CacheRead, u.CacheWrite = c.Usage.CacheRead, c.Usage.CacheCreate
	}
	var models []string
	for name := range c.ModelUsage {
		models = append(models, name)
	}
	sort.Strings(models)
	u.Model = strings.Join(models, ",")
	return u, true
}

func parseLines(out []byte) (AgentUsage, bool) {
	var codex AgentUsage
	codexTurns := 0
	var last AgentUsage
	found := false
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Usage    *struct {
				Input  int64 `json:"input_tokens"`
				Cached int64 `json:"cached_input_tokens"`
				Output int64 `json:"output_tokens"`
			} `json:"usage"`
			Stats *struct {
				Input  int64 `json:"input_tokens"`
				Output int64 `json:"output_tokens"`
				Cached int64 `json:"cached"`
			} `json:"stats"`
			SessionID string `json:"session_id"`
			Model     string `json:"model"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "thread.started":
			codex.SessionID = ev.ThreadID
		case ev.Type == "turn.completed" && ev.Usage != nil:
			codexTurns++
			codex.TokensIn += ev.Usage.Input
			codex.CacheRead += ev.Usage.Cached
			codex.TokensOut += ev.Usage.Output
		case ev.Type == "init" && ev.Model != "":
			last.Model, last.SessionID = ev.Model, ev.SessionID
		case ev.Type == "result" && ev.Stats != nil: // gemini stream-json
			last.Source = "gemini"
			last.TokensIn, last.TokensOut, last.CacheRead = ev.Stats.Input, ev.Stats.Output, ev.Stats.Cached
			found = true
		case ev.Type == "result": // claude stream-json
			if u, ok := claudeObject(line); ok {
				last, found = u, true
			}
		}
	}
	if codexTurns > 0 {
		codex.Source = "codex"
		return codex, true
	}
	return last, found
}

// usageRecord writes run's entry in the usage ledger.
func (m *Manager) recordUsage(run *Run, res *SpawnResult) error {
	wall := run.Ended.Sub(run.Started).Seconds()
	fields := []docstore.Field{{Key: "agent", Value: run.Agent}}
	var item, queue string
	if run.Claim != nil {
		item, queue = run.Claim.ItemID(), run.Claim.Queue()
		fields = append(fields, docstore.Field{Key: "item", Value: item}, docstore.Field{Key: "queue", Value: queue})
	}
	for _, kv := range [][2]string{{"pool", run.Pool}, {"role", run.Role}} {
		if kv[1] != "" {
			fields = append(fields, docstore.Field{Key: kv[0], Value: kv[1]})
		}
	}
	u, ok := ParseUsage(run.Output)
	model := run.Model
	if ok && u.Model != "" {
		model = u.Model
	}
	if model != "" {
		fields = append(fields, docstore.Field{Key: "model", Value: model})
	}
	fields = append(fields,
		docstore.Field{Key: "started", Value: run.Started}, docstore.Field{Key: "ended", Value: run.Ended},
		docstore.Field{Key: "wall_seconds", Value: round3(wall)}, docstore.Field{Key: "cpu_seconds", Value: round3(run.CPU.Seconds())},
		docstore.Field{Key: "exit_code", Value: run.ExitCode}, docstore.Field{Key: "outcome", Value: res.Outcome})
	data := map[string]any{"wall_seconds": round3(wall), "cpu_seconds": round3(run.CPU.Seconds()), "exit_code": run.ExitCode}
	if ok {
		fields = append(fields, docstore.Field{Key: "source", Value: u.Source},
			docstore.Field{Key: "tokens_in", Value: u.TokensIn}, docstore.Field{Key: "tokens_out", Value: u.TokensOut})
		if u.CacheRead > 0 {
			fields = append(fields, docstore.Field{Key: "tokens_cache_read", Value: u.CacheRead})
		}
		if u.CacheWrite > 0 {
			fields = append(fields, docstore.Field{Key: "tokens_cache_write", Value: u.CacheWrite})
		}
		if u.CostUSD != nil {
			fields = append(fields, docstore.Field{Key: "cost_usd", Value: *u.CostUSD})
			data["cost_usd"] = *u.CostUSD
		}
		if u.SessionID != "" {
			fields = append(fields, docstore.Field{Key: "session_id", Value: u.SessionID})
		}
		data["tokens_in"], data["tokens_out"], data["source"] = u.TokensIn, u.TokensOut, u.Source
	}
	d, err := m.Store.CreateEntry(schema.Usage, run.Agent, fields, "")
	if err != nil {
		return err
	}
	return m.event(journal.Event{Type: "usage.recorded", Kind: "usage", Path: d.Path, Agent: run.Agent, Item: item, Queue: queue, Data: data})
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
