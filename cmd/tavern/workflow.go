package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/workspace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
	"github.com/tavernhq/tavern/queues/tuples"
)

// Shared by the workflow commands (plan, gate, approve, reject, budget,
// usage, trace, workspace) and the --worktree options of spawn and pool.

// worktreeFlags are the workspace and merge-queue options of spawn and
// pool run.
func worktreeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "worktree", Usage: "run the drone in its item's own git worktree and merge its branch through the merge queue when it succeeds"},
		&cli.StringFlag{Name: "base", Value: "main", Usage: "with --worktree: the `BRANCH` worktrees start from and merges land on"},
		&cli.StringFlag{Name: "repo", Usage: "with --worktree: a `DIR` in the git repository (default: the project directory)"},
		&cli.StringFlag{Name: "merge-mode", Value: "rebase", Usage: "with --worktree: rebase | merge (how a branch comes onto the base)"},
		&cli.StringFlag{Name: "check", Usage: "with --worktree: shell `CMD` run in the worktree after the rebase; the base moves only if it exits 0"},
		&cli.DurationFlag{Name: "check-timeout", Value: 10 * time.Minute, Usage: "with --worktree: how long --check may run", Action: positiveDur("check-timeout", "--check would be killed before it runs")},
		&cli.IntFlag{Name: "max-worktrees", Value: 64, Usage: "with --worktree: most worktrees at once (orphans are pruned first)", Action: atLeastOne("max-worktrees", "no worktree could be made")},
		&cli.StringFlag{Name: "worktree-root", Usage: "with --worktree: where worktrees go (default <git dir>/tavern/worktrees)"},
	}
}

// worktreeArgs passes the workspace options of `pool run` on to its
// drones' `tavern spawn`.
func worktreeArgs(c *cli.Context) []string {
	if !c.Bool("worktree") {
		return nil
	}
	args := []string{"--worktree", "--base", c.String("base"), "--merge-mode", c.String("merge-mode"),
		"--check-timeout", c.Duration("check-timeout").String(), "--max-worktrees", fmt.Sprint(c.Int("max-worktrees"))}
	for _, f := range []string{"repo", "check", "worktree-root"} {
		if v := c.String(f); v != "" {
			args = append(args, "--"+f, v)
		}
	}
	return args
}

// openWorkspaces opens the workspaces of the --repo and --base options.
func openWorkspaces(c *cli.Context, s *docstore.Store, b *queues.Broker) (*workspace.Workspaces, error) {
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{Journal: b.Journal()})
	if err != nil {
		return nil, err
	}
	return workspace.Open(context.Background(), workspace.Options{Repo: c.String("repo"), Base: c.String("base"), Root: c.String("worktree-root"),
		Mode: c.String("merge-mode"), Check: c.String("check"), CheckTimeout: c.Duration("check-timeout"), MaxWorktrees: c.Int("max-worktrees"),
		Broker: b, Space: sp})
}

// spawnHooks are the hooks every queue spawn gets: the item's plan
// follows it, and with --worktree the workspace and merge queue.
func spawnHooks(c *cli.Context, s *docstore.Store, b *queues.Broker) ([]agents.SpawnHooks, error) {
	var hooks []agents.SpawnHooks
	if c.Bool("worktree") {
		ws, err := openWorkspaces(c, s, b)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, ws.Hooks())
	}
	hooks = append(hooks, agents.SpawnHooks{Exit: func(run *agents.Run, _ *agents.SpawnResult) error {
		if run.Claim == nil {
			return nil
		}
		_, err := plans.SyncItem(b, run.Claim.ItemID())
		return err
	}})
	return hooks, nil
}

// decider names the person deciding at a gate (agents.ResolvePerson).
func decider(c *cli.Context) string { return agents.ResolvePerson(c.String("by")) }
