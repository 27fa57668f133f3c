package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A SIGKILLed `pool run` left pools/NAME.md saying running for ever, and
// doctor said nothing. The runner now holds the pool's liveness lock:
// doctor reports a pool whose lock is free as dead-pool, --fix marks it
// stopped (journaled as pool.reaped), and a second runner of a live pool
// is refused (exit 4).
func TestDoctorDeadPool(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	// No items, hibernate: no drone outlives the runner.
	pool := p.tavern("pool", "run", "p", "--queue", "q", "--on-empty", "hibernate", "--quiet", "--", "true")
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Process.Kill(); _ = pool.Wait() })
	poll(t, "the pool to write its document", func() bool {
		var d struct{ Fields struct{ State string } }
		r := p.run("show", "pools/p", "--json")
		return r.code == 0 && json.Unmarshal([]byte(r.out), &d) == nil && d.Fields.State == "running"
	})
	// Bounded: without the lock the second runner runs on.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	second := runResult(t, p.cmd(ctx, tavernBin(t), "pool", "run", "p", "--queue", "q", "--on-empty", "hibernate", "--quiet", "--", "true"))
	cancel()
	if second.code != 4 {
		t.Fatalf("a second runner of a running pool: exit %d, want 4\n%s", second.code, second)
	}
	p.ok("doctor") // a live pool is no finding

	_ = pool.Process.Kill()
	_ = pool.Wait()
	// The views say so until it is fixed.
	var pools []struct {
		Name, State string
		Dead        bool
	}
	p.json(&pools, "ui", "--lens", "pools")
	if len(pools) != 1 || pools[0].State != "running" || !pools[0].Dead {
		t.Fatalf("ui --lens pools after the runner was killed: %+v, want p running, dead", pools)
	}
	if md := p.ok("export", "--md"); !strings.Contains(md, "running (runner gone)") {
		t.Fatalf("export --md does not say the runner is gone:\n%s", md)
	}
	r := p.fails(5, "doctor")
	if !strings.Contains(r.out, "dead-pool pools/p.md: state running") {
		t.Fatalf("doctor after the runner was killed:\n%s", r)
	}
	out := p.ok("doctor", "--fix")
	if !strings.Contains(out, "dead-pool pools/p.md") || !strings.Contains(out, "(fixed)") {
		t.Fatalf("doctor --fix:\n%s", out)
	}
	var d struct{ Fields struct{ State string } }
	p.json(&d, "show", "pools/p")
	if d.Fields.State != "stopped" {
		t.Fatalf("pool state after doctor --fix: %q, want stopped", d.Fields.State)
	}
	pools = nil
	p.json(&pools, "ui", "--lens", "pools")
	if len(pools) != 1 || pools[0].Dead {
		t.Fatalf("ui --lens pools after doctor --fix: %+v, want p stopped, not dead", pools)
	}
	if log := p.ok("log", "--type", "pool.reaped", "--json"); !strings.Contains(log, `"path":"pools/p.md"`) {
		t.Fatalf("no pool.reaped event:\n%s", log)
	}
	if r := p.run("doctor"); r.code != 0 || r.out != "" || !strings.Contains(r.err, "nothing found") {
		t.Fatalf("doctor after the fix (want nothing on stdout, nothing found on stderr):\n%s", r)
	}
}
