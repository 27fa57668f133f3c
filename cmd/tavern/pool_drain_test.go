package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Once a pool drains (its first Ctrl-C), none of its drones claims a new
// item: an idle drone (--on-empty idle) ends its wait and exits, so an
// item added during the drain stays pending and the pool returns. Idle
// drones went on waiting for up to --idle-wait: one took the item added
// after the Ctrl-C and ran the command, the others held the drain (and
// the pool) for the rest of their wait.
func TestPoolDrainClaimsNothingNew(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "work")
	runs := filepath.Join(t.TempDir(), "runs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := p.cmd(ctx, tavernBin(t), "pool", "run", "idlers", "--queue", "work", "--on-empty", "idle", "--min", "2", "--max", "2",
		"--idle-wait", "10m", "--json", "--", "sh", "-c", `echo ran >> "$RUNS"`)
	pool.Env = append(pool.Env, "RUNS="+runs)
	var stdout, stderr bytes.Buffer
	pool.Stdout, pool.Stderr = &stdout, &stderr
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	var drones []int
	poll(t, "the pool's two drones to start", func() bool {
		drones = childPids(pool.Process.Pid)
		return len(drones) == 2
	})
	waitBlocked(t, drones) // each waits for an item

	pool.Process.Signal(syscall.SIGINT)
	// Draining, or past it: drones that end their idle wait at once can
	// take the document from draining to stopped between two looks (the
	// bug kept it draining for the idle wait, so this still sees it).
	poll(t, "the pool document to say draining (or stopped)", func() bool {
		doc := p.read("pools/idlers.md")
		return strings.Contains(doc, "\nstate: draining\n") || strings.Contains(doc, "\nstate: stopped\n")
	})
	id := strings.TrimSpace(p.ok("queue", "add", "work", "--title", "after the drain"))

	drained := time.AfterFunc(20*time.Second, cancel) // still draining: a failure, not a hang
	exitsWithin(t, ctx, pool, "pool run drained with idle drones", &stderr)
	drained.Stop()
	if _, err := os.Stat(p.path("queues/work/pending/" + id + ".md")); err != nil {
		t.Errorf("the item added during the drain is not pending: %v", err)
	}
	if _, err := os.Stat(runs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a drone ran the command during the drain (runs: %v)", err)
	}
	var mt struct {
		State     string `json:"state"`
		ItemsDone int    `json:"items_done"`
		Pending   int    `json:"pending"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &mt); err != nil {
		t.Fatalf("pool run --json: %v\n%s", err, stdout.String())
	}
	if mt.State != "stopped" || mt.ItemsDone != 0 {
		t.Errorf("pool run --json = %+v, want stopped with nothing done", mt)
	}
}
