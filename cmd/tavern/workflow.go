package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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
		&cli.StringFlag{Name: "merge-mode", Value: "rebase", Usage: "with --worktree: rebase | merge (how a branch comes onto the base)", Action: choiceGiven("merge-mode", "rebase or merge")},
		&cli.StringFlag{Name: "check", Usage: "with --worktree: shell `CMD` run in the worktree after the rebase; the base moves only if it exits 0"},
		&cli.DurationFlag{Name: "check-timeout", Value: 10 * time.Minute, Usage: "with --worktree: how long --check may run", Action: positiveDur("check-timeout", "--check would be killed before it runs")},
		&cli.IntFlag{Name: "max-worktrees", Value: 64, Usage: "with --worktree: most worktrees at once (orphans are pruned first)", Action: atLeastOne("max-worktrees", "no worktree could be made")},
		&cli.StringFlag{Name: "worktree-root", Usage: "with --worktree: where worktrees go (default <git dir>/tavern/worktrees)"},
		&cli.StringFlag{Name: "max-disk", Value: "20G", Usage: "with --worktree: most `SIZE` all worktrees may take (K, M, G, T: powers of 1024; none: no bound); orphans are pruned first"},
	}
}

// worktreeAlone refuses a workspace option given without --worktree: it
// would be ignored without a word (a --check that never runs, an item
// done with nothing merged).
func worktreeAlone(c *cli.Context) error {
	if c.Bool("worktree") {
		return nil
	}
	for _, f := range worktreeFlags()[1:] {
		if n := f.Names()[0]; c.IsSet(n) {
			return usageErr("--%s only applies with --worktree (the item's own worktree and the merge queue): add --worktree, or leave --%s out", n, n)
		}
	}
	return nil
}

// parseSize reads a byte size: a number with an optional K, M, G or T
// (powers of 1024, an optional B or iB after it), or "none" (-1: no
// bound; "": 0, the default).
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	switch t {
	case "NONE":
		return -1, nil
	case "":
		return 0, nil // the default (workspace.DefaultMaxDisk)
	}
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err == nil && v == 0 {
		return 0, usageErr("--max-disk %s: no worktree would fit; give a size, or none for no bound", s)
	}
	if err != nil || v < 0 {
		return 0, usageErr("bad size %q (want e.g. 500M, 20G, or none)", s)
	}
	return int64(v * float64(mult)), nil
}

// worktreeArgs passes the workspace options of `pool run` on to its
// drones' `tavern spawn`.
func worktreeArgs(c *cli.Context) []string {
	if !c.Bool("worktree") {
		return nil
	}
	args := []string{"--worktree", "--base", c.String("base"), "--merge-mode", c.String("merge-mode"),
		"--check-timeout", c.Duration("check-timeout").String(), "--max-worktrees", fmt.Sprint(c.Int("max-worktrees"))}
	for _, f := range []string{"repo", "check", "worktree-root", "max-disk"} {
		if v := c.String(f); v != "" {
			args = append(args, "--"+f, v)
		}
	}
	return args
}

// openWorkspaces opens the workspaces of the --repo and --base options.
func openWorkspaces(c *cli.Context, s *docstore.Store, b *queues.Broker) (*workspace.Workspaces, error) {
	maxDisk, err := parseSize(c.String("max-disk"))
	if err != nil {
		return nil, err
	}
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{Journal: b.Journal()})
	if err != nil {
		return nil, err
	}
	return workspace.Open(context.Background(), workspace.Options{Repo: c.String("repo"), Base: c.String("base"), Root: c.String("worktree-root"),
		Mode: c.String("merge-mode"), Check: c.String("check"), CheckTimeout: c.Duration("check-timeout"), MaxWorktrees: c.Int("max-worktrees"),
		MaxDisk: maxDisk, Broker: b, Space: sp})
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
		// A relative command the base does not hold cannot start in the
		// item's worktree: refused before an agent, a claim and a
		// worktree are made for nothing (exit 3, as pool run's check).
		if err := ws.CommandFound(c.Context, "spawn", c.Args().First()); err != nil {
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
