package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestVersionPtyNoQuery runs `tavern --version` with its output on a
// pseudo-terminal that never answers terminal queries (script(1)'s pty,
// as in CI runners, agent tools and editor shells). No command may ask
// the terminal anything: Bubble Tea v1 did at package init (background
// colour, OSC 11, and cursor position, DSR), so every command waited
// for the 5 s timeout and wrote the queries onto the person's terminal.
func TestVersionPtyNoQuery(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed (util-linux, .ci/run installs it)")
	}
	bin := tavernBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", shellQuote(bin)+" --version", "/dev/null")
	cmd.Env = append(cleanEnv(), "TERM=xterm-256color", "COLORTERM=truecolor")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("script -c 'tavern --version': %v\n%q", err, out)
	}
	// Well under the 5 s a query waits for its answer; the machine may be
	// loaded, so not much tighter.
	if took > 2*time.Second {
		t.Errorf("tavern --version on a pty took %v, want well under 5s (a terminal query waiting for an answer?)", took)
	}
	for _, q := range []string{"\x1b]11;?", "\x1b[6n", "\x1b]10;?", "\x1b[c"} {
		if strings.Contains(string(out), q) {
			t.Errorf("tavern --version wrote the terminal query %q:\n%q", q, out)
		}
	}
	if !strings.Contains(string(out), "tavern") {
		t.Errorf("no version printed:\n%q", out)
	}
}

// shellQuote quotes s for sh -c.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// cleanEnv is the environment without the variables that change how a
// terminal program behaves (TERM, COLORTERM, NO_COLOR, ...).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TERM", "COLORTERM", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TMUX":
			continue
		}
		env = append(env, kv)
	}
	return env
}
