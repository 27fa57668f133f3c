package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// FindingOrphanWorktree is the doctor's finding for a worktree whose item
// is done, dead or gone: nothing will use it again, and worktrees are
// what fills disks.
const FindingOrphanWorktree = "orphan-worktree"

// Doctor finds the orphan worktrees of the repository holding the store
// (opt.Repo; the base branch is not needed): those under opt.Root that
// List marks orphan, and worktrees recorded in done or dead items
// elsewhere (a --worktree-root of an earlier run) that git still lists
// and that are still on disk. Each finding's Repair removes the worktree
// like Prune (a merged item's branch goes too; a dead or missing item's
// stays). A store outside a git repository has none (nil, nil).
func Doctor(ctx context.Context, opt Options) ([]docstore.Finding, error) {
	w, err := openRepo(ctx, opt)
	if errors.Is(err, ErrConfig) {
		return nil, nil // not a git repository: no worktrees
	}
	if err != nil {
		return nil, err
	}
	var out []docstore.Finding
	seen := map[string]bool{}
	if _, err := os.Stat(w.root); err == nil {
		list, err := w.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			seen[filepath.Clean(e.Path)] = true
			if e.Orphan {
				out = append(out, w.finding(ctx, e.Path, e.Branch, e.Item, e.ItemState, e.Bytes))
			}
		}
	}
	recorded, err := w.recordedOrphans(ctx, seen)
	return append(out, recorded...), err
}

func (w *Workspaces) finding(ctx context.Context, path, branch, item, state string, size int64) docstore.Finding {
	detail := fmt.Sprintf("item %s is %s; %s on disk", item, state, humanBytes(size))
	if branch != "" {
		detail += "; branch " + branch
		if state == queues.Done {
			detail += " (merged: removed with it)"
		} else {
			detail += " (kept)"
		}
	}
	return docstore.Finding{Kind: FindingOrphanWorktree, Path: path, Detail: detail, Repair: func() error {
		return w.remove(ctx, path, branch, state == queues.Done)
	}}
}

// remove is Remove for a worktree under Root or, outside it, one git
// lists as a worktree of this repository (never any other directory).
func (w *Workspaces) remove(ctx context.Context, path, branch string, deleteBranch bool) error {
	if strings.HasPrefix(filepath.Clean(path)+string(filepath.Separator), w.root+string(filepath.Separator)) {
		return w.Remove(ctx, path, branch, deleteBranch)
	}
	list, err := w.worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range list {
		if samePath(wt.path, path) && !samePath(wt.path, w.top) {
			if _, err := git(ctx, w.top, nil, "worktree", "remove", "--force", path); err != nil {
				return err
			}
			if deleteBranch && branch != "" {
				_, _ = git(ctx, w.top, nil, "branch", "-D", branch)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not a worktree of %s", ErrConfig, path, w.top)
}

// recordedOrphans finds done and dead items whose worktree: (outside the
// paths already seen) still exists and is a worktree of the repository.
func (w *Workspaces) recordedOrphans(ctx context.Context, seen map[string]bool) ([]docstore.Finding, error) {
	s := w.opt.Broker.Store()
	names, err := w.opt.Broker.QueueNames()
	if err != nil {
		return nil, err
	}
	var known []worktree
	listed := false
	var out []docstore.Finding
	for _, q := range names {
		for _, state := range []string{queues.Done, queues.Dead} {
			paths, err := s.Docs("queues/" + q + "/" + state)
			if err != nil {
				continue
			}
			for _, rel := range paths {
				// Most items never had a worktree: look at the bytes first.
				data, err := os.ReadFile(filepath.Join(s.Root(), rel))
				if err != nil || !bytes.Contains(data, []byte("\nworktree: ")) {
					continue
				}
				d, err := s.Get(rel)
				if err != nil {
					continue
				}
				path := d.String("worktree")
				if path == "" || seen[filepath.Clean(path)] {
					continue
				}
				if _, err := os.Stat(path); err != nil {
					continue
				}
				if !listed {
					if known, err = w.worktrees(ctx); err != nil {
						return out, err
					}
					listed = true
				}
				for _, wt := range known {
					if samePath(wt.path, path) && !samePath(wt.path, w.top) {
						seen[filepath.Clean(path)] = true
						out = append(out, w.finding(ctx, path, d.String("branch"), d.String("id"), state, dirSize(path)))
						break
					}
				}
			}
		}
	}
	return out, nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
