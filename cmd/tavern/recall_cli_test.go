package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A child of the spawn wrapper that runs `tavern wake` (as an agent's first
// prompt would) is the same session: spawns is 1, not 2.
func TestSpawnedWakeCountsOnce(t *testing.T) {
	p := newProject(t)
	p.ok("spawn", "--name", "w", "--", tavernBin(t), "wake", "--json")
	var a struct {
		Fields struct {
			Spawns int `json:"spawns"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(p.ok("show", "agents/w", "--json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Fields.Spawns != 1 {
		t.Errorf("spawns after one spawn whose child woke: got %d, want 1", a.Fields.Spawns)
	}
	// A wake outside any wrapper starts (and counts) a session.
	p.ok("wake", "--as", "w")
	if err := json.Unmarshal([]byte(p.ok("show", "agents/w", "--json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Fields.Spawns != 2 {
		t.Errorf("spawns after a bare wake: got %d, want 2", a.Fields.Spawns)
	}
}

// context finds by stem and prefix, shows questions, and prints nothing
// (no empty headings) when nothing matched.
func TestContextCLI(t *testing.T) {
	p := newProject(t)
	p.ok("agent", "new", "alice")
	p.ok("knowledge", "add", "--as", "alice", "--domain", "decision", "We chose PostgreSQL for JSONB")
	p.ok("ask", "--as", "alice", "--to", "user", "Which databases need backups?")
	out := p.ok("context", "postgres")
	if !strings.Contains(out, "PostgreSQL") || strings.Contains(out, "question:") {
		t.Errorf("context postgres:\n%s", out)
	}
	out = p.ok("context", "database")
	if !strings.Contains(out, "question:") || !strings.Contains(out, "Which databases need backups?") {
		t.Errorf("context database: want the question\n%s", out)
	}
	r := p.run("context", "zebra") // a listing: empty, exit 0
	if r.code != 0 {
		t.Fatalf("context with no match: %s", r)
	}
	if r.out != "" {
		t.Errorf("context with no match printed %q", r.out)
	}
}
