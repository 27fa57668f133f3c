package kit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(tb testing.TB, dir, rel, text string) {
	tb.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func readFile(tb testing.TB, dir, rel string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func exists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, rel))
	return err == nil
}

const userSettings = `{
  "permissions": {
    "allow": [
      "Bash(npm run lint)"
    ]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/no-rm-rf.sh"
          }
        ]
      }
    ]
  },
  "env": {
    "FOO": "1"
  },
  "model": "opus"
}
`

func TestSetupClaudeMergesAndRemovesExactly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, ".claude/settings.json", userSettings)
	writeFile(t, dir, "AGENTS.md", "# Agents\n\nUse make.\n")
	opt := SetupOptions{Project: dir, Bin: "tavern"}
	if _, err := Setup(Claude, opt); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, dir, ".claude/settings.json")
	var v map[string]any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("settings not JSON: %v\n%s", err, got)
	}
	// The user's keys keep their values and their order.
	if i, j, k := strings.Index(got, `"permissions"`), strings.Index(got, `"env"`), strings.Index(got, `"model"`); !(i < j && j < k) {
		t.Errorf("key order changed:\n%s", got)
	}
	if !strings.Contains(got, "./scripts/no-rm-rf.sh") || v["model"] != "opus" {
		t.Errorf("user settings lost:\n%s", got)
	}
	hooks := v["hooks"].(map[string]any)
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"} {
		if !strings.Contains(mustJSON(hooks[ev]), "tavern hook ") {
			t.Errorf("no tavern hook for %s:\n%s", ev, got)
		}
	}
	if n := len(hooks["PreToolUse"].([]any)); n != 2 {
		t.Errorf("PreToolUse groups: %d, want the user's and ours", n)
	}
	agentsMD := readFile(t, dir, "AGENTS.md")
	if !strings.HasPrefix(agentsMD, "# Agents\n\nUse make.\n\n"+BlockBegin) || !strings.Contains(agentsMD, "tavern prime") {
		t.Errorf("AGENTS.md:\n%s", agentsMD)
	}
	body := strings.TrimSpace(agentsMD[strings.Index(agentsMD, BlockBegin)+len(BlockBegin) : strings.Index(agentsMD, BlockEnd)])
	if n := strings.Count(body, "\n") + 1; n < 4 || n > 6 {
		t.Errorf("AGENTS.md block is %d lines, want 4-6", n)
	}
	if c := readFile(t, dir, "CLAUDE.md"); !strings.Contains(c, "@AGENTS.md") {
		t.Errorf("CLAUDE.md does not import AGENTS.md:\n%s", c)
	}

	// Again: nothing changes.
	before := readFile(t, dir, ".claude/settings.json")
	changes, err := Setup(Claude, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Action != "unchanged" && c.Action != "note" {
			t.Errorf("second setup changed %+v", c)
		}
	}
	if after := readFile(t, dir, ".claude/settings.json"); after != before {
		t.Errorf("second setup rewrote settings")
	}
	items, err := Check(Claude, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Status != "ok" && it.Status != "warning" {
			t.Errorf("check: %+v", it)
		}
	}

	// A hand edit of our block and of our hook is reported, then repaired.
	writeFile(t, dir, "AGENTS.md", strings.Replace(readFile(t, dir, "AGENTS.md"), "tavern prime", "tavern wake", 1))
	edited := strings.Replace(before, "\"command\": \"tavern hook stop --tool claude\",\n            \"timeout\": 600", "\"command\": \"tavern hook stop --tool claude\",\n            \"timeout\": 5", 1)
	if edited == before {
		t.Fatal("the hand edit of the stop hook did not apply")
	}
	writeFile(t, dir, ".claude/settings.json", edited)
	items, _ = Check(Claude, opt)
	outdated := 0
	for _, it := range items {
		if it.Status == "outdated" {
			outdated++
		}
	}
	if outdated != 2 {
		t.Errorf("check after hand edits: %+v, want 2 outdated", items)
	}
	if _, err := Setup(Claude, opt); err != nil {
		t.Fatal(err)
	}
	if items, _ := Check(Claude, opt); strings.Contains(mustJSON(items), "outdated") {
		t.Errorf("after repair: %+v", items)
	}

	if _, err := Remove(Claude, opt); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ".claude/settings.json"); got != userSettings {
		t.Errorf("remove did not restore the settings:\ngot:\n%s\nwant:\n%s", got, userSettings)
	}
	if got := readFile(t, dir, "AGENTS.md"); got != "# Agents\n\nUse make.\n" {
		t.Errorf("remove did not restore AGENTS.md: %q", got)
	}
	if exists(dir, "CLAUDE.md") {
		t.Errorf("CLAUDE.md (created by setup) left behind: %q", readFile(t, dir, "CLAUDE.md"))
	}
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestSetupFreshProjectAndSharedAgentsMD(t *testing.T) {
	dir := t.TempDir()
	opt := SetupOptions{Project: dir}
	for _, tool := range []Tool{Codex, Gemini} {
		if _, err := Setup(tool, opt); err != nil {
			t.Fatal(err)
		}
	}
	codex := readFile(t, dir, ".codex/hooks.json")
	if !strings.Contains(codex, `"matcher": "apply_patch|Edit|Write|Bash"`) || !strings.Contains(codex, "tavern hook pre-tool-use --tool codex") {
		t.Errorf(".codex/hooks.json:\n%s", codex)
	}
	gemini := readFile(t, dir, ".gemini/settings.json")
	for _, want := range []string{`"BeforeTool"`, `"AfterAgent"`, `"BeforeAgent"`, `"AfterTool"`, `"name": "tavern-stop"`, `"timeout": 600000`, "write_file|replace|run_shell_command"} {
		if !strings.Contains(gemini, want) {
			t.Errorf(".gemini/settings.json lacks %s:\n%s", want, gemini)
		}
	}
	if !strings.Contains(readFile(t, dir, "GEMINI.md"), "@./AGENTS.md") {
		t.Error("GEMINI.md does not import AGENTS.md")
	}
	// Removing codex keeps AGENTS.md for gemini; removing gemini too
	// leaves nothing.
	if _, err := Remove(Codex, opt); err != nil {
		t.Fatal(err)
	}
	if exists(dir, ".codex/hooks.json") || !exists(dir, "AGENTS.md") {
		t.Errorf("after removing codex: hooks.json %v, AGENTS.md %v", exists(dir, ".codex/hooks.json"), exists(dir, "AGENTS.md"))
	}
	if _, err := Remove(Gemini, opt); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"AGENTS.md", "GEMINI.md", ".gemini/settings.json"} {
		if exists(dir, f) {
			t.Errorf("%s left behind", f)
		}
	}
}

func TestSetupBadConfigLeftAsItIs(t *testing.T) {
	dir := t.TempDir()
	bad := "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n"
	writeFile(t, dir, ".claude/settings.json", bad)
	_, err := Setup(Claude, SetupOptions{Project: dir})
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), ".claude/settings.json:3:") {
		t.Errorf("got %v, want ErrBadConfig at .claude/settings.json:3:col", err)
	}
	if got := readFile(t, dir, ".claude/settings.json"); got != bad {
		t.Error("bad settings file was changed")
	}
	if exists(dir, "AGENTS.md") {
		t.Error("setup went on after the bad file")
	}
	writeFile(t, dir, ".claude/settings.json", `{"hooks": []}`)
	if _, err := Setup(Claude, SetupOptions{Project: dir}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("hooks not an object: got %v", err)
	}
}

func TestSetupAider(t *testing.T) {
	dir := t.TempDir()
	conf := "# my aider settings\nmodel: sonnet\nread: CONVENTIONS.md\n"
	writeFile(t, dir, ".aider.conf.yml", conf)
	opt := SetupOptions{Project: dir}
	if _, err := Setup(Aider, opt); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, dir, ".aider.conf.yml")
	if !strings.Contains(got, "# my aider settings") || !strings.Contains(got, "model: sonnet") || !strings.Contains(got, "CONVENTIONS.md") || !strings.Contains(got, "AGENTS.md") {
		t.Errorf(".aider.conf.yml:\n%s", got)
	}
	if items, _ := Check(Aider, opt); !strings.Contains(mustJSON(items), `"status":"ok"`) {
		t.Errorf("check: %+v", items)
	}
	if _, err := Remove(Aider, opt); err != nil {
		t.Fatal(err)
	}
	got = readFile(t, dir, ".aider.conf.yml")
	if strings.Contains(got, "AGENTS.md") || !strings.Contains(got, "CONVENTIONS.md") || !strings.Contains(got, "model: sonnet") {
		t.Errorf("after remove:\n%s", got)
	}
	if exists(dir, "AGENTS.md") {
		t.Error("AGENTS.md left behind")
	}
}

func TestParseJSONPosition(t *testing.T) {
	_, err := parseJSON([]byte("{\n  \"a\": 1,\n  \"b\": tru\n}"))
	if err == nil || !strings.HasPrefix(err.Error(), "3:") {
		t.Errorf("got %v, want an error at line 3", err)
	}
	v, err := parseJSON([]byte(`{"z":1,"a":[1.50,{"k":null}],"m":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(formatJSON(v)); got != "{\n  \"z\": 1,\n  \"a\": [\n    1.50,\n    {\n      \"k\": null\n    }\n  ],\n  \"m\": true\n}\n" {
		t.Errorf("round trip:\n%s", got)
	}
}
