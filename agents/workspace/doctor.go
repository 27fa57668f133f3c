package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

// FindingOrphanWorktree is the doctor's finding for a worktree whose item
// is done, dead or gone: nothing will use it again, and worktrees are
// what fills disks.
const FindingOrphanWorktree = "orphan-worktree"

// FindingUnfinishedMerge is the doctor's finding for a merge record
// (merges/<id>.md) left at started, rebased, checked or landing by a
// merger of this host that died: until a merge of its base runs, the
// record says a merge is under way and its worktree may hold a half-done
// rebase or a git lock file.
const FindingUnfinishedMerge = "unfinished-merge"

// Doctor finds the orphan worktrees of the repository holding the store
// (opt.Repo; the base branch is not needed): those under opt.Root that
// List marks orphan, and worktrees recorded in done or dead items
// elsewhere (a --worktree-root of an earlier run) that git still lists
// and that are still on disk. Each finding's Repair removes the worktree
// like Prune (a merged item's branch goes too; a dead or missing item's
// stays). A store outside a git repository has none (nil, nil).
//
// It also finds the unfinished merges (FindingUnfinishedMerge) of any
// repository, whether or not the store is in one: see mergeFindings.
func Doctor(ctx context.Context, opt Options) ([]docstore.Finding, error) {
	out := mergeFindings(ctx, opt)
	w, err := openRepo(ctx, opt)
	if errors.Is(err, ErrConfig) {
		return out, nil // not a git repository: no worktrees
	}
	if err != nil {
		return out, err
	}
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
	if err := w.checkOwnBranch(path, branch, deleteBranch); err != nil {
		return err
	}
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

// unfinished are the statuses of a merge under way (recover's).
var unfinished = []string{"started", "rebased", "checked", "landing"}

// mergeFindings finds the merge records left unfinished by a merger of
// this host whose process is gone (the record's host and pid; a record of
// another host is left to a doctor there, as every liveness judgement).
// The detail says what the next merge of the base does with it, which is
// what the Repair does now: take the base's merge slot without waiting
// (busy: a merger runs and settles it itself) and run recover, the same
// code under the same slot, so a record whose base reached its head is
// marked landed and one whose base never moved is rolled back, its
// worktree's half-done rebase aborted and git's stale lock files removed.
func mergeFindings(ctx context.Context, opt Options) []docstore.Finding {
	host, _ := os.Hostname()
	docs, _ := opt.Broker.Store().List(schema.Merge) // a broken record is check's
	var out []docstore.Finding
	for _, d := range docs {
		status := d.String("status")
		pid64, _ := d.Int("pid")
		pid := int(pid64)
		if !slices.Contains(unfinished, status) || d.String("host") != host || pid <= 0 {
			continue
		}
		repo, base, old, head := d.String("repo"), d.String("base"), d.String("old"), d.String("head")
		if processAlive(pid) && mergerAlive(ctx, opt, repo, base) {
			continue
		}
		detail := fmt.Sprintf("merge of %s (item %s) into %s stopped at %s: its merger (pid %d) died; ",
			d.String("branch"), d.String("item"), base, status, pid)
		cur, err := git(ctx, repo, nil, "rev-parse", "--verify", "refs/heads/"+base)
		switch {
		case err != nil:
			detail += "the next merge of " + base + " in " + repo + " settles it (--fix does it now)"
		case head != "" && cur == head:
			detail += "the base is at its head, so it landed: the next merge of " + base + " marks it landed (--fix does it now)"
		case cur == old:
			detail += "the base never moved: the next merge of " + base + " rolls it back (--fix does it now)"
		default:
			detail += "the base has moved on: the next merge of " + base + " rolls it back (--fix does it now)"
		}
		rel := d.Path
		o := opt
		o.Repo, o.Base = repo, base
		out = append(out, docstore.Finding{Kind: FindingUnfinishedMerge, Path: rel, Detail: detail, Repair: func() error {
			return settle(ctx, o, rel)
		}})
	}
	return out
}

// settle runs recover for the repository and base of opt under the merge
// slot, taken without waiting: a slot that is held is a live merger's,
// which settles the record itself.
func settle(ctx context.Context, opt Options, rel string) error {
	w, err := openRepo(ctx, opt)
	if err != nil {
		return err
	}
	tok, err := w.opt.Space.TryAcquire(w.token, tuples.AcquireOptions{})
	if err != nil {
		return fmt.Errorf("%s: merge slot %s: %w (a merger that runs settles it)", rel, w.token, err)
	}
	defer tok.Release()
	return w.recover(ctx)
}

// mergerAlive says whether a merger of repo and base runs: whether the
// base's merge slot is held by a live holder. The record's pid alone is
// no proof (pids are reused, and a record outlives its merger), but every
// merger holds the slot while its record is unfinished. A slot that
// cannot be looked up (the repository is gone) counts as held, leaving
// the judgement to the pid, as before.
func mergerAlive(ctx context.Context, opt Options, repo, base string) bool {
	if opt.Space == nil {
		return true
	}
	o := opt
	o.Repo, o.Base = repo, base
	w, err := openRepo(ctx, o)
	if err != nil {
		return true
	}
	held, err := opt.Space.HeldLive(w.token)
	return err != nil || held
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
