package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// Hooks are the spawn hooks of `--worktree`: the drone runs in its
// item's worktree; when it succeeds (and the item passed its gates) the
// branch goes through the merge queue; a merged worktree is removed with
// its branch, a dead item's worktree is removed and its branch kept.
func (w *Workspaces) Hooks() agents.SpawnHooks {
	b := w.opt.Broker
	return agents.SpawnHooks{
		Prepare: func(ctx context.Context, run *agents.Run) error {
			it, err := b.Get(run.Claim.ItemID())
			if err != nil {
				return err
			}
			if rec, _ := w.Landed(it.ID); rec != nil {
				return &agents.AlreadyDone{Result: fmt.Sprintf("merged into %s as %s (%s; landed before its wrapper died)", w.opt.Base, short(rec.String("head")), rec.Path)}
			}
			ws, err := w.Prepare(ctx, it)
			if err != nil {
				return err
			}
			run.Dir = ws.Path
			run.Env = append(run.Env, "TAVERN_WORKTREE="+ws.Path, "TAVERN_BRANCH="+ws.Branch, "TAVERN_BASE="+w.opt.Base, "TAVERN_REPO="+w.top)
			return nil
		},
		Finish: func(ctx context.Context, run *agents.Run) error {
			it, err := b.Get(run.Claim.ItemID())
			if err != nil {
				return err
			}
			if it.Worktree == "" {
				return fmt.Errorf("%w: item %s has no worktree", ErrConfig, it.ID)
			}
			res, err := w.Merge(ctx, MergeRequest{Item: it.ID, Queue: it.Queue, Agent: run.Agent, Title: it.Title, Worktree: it.Worktree, Branch: it.Branch})
			if err != nil {
				return err
			}
			if _, err := b.Annotate(it.ID, []docstore.Field{{Key: "merged", Value: res.Head}}); err != nil {
				return err
			}
			line := fmt.Sprintf("merged into %s as %s", w.opt.Base, short(res.Head))
			if res.NoChange {
				line = "nothing to merge (no changes on " + it.Branch + ")"
			}
			run.Result = strings.TrimSpace(line + "\n" + run.Result)
			// Merged: the worktree and its branch have served. Landed
			// work is done even if the wrapper is being interrupted.
			return w.Remove(context.WithoutCancel(ctx), it.Worktree, it.Branch, true)
		},
		Exit: func(run *agents.Run, res *agents.SpawnResult) error {
			if run.Claim == nil || res.Outcome != agents.OutcomeFailed {
				return nil
			}
			it, err := b.Get(run.Claim.ItemID())
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || it.State != queues.Dead || it.Worktree == "" {
				return err
			}
			// Dead: the worktree goes (disk), the branch stays for a person.
			return w.Remove(context.Background(), it.Worktree, it.Branch, false)
		},
	}
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}
