//go:build long

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDemoWorkflowCommand runs `tavern demo workflow` (about 10-20 s, so
// under -tags long; TestPoolWorktreeMergeQueueCLI covers the same path
// in the plain suite).
func TestDemoWorkflowCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real pool")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command(tavernBin(t), "demo", "workflow")
	cmd.Env = append(os.Environ(), "TAVERN_AGENT=", "TAVERN_DIR=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo workflow: %v\n%s\n%s", err, out.String(), errb.String())
	}
	for _, want := range []string{"12 items in queue tasks", "== plans/release.md: 12 of 12 boxes ticked ==", "a person runs `tavern approve",
		"merge conflict in banner.txt", "== tavern usage (by agent) ==", "== tavern trace ", "0 worktrees left"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
