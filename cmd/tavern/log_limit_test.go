package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// log --limit N --follow is tail -n N -f: the newest N matching events,
// oldest first, then each new one as it comes.
func TestLogLimitFollow(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, name := range []string{"a1", "a2", "a3", "a4"} {
		p.ok("agent", "new", name)
	}
	follow := p.tavern("log", "--type", "agent.created", "--limit", "2", "--follow", "--json")
	var out, errOut lockedBuffer
	follow.Stdout, follow.Stderr = &out, &errOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = follow.Wait(); close(exited) }()
	defer func() {
		follow.Process.Kill()
		<-exited
	}()
	// paths waits, up to a deadline, for n lines and returns their paths.
	paths := func(n int) []string {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if out.String() != "" && len(lines) >= n {
				var got []string
				for _, l := range lines {
					var e journal.Event
					if err := json.Unmarshal([]byte(l), &e); err != nil {
						t.Fatalf("bad line %q: %v", l, err)
					}
					got = append(got, e.Path)
				}
				return got
			}
			select {
			case <-exited:
				t.Fatalf("log --limit 2 --follow exited (%v) with %d lines; stderr:\n%s", waitErr, len(lines), errOut.String())
			case <-deadline:
				t.Fatalf("log --limit 2 --follow printed %q, want %d lines", out.String(), n)
			case <-time.After(20 * time.Millisecond): // polling its output, with a deadline
			}
		}
	}
	if got := strings.Join(paths(2), " "); got != "agents/a3.md agents/a4.md" {
		t.Fatalf("log --limit 2 --follow first printed %s, want agents/a3.md agents/a4.md", got)
	}
	p.ok("agent", "new", "a5")
	if got := strings.Join(paths(3), " "); got != "agents/a3.md agents/a4.md agents/a5.md" {
		t.Fatalf("log --limit 2 --follow printed %s, want agents/a3.md agents/a4.md agents/a5.md", got)
	}
}
