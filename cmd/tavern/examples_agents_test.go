package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/agents"
)

// The recipes of examples/agents run as a user would run them, with the
// built tavern first on PATH and the stand-ins for the agent tools.
func runRecipe(t *testing.T, script string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", "examples", "agents", script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{abs}, args...)...)
	var env []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "TAVERN_AGENT" && k != "PATH" {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "PATH="+filepath.Dir(tavernBin(t))+":"+os.Getenv("PATH"), "TAVERN_STAND_IN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, out)
	}
	return string(out)
}

func TestExampleClaudeInteractive(t *testing.T) {
	dir := t.TempDir()
	out := runRecipe(t, "claude-interactive.sh", dir)
	for _, want := range []string{"SessionStart ->", "permissionDecision\":\"deny\"", "not writing src/shared.md", "reservation.denied", "ended (prompt_input_exit)"} {
		if !strings.Contains(out, want) {
			t.Errorf("claude-interactive.sh output lacks %q:\n%s", want, out)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "out"))
	if len(ents) != 1 {
		t.Errorf("out/: %d files, want the item's", len(ents))
	}
	if _, err := os.Stat(filepath.Join(dir, "src", "shared.md")); err == nil {
		t.Error("the stand-in wrote bob's reserved file")
	}
}

func TestExamplePrintMode(t *testing.T) {
	for _, tool := range []string{"claude", "codex", "gemini", "aider"} {
		t.Run(tool, func(t *testing.T) {
			dir := t.TempDir()
			runRecipe(t, "print-mode.sh", tool, dir)
			ents, _ := os.ReadDir(filepath.Join(dir, "out"))
			if len(ents) != 3 {
				t.Errorf("out/: %d files, want 3", len(ents))
			}
			r := runIn(t, dir, "", nil, "ls", "items", "--where", "state=done")
			if strings.Count(r.out, "docs/") != 3 {
				t.Errorf("done items:\n%s", r)
			}
			if report := standInReports[tool]; report != "" {
				// The drone runs the tool in its JSON mode, so the ledger
				// has the tokens and cost the stand-in reported, three times.
				data, err := os.ReadFile(filepath.Join("..", "..", "examples", "agents", "stand-in", report))
				if err != nil {
					t.Fatal(err)
				}
				u, ok := agents.ParseUsage(data)
				if !ok {
					t.Fatalf("stand-in/%s: no usage report in it", report)
				}
				got := usageTotal(t, dir)
				if got.TokensIn != 3*u.TokensIn || got.TokensOut != 3*u.TokensOut {
					t.Errorf("usage: tokens in/out %d/%d, want %d/%d (3 runs of stand-in/%s)", got.TokensIn, got.TokensOut, 3*u.TokensIn, 3*u.TokensOut, report)
				}
				wantCost, wantRuns := 0.0, 0
				if u.CostUSD != nil {
					wantCost, wantRuns = 3**u.CostUSD, 3
				}
				if math.Abs(got.CostUSD-wantCost) > 1e-9 || got.CostRuns != wantRuns {
					t.Errorf("usage: cost %v over %d runs, want %v over %d", got.CostUSD, got.CostRuns, wantCost, wantRuns)
				}
			}
		})
	}
}

// standInReports names the report each stand-in prints in its tool's JSON
// mode (a recorded result, as agents/testdata/usage has them).
var standInReports = map[string]string{
	"claude": "claude-result.json",
	"codex":  "codex-events.jsonl",
	"gemini": "gemini-result.json",
}

type usageRow struct {
	Runs      int     `json:"runs"`
	Failed    int     `json:"failed"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	CostRuns  int     `json:"cost_runs"`
}

// usageTotal is the total row of `tavern usage --json` in dir.
func usageTotal(t *testing.T, dir string) usageRow {
	t.Helper()
	r := runIn(t, dir, "", nil, "usage", "--json")
	var got struct {
		Total usageRow `json:"total"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.out), &got) != nil {
		t.Fatalf("tavern usage --json:\n%s", r)
	}
	return got.Total
}

// The drone judges the run by the result the tool reports, not only by its
// exit status: Claude Code can end a run that failed (an API error, the
// turn limit) with a result object and status 0. The item fails, and the
// ledger still has what the run cost.
func TestExampleDroneFailsOnErrorResult(t *testing.T) {
	drone, err := filepath.Abs(filepath.Join("..", "..", "examples", "agents", "drone.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool, report string
		wantDone           bool
		wantTokensIn       int64
		wantCost           float64
	}{
		{"claude success", "claude", `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done.","session_id":"s1","total_cost_usd":0.25,"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40}}`, true, 100, 0.25},
		{"claude api error", "claude", `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: 529 Overloaded","session_id":"s2","total_cost_usd":0.01,"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`, false, 7, 0.01},
		{"claude max turns", "claude", `{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":3,"session_id":"s3","total_cost_usd":0.5,"usage":{"input_tokens":900,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":80}}`, false, 900, 0.5},
		{"codex turn failed", "codex", `{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"turn.failed","error":{"message":"stream disconnected"}}`, false, 0, 0},
		{"gemini error", "gemini", `{
  "session_id": "g1",
  "error": {
    "type": "FatalTurnLimitedError",
    "message": "Reached max session turns",
    "code": 53
  }
}`, false, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, bin := t.TempDir(), t.TempDir()
			// A tool on PATH that prints its recorded report and exits 0.
			if err := os.WriteFile(filepath.Join(bin, "report"), []byte(c.report+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			script := "#!/bin/sh\ncat " + filepath.Join(bin, "report") + "\n"
			if err := os.WriteFile(filepath.Join(bin, c.tool), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			path := []string{"PATH=" + bin + ":" + filepath.Dir(tavernBin(t)) + ":" + os.Getenv("PATH")}
			for _, args := range [][]string{{"init"}, {"queue", "create", "docs"}, {"queue", "add", "docs", "--title", "write it"}} {
				if r := runIn(t, dir, "", path, args...); r.code != 0 {
					t.Fatalf("tavern %q: %s", args, r)
				}
			}
			r := runIn(t, dir, "", path, "spawn", "--name", "d1", "--queue", "docs", "--", "sh", drone, c.tool)
			if got := r.code == 0; got != c.wantDone {
				t.Errorf("spawn of drone.sh %s: exit %d, want success %v\n%s", c.tool, r.code, c.wantDone, r)
			}
			done := runIn(t, dir, "", nil, "ls", "items", "--where", "state=done")
			if got := strings.Contains(done.out, "docs/"); got != c.wantDone {
				t.Errorf("item done: %v, want %v\n%s", got, c.wantDone, done)
			}
			u := usageTotal(t, dir)
			if u.Runs != 1 || u.TokensIn != c.wantTokensIn || math.Abs(u.CostUSD-c.wantCost) > 1e-9 {
				t.Errorf("usage: %+v, want 1 run, %d tokens in, cost %v", u, c.wantTokensIn, c.wantCost)
			}
		})
	}
}
