package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		})
	}
}
