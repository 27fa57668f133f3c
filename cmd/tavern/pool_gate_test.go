package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gatedPool is a git repository with a store, queue work and one item
// behind a human gate (before complete), whose drones (pool run
// --worktree) append a line to runs for every run of their command and
// commit a file.
type gatedPool struct {
	*project
	id     string
	runs   string
	stdout bytes.Buffer // the pools'
	stderr bytes.Buffer
}

func newGatedPool(t *testing.T) *gatedPool {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	p := newProject(t)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		p.git(args...)
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".gitignore"), []byte(".tavern/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.git("add", ".gitignore")
	p.git("commit", "-q", "-m", "start")
	p.ok("queue", "create", "work")
	id := strings.TrimSpace(p.ok("queue", "add", "work", "--title", "add f", "--gate", "human"))
	return &gatedPool{project: p, id: id, runs: filepath.Join(t.TempDir(), "runs")}
}

func (p *project) git(args ...string) string {
	p.t.Helper()
	cmd := p.cmd(context.Background(), "git", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start starts pool run; the caller waits for it (wait).
func (g *gatedPool) start(ctx context.Context, extra ...string) *exec.Cmd {
	g.t.Helper()
	args := append([]string{"pool", "run", "drones", "--queue", "work", "--worktree", "--max", "1", "--quiet"}, extra...)
	args = append(args, "--", "sh", "-c", `echo "$TAVERN_ATTEMPT" >> "$RUNS"; echo f >> f.txt; git add f.txt; git commit -q -m "add f"`)
	cmd := g.cmd(ctx, tavernBin(g.t), args...)
	cmd.Env = append(cmd.Env, "RUNS="+g.runs)
	cmd.Stdout, cmd.Stderr = &g.stdout, &g.stderr
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	return cmd
}

// atGate waits until a drone waits at the item's gate.
func (g *gatedPool) atGate() {
	g.t.Helper()
	poll(g.t, "a drone to wait at the gate", func() bool {
		var list []struct{ Name, State string }
		g.json(&list, "agent", "ls")
		for _, a := range list {
			if a.State == "waiting" {
				return true
			}
		}
		return false
	})
}

// runsOfCommand is how many times the drones ran the command.
func (g *gatedPool) runsOfCommand() int {
	data, err := os.ReadFile(g.runs)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		g.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// exitsWithin waits for cmd, which must exit 0 before ctx is done.
func exitsWithin(t *testing.T, ctx context.Context, cmd *exec.Cmd, what string, stderr *bytes.Buffer) {
	t.Helper()
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("%s: did not return in time (killed)\n%s", what, stderr)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, stderr)
	}
}

// A drone whose command succeeded and that waits at a human gate has done
// its work: when its wait ends before a person decides (the pool
// gone, the wrapper interrupted), the next drone that claims the item
// waits at the gate again and merges after the approval, without running
// the command a second time. It ran twice: the item was released as if
// nothing had been done, and the next claim started the command again
// (its second commit merged on top of the first).
func TestPoolGateCommandRunsOnce(t *testing.T) {
	g := newGatedPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := g.start(ctx)
	g.atGate()
	// The pool dies: its drone gets SIGTERM (Pdeathsig), ends its wait
	// and gives the item back.
	pool.Process.Kill()
	_ = pool.Wait()
	poll(t, "the item to be given back", func() bool {
		_, err := os.Stat(g.path("queues/work/pending/" + g.id + ".md"))
		return err == nil
	})
	if got := g.runsOfCommand(); got != 1 {
		t.Fatalf("the command ran %d times before the approval, want 1", got)
	}
	// The next run waits at the gate again, without running the command.
	pool = g.start(ctx, "--on-empty", "terminate")
	poll(t, "a drone to hold the item again", func() bool {
		_, err := os.Stat(g.path("queues/work/claimed/" + g.id + ".md"))
		return err == nil
	})
	g.atGate()
	if got := g.runsOfCommand(); got != 1 {
		t.Fatalf("the command ran %d times once the item was claimed again, want 1", got)
	}
	g.ok("approve", g.id)
	exitsWithin(t, ctx, pool, "pool run after the approval", &g.stderr)
	if got := g.runsOfCommand(); got != 1 {
		t.Fatalf("the command ran %d times in all, want 1", got)
	}
	if got, want := g.git("show", "main:f.txt"), "f\n"; got != want {
		t.Fatalf("main:f.txt = %q, want %q (one run's commit)", got, want)
	}
	doc := g.read("queues/work/done/" + g.id + ".md")
	if !strings.Contains(doc, "merged:") || strings.Contains(doc, "work_done:") {
		t.Fatalf("the done item records no merge, or still says work_done:\n%s", doc)
	}
}

// The first Ctrl-C drains a pool: no new drones, running ones finish.
// A drone whose command has succeeded and that waits at a human gate runs
// nothing: it waits for a person. The pool stayed "draining" for as long
// as nobody decided (for ever, unattended). Now the first Ctrl-C also ends
// those waits: the item goes back to pending with its work done, the pool
// returns, and the next run waits at the gate again and merges after the
// approval, the command run once.
func TestPoolFirstInterruptLeavesGates(t *testing.T) {
	g := newGatedPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := g.start(ctx, "--on-empty", "terminate")
	g.atGate()
	drained := time.AfterFunc(20*time.Second, cancel) // still draining: a failure, not a hang
	pool.Process.Signal(syscall.SIGINT)
	exitsWithin(t, ctx, pool, "pool run after one Ctrl-C with a drone at a gate", &g.stderr)
	drained.Stop()
	if want := "1 item left at a human gate with the work done"; !strings.Contains(g.stdout.String(), want) {
		t.Errorf("pool run's report %q does not say %q", g.stdout.String(), want)
	}
	if _, err := os.Stat(g.path("queues/work/pending/" + g.id + ".md")); err != nil {
		t.Fatalf("the item is not back in pending: %v", err)
	}
	if got := g.agentState("drones-1"); got != "idle" {
		t.Fatalf("the drone is %s after the drain, want idle", got)
	}
	var gates []struct{ Item, Status string }
	g.json(&gates, "gate", "ls")
	if len(gates) != 1 || gates[0].Item != g.id {
		t.Fatalf("gates after the drain %+v, want the item's, still waiting", gates)
	}
	g.ok("approve", g.id)
	pool = g.start(ctx, "--on-empty", "terminate")
	exitsWithin(t, ctx, pool, "pool run after the approval", &g.stderr)
	if got := g.runsOfCommand(); got != 1 {
		t.Fatalf("the command ran %d times, want 1", got)
	}
	if _, err := os.Stat(g.path("queues/work/done/" + g.id + ".md")); err != nil {
		t.Fatalf("the item is not done: %v", err)
	}
}
