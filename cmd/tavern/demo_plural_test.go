package main

import (
	"testing"

	"github.com/tavernhq/tavern/agents"
)

// The workflow demo said "1 run failed and were retried": the verb must
// agree with the count the way the noun does.
func TestWorkflowPoolLineAgrees(t *testing.T) {
	for _, tc := range []struct {
		failed, worktrees int
		want              string
	}{
		{1, 0, "pool: 7 drones spawned (peak 3), 1 run failed and was retried; 0 worktrees left"},
		{2, 1, "pool: 7 drones spawned (peak 3), 2 runs failed and were retried; 1 worktree left"},
		{0, 0, "pool: 7 drones spawned (peak 3), 0 runs failed and were retried; 0 worktrees left"},
	} {
		got := workflowPoolLine(&agents.PoolMetrics{Spawned: 7, PeakDrones: 3, ItemsFailed: tc.failed}, tc.worktrees)
		if got != tc.want {
			t.Errorf("failed %d:\ngot  %q\nwant %q", tc.failed, got, tc.want)
		}
	}
}
