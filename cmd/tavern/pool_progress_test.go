package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

// Without a terminal (CI logs, a file) the progress line is a log line:
// throttled while the pool runs, and printed at once when its state
// changes. It printed every tick of a draining pool (the throughput decays
// at each one, so each line differs): a line a second for as long as the
// last drone worked, an hour of agent work 3,600 lines.
func TestProgressLineNotTerminalDraining(t *testing.T) {
	var buf bytes.Buffer
	app := &cli.App{Writer: &bytes.Buffer{}, ErrWriter: &buf}
	c := cli.NewContext(app, flag.NewFlagSet("pool", flag.ContinueOnError), nil)
	show, end := progressLine(c)
	m := agents.PoolMetrics{Name: "coders", State: "running", Drones: 1, Claimed: 1, Throughput: 5}
	show(m)
	m.State = "draining"
	for i := range 10 {
		m.Throughput = 4 - float64(i)/10
		show(m)
	}
	m.State = "stopped"
	show(m)
	end()
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3 (running, draining, stopped):\n%s", len(got), buf.String())
	}
	for i, want := range []string{"coders running", "coders draining", "coders stopped"} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("line %d: got %q, want it to start %q", i+1, got[i], want)
		}
	}
}
