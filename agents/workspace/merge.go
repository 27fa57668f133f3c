package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Merge event types.
const (
	EventMergeStarted   = "merge.started"
	EventMergeLanded    = "merge.landed"
	EventMergeFailed    = "merge.failed"
	EventMergeRecovered = "merge.recovered" // a dead merger's merge, rolled back or resumed
)

// MergeRequest is an item whose drone succeeded, to be merged.
type MergeRequest struct {
	Item     string
	Queue    string
	Agent    string
	Title    string
	Worktree string
	Branch   string
}

// MergeResult is a merge that landed (or had nothing to land).
type MergeResult struct {
	Record   string `json:"record"` // merges/<id>.md
	Old      string `json:"old"`    // the base before
	Head     string `json:"head"`   // the base after
	NoChange bool   `json:"no_change,omitempty"`
	Output   string `json:"output,omitempty"` // the check's output
}

// MergePath is the document path of a merge record.
func MergePath(id string) string { return "merges/" + id + ".md" }

// Merge takes the merge slot of the base (a resource token with one
// slot: merges of one base happen one at a time, in the order the slot's
// waiters get it), finishes or rolls back what a merger that died left,
// then brings the item's branch onto the base (rebase or merge), runs the
// check command in the worktree and moves the base to the result.
//
// The base only ever moves by a compare-and-swap from the commit the
// merge started from to a commit that passed the check (git update-ref
// NEW OLD, or git merge --ff-only in the base's own checkout), so it is
// never left half-merged. Every step is first written to the merge
// record (merges/<id>.md), which is how the next merger knows what a
// killed one was doing (see recover).
//
// A conflict or a failing check is a *MergeError (ErrConflict,
// ErrCheck) with the output; the caller fails the item with it. A
// context that ends during the check stops it (ErrInterrupted: the spawn
// wrapper releases the item); once the base is being moved, the merge
// finishes whatever the context.
func (w *Workspaces) Merge(ctx context.Context, req MergeRequest) (*MergeResult, error) {
	// Only a worktree of Tavern's, never the base: one edited into the
	// item while its drone ran would have its leftovers (add -A) and
	// rebase done in the user's checkout.
	if !w.under(req.Worktree) || strings.TrimPrefix(req.Branch, "refs/heads/") == w.opt.Base {
		return nil, fmt.Errorf("%w: item %s: %s on branch %s is not a worktree of its own (under %s, off the base %s)", ErrConfig, req.Item, req.Worktree, req.Branch, w.root, w.opt.Base)
	}
	tok, err := w.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer tok.Release()
	if err := w.recover(ctx); err != nil {
		return nil, err
	}
	if err := w.commitLeftovers(ctx, req); err != nil {
		return nil, err
	}
	var rec *docstore.Doc
	for round := 0; ; round++ {
		res, next, err := w.mergeOnce(ctx, req, rec)
		if err == nil || next == nil || round >= 3 {
			return res, err
		}
		rec = next // the base moved under us (by hand): go again
	}
}

// acquire takes the merge slot, making the token on first use.
func (w *Workspaces) acquire(ctx context.Context) (*tuples.Token, error) {
	tok, err := w.opt.Space.TryAcquire(w.token, tuples.AcquireOptions{})
	if errors.Is(err, tuples.ErrUnknownToken) {
		// New: the name is derived (merge-BASE-HASH), never typed, and may
		// be near another repository's merge token.
		if _, err := w.opt.Space.InitTokenWith(w.token, 1, tuples.InitTokenOptions{New: true}); err != nil {
			return nil, err
		}
	}
	if err == nil {
		return tok, nil
	}
	return w.opt.Space.Acquire(ctx, w.token, tuples.AcquireOptions{})
}

// commitLeftovers commits what the drone changed but did not commit.
func (w *Workspaces) commitLeftovers(ctx context.Context, req MergeRequest) error {
	st, err := git(ctx, req.Worktree, nil, "status", "--porcelain")
	if err != nil || st == "" {
		return err
	}
	if _, err := git(ctx, req.Worktree, nil, "add", "-A"); err != nil {
		return err
	}
	env := append([]string{"GIT_AUTHOR_NAME=" + orDefault(req.Agent, "tavern"), "GIT_AUTHOR_EMAIL=" + orDefault(req.Agent, "tavern") + "@tavern"}, w.ident...)
	msg := fmt.Sprintf("%s\n\nTavern item %s (left uncommitted by %s)", orDefault(req.Title, req.Item), req.Item, orDefault(req.Agent, "its drone"))
	_, err = git(ctx, req.Worktree, env, "commit", "--quiet", "--no-verify", "-m", msg)
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// mergeOnce runs one merge attempt. When the base moved between the
// start and the compare-and-swap (someone else moved it), it returns the
// record as next, to go again.
func (w *Workspaces) mergeOnce(ctx context.Context, req MergeRequest, prev *docstore.Doc) (*MergeResult, *docstore.Doc, error) {
	base := "refs/heads/" + w.opt.Base
	old, err := git(ctx, w.top, nil, "rev-parse", "--verify", base)
	if err != nil {
		return nil, nil, err
	}
	rec, err := w.newRecord(req, old)
	if err != nil {
		return nil, nil, err
	}
	fail := func(e *MergeError) (*MergeResult, *docstore.Doc, error) {
		e.Item, e.Record = req.Item, rec.Path
		reason := e.Err.Error()
		if len(e.Files) > 0 {
			reason += " in " + strings.Join(e.Files, ", ")
		}
		w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "failed"}, {Key: "reason", Value: reason}, {Key: "finished", Value: time.Now()}}, e.Output)
		w.event(EventMergeFailed, rec.Path, req, map[string]any{"reason": reason, "old": old})
		return nil, nil, e
	}
	// Onto the base, in the worktree: the base itself is not touched.
	ident := w.ident
	if w.opt.Mode == "rebase" {
		if out, err := git(ctx, req.Worktree, ident, "rebase", w.opt.Base); err != nil {
			files := conflicted(ctx, req.Worktree)
			_, _ = git(ctx, req.Worktree, nil, "rebase", "--abort")
			return fail(&MergeError{Files: files, Output: out + "\n" + gitOutput(err), Err: ErrConflict})
		}
	} else {
		msg := fmt.Sprintf("Merge %s into %s\n\nTavern item %s", w.opt.Base, req.Branch, req.Item)
		if out, err := git(ctx, req.Worktree, ident, "merge", "--no-edit", "-m", msg, w.opt.Base); err != nil {
			files := conflicted(ctx, req.Worktree)
			_, _ = git(ctx, req.Worktree, nil, "merge", "--abort")
			return fail(&MergeError{Files: files, Output: out + "\n" + gitOutput(err), Err: ErrConflict})
		}
	}
	head, err := git(ctx, req.Worktree, nil, "rev-parse", "HEAD")
	if err != nil {
		return nil, nil, err
	}
	if head == old {
		w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "landed"}, {Key: "head", Value: head}, {Key: "reason", Value: "no changes"}, {Key: "finished", Value: time.Now()}}, "")
		w.event(EventMergeLanded, rec.Path, req, map[string]any{"old": old, "head": head, "no_change": true})
		return &MergeResult{Record: rec.Path, Old: old, Head: head, NoChange: true}, nil, nil
	}
	if _, err := git(ctx, w.top, nil, "merge-base", "--is-ancestor", old, head); err != nil {
		return fail(&MergeError{Output: fmt.Sprintf("%s is not on top of %s %s", head, w.opt.Base, old), Err: ErrConflict})
	}
	if err := w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "rebased"}, {Key: "head", Value: head}}, ""); err != nil {
		return nil, nil, err
	}
	// The check, in the worktree.
	out := ""
	if w.opt.Check != "" {
		code, o, err := w.runCheck(ctx, req)
		out = o
		if err != nil {
			return nil, nil, err
		}
		if code != 0 {
			return fail(&MergeError{Code: code, Output: out, Err: ErrCheck})
		}
		if err := w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "checked"}, {Key: "exit_code", Value: 0}}, out); err != nil {
			return nil, nil, err
		}
	}
	// Land: compare-and-swap the base from old to head.
	checkout, err := w.baseCheckout(ctx)
	if err != nil {
		return nil, nil, err
	}
	if checkout != "" {
		args := append([]string{"status", "--porcelain", "--untracked-files=no"}, w.notStore(checkout)...)
		if st, err := git(ctx, checkout, nil, args...); err != nil || st != "" {
			if err != nil {
				return nil, nil, err
			}
			return fail(&MergeError{Output: fmt.Sprintf("%s has uncommitted changes:\n%s", checkout, st), Err: ErrBaseBusy})
		}
	}
	if err := w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "landing"}}, ""); err != nil {
		return nil, nil, err
	}
	// The compare-and-swap and its verdict are not interrupted: a git
	// killed after it moved the base would leave a landed merge that its
	// item reports as not done.
	ctx = context.WithoutCancel(ctx)
	if checkout != "" {
		cur, _ := git(ctx, checkout, nil, "rev-parse", "HEAD")
		if cur != old {
			err = fmt.Errorf("base moved")
		} else {
			_, err = git(ctx, checkout, w.ident, "merge", "--ff-only", "--quiet", head)
		}
	} else {
		_, err = git(ctx, w.top, nil, "update-ref", "-m", "tavern merge "+req.Item, base, head, old)
	}
	if err != nil {
		now, rerr := git(ctx, w.top, nil, "rev-parse", "--verify", base)
		if rerr == nil && now != old && now != head {
			// Someone moved the base meanwhile: this record is over, go
			// again on the new base.
			w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "rolled_back"}, {Key: "reason", Value: "the base moved to " + now + " during the merge"}, {Key: "finished", Value: time.Now()}}, "")
			return nil, rec, fmt.Errorf("base %s moved during the merge: %w", w.opt.Base, err)
		}
		if rerr == nil && now == old {
			// The base did not move: its checkout refused the
			// fast-forward (an untracked file of the user's where the
			// branch adds one) or the ref was locked. The merge failed
			// here, as over local changes; left at landing, it would
			// read as a merger that died mid-way.
			out := gitOutput(err)
			return fail(&MergeError{Files: tabbed(out), Output: out, Err: ErrBaseBusy})
		}
		if rerr != nil || now != head {
			return nil, nil, err
		}
	}
	if err := w.setRecord(rec.Path, []docstore.Field{{Key: "status", Value: "landed"}, {Key: "finished", Value: time.Now()}}, ""); err != nil {
		return nil, nil, err
	}
	w.event(EventMergeLanded, rec.Path, req, map[string]any{"old": old, "head": head})
	return &MergeResult{Record: rec.Path, Old: old, Head: head, Output: out}, nil, nil
}

// notStore is the pathspec of checkout without the store: a store that is
// committed (as tavern init's .gitignore suggests) changes at every
// command Tavern runs, its journal first; those changes are Tavern's own,
// not local changes of the user's that a fast-forward could run over.
func (w *Workspaces) notStore(checkout string) []string {
	root := w.opt.Broker.Store().Root()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if c, err := filepath.EvalSymlinks(checkout); err == nil {
		checkout = c
	}
	rel, err := filepath.Rel(checkout, root)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return []string{"--", ".", ":(exclude)" + filepath.ToSlash(rel)}
}

// tabbed is the lines git indents with a tab: the files it names after
// "would be overwritten by merge:".
func tabbed(out string) []string {
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(l, "\t"); ok && strings.TrimSpace(f) != "" {
			files = append(files, strings.TrimSpace(f))
		}
	}
	return files
}

func gitOutput(err error) string {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.Output
	}
	return err.Error()
}

// conflicted lists the files in conflict in a worktree.
func conflicted(ctx context.Context, dir string) []string {
	out, err := git(ctx, dir, nil, "diff", "--name-only", "--diff-filter=U")
	if err != nil || out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// runCheck runs the check command in the worktree, in its own process
// group (killed whole on timeout), and returns its exit status and the
// end of its output. The check runs under agents.GroupGuard with
// Pdeathsig: a merger that dies (SIGKILL) takes the check's whole group
// with it, which would otherwise run on in the worktree after the merge
// slot came back to the next merger (who rolls that merge back).
func (w *Workspaces) runCheck(ctx context.Context, req MergeRequest) (int, string, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, w.opt.CheckTimeout)
	defer cancel()
	cmd := exec.Command("/bin/sh", "-c", agents.GroupGuard, "sh", w.opt.Check)
	cmd.Dir = req.Worktree
	cmd.Env = append(os.Environ(), "TAVERN_ITEM="+req.Item, "TAVERN_BRANCH="+req.Branch, "TAVERN_BASE="+w.opt.Base, "TAVERN_WORKTREE="+req.Worktree)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	// Linux sends Pdeathsig when the forking thread ends, not the
	// process: start and wait on one locked thread.
	started, done := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return 0, "", err
	}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		o := tailString(out.String(), 64<<10)
		if parent.Err() != nil { // not the timeout: the merger was interrupted
			return 0, o, &MergeError{Item: req.Item, Output: o, Err: fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(parent))}
		}
		return 124, o + fmt.Sprintf("\n[check stopped after %s]", w.opt.CheckTimeout), nil
	}
	o := tailString(out.String(), 64<<10)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return max(ee.ExitCode(), 1), o, nil
	}
	return 0, o, err
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// newRecord writes merges/<id>.md for a merge starting from old.
func (w *Workspaces) newRecord(req MergeRequest, old string) (*docstore.Doc, error) {
	host, _ := os.Hostname()
	fields := []docstore.Field{{Key: "item", Value: req.Item}, {Key: "queue", Value: req.Queue}}
	if req.Agent != "" {
		fields = append(fields, docstore.Field{Key: "agent", Value: req.Agent})
	}
	fields = append(fields, docstore.Field{Key: "repo", Value: w.top}, docstore.Field{Key: "base", Value: w.opt.Base},
		docstore.Field{Key: "branch", Value: req.Branch}, docstore.Field{Key: "worktree", Value: req.Worktree},
		docstore.Field{Key: "mode", Value: w.opt.Mode}, docstore.Field{Key: "status", Value: "started"}, docstore.Field{Key: "old", Value: old})
	if w.opt.Check != "" {
		fields = append(fields, docstore.Field{Key: "check", Value: w.opt.Check})
	}
	fields = append(fields, docstore.Field{Key: "pid", Value: os.Getpid()}, docstore.Field{Key: "host", Value: host})
	s := w.opt.Broker.Store()
	id := docstore.NewID()
	now := time.Now()
	all := append([]docstore.Field{{Key: schema.VersionField, Value: schema.Merge.Version}, {Key: "id", Value: id}}, fields...)
	all = append(all, docstore.Field{Key: "created", Value: now}, docstore.Field{Key: "updated", Value: now})
	d, err := docstore.New(schema.Merge, all, []byte(fmt.Sprintf("\nMerge of %s (item %s) into %s.\n", req.Branch, req.Item, w.opt.Base)))
	if err != nil {
		return nil, err
	}
	if err := s.Create(MergePath(id), d); err != nil {
		return nil, err
	}
	w.event(EventMergeStarted, d.Path, req, map[string]any{"old": old, "branch": req.Branch})
	return d, nil
}

// setRecord updates a merge record; output, if any, becomes its
// "## Output" section.
func (w *Workspaces) setRecord(rel string, fields []docstore.Field, output string) error {
	fields = append(fields, docstore.Field{Key: "updated", Value: time.Now()})
	_, err := w.opt.Broker.Store().Update(rel, func(d *docstore.Doc) error {
		if output != "" {
			body := string(d.Body())
			if i := strings.Index(body, "\n## Output\n"); i >= 0 {
				body = body[:i+1]
			}
			d.SetBody([]byte(body + "\n## Output\n\n```\n" + strings.TrimRight(output, "\n") + "\n```\n"))
		}
		return d.SetMany(fields)
	})
	return err
}

func (w *Workspaces) event(typ, path string, req MergeRequest, data map[string]any) {
	data["base"] = w.opt.Base
	_, _ = w.opt.Broker.Journal().Append(journal.Event{Type: typ, Kind: "merge", Path: path, Item: req.Item, Queue: req.Queue, Agent: req.Agent, Data: data})
}

// Records lists the merge records of this repository and base, oldest
// first (optionally only those of item).
func (w *Workspaces) Records(item string) ([]*docstore.Doc, error) {
	docs, errs := w.opt.Broker.Store().List(schema.Merge)
	var out []*docstore.Doc
	for _, d := range docs {
		if d.String("repo") != w.top || d.String("base") != w.opt.Base || (item != "" && d.String("item") != item) {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// recover settles the merges a dead merger left unfinished. It runs with
// the merge slot held, so every unfinished record is a dead merger's
// (the slot came back when its process died):
//
//   - the base is at the record's head: the merge landed before the
//     merger died; the record is marked landed (resumed) and the item's
//     next claim completes it without running its drone again;
//   - the base is still at the record's old commit: nothing landed; a
//     rebase or merge left half-done in the worktree is aborted, a lock
//     file left by a killed git is removed, and a base checkout that a
//     killed fast-forward left half-updated is reset to the base; the
//     record is marked rolled_back and the item goes back through its
//     retries as any failure;
//   - the base moved elsewhere (by hand): rolled back, with that reason.
func (w *Workspaces) recover(ctx context.Context) error {
	recs, err := w.Records("")
	if err != nil && len(recs) == 0 {
		return err
	}
	base := "refs/heads/" + w.opt.Base
	for _, d := range recs {
		status := d.String("status")
		switch status {
		case "started", "rebased", "checked", "landing":
		default:
			continue
		}
		// Locks first: a git the dead merger started may still be
		// finishing (it was orphaned, not killed); one that was killed
		// left its lock for good.
		w.removeStaleLock(filepath.Join(w.common, filepath.FromSlash(base)+".lock"))
		checkout, _ := w.baseCheckout(ctx)
		if checkout != "" {
			if p, err := git(ctx, checkout, nil, "rev-parse", "--path-format=absolute", "--git-path", "index.lock"); err == nil {
				w.removeStaleLock(p)
			}
		}
		cur, err := git(ctx, w.top, nil, "rev-parse", "--verify", base)
		if err != nil {
			return err
		}
		req := MergeRequest{Item: d.String("item"), Queue: d.String("queue"), Agent: d.String("agent"), Branch: d.String("branch"), Worktree: d.String("worktree")}
		head, old := d.String("head"), d.String("old")
		var fields []docstore.Field
		var how string
		switch {
		case head != "" && cur == head:
			how = "resumed: the base is at the merge's head, it landed"
			fields = []docstore.Field{{Key: "status", Value: "landed"}, {Key: "reason", Value: "merger died after the base moved; resumed"}}
		case cur == old:
			how = "rolled back: the base is where the merge started"
			fields = []docstore.Field{{Key: "status", Value: "rolled_back"}, {Key: "reason", Value: "merger died at " + status + "; the base never moved"}}
			if checkout != "" && status == "landing" {
				// A killed git merge --ff-only may have written part of
				// the checkout: it was clean before (checked under the
				// slot), so put it back, but for a committed store, whose
				// changes are Tavern's writes since (see notStore).
				w.restoreCheckout(ctx, checkout, old, head)
			}
		default:
			how = "rolled back: the base moved on to " + cur
			fields = []docstore.Field{{Key: "status", Value: "rolled_back"}, {Key: "reason", Value: "merger died at " + status + "; the base has moved to " + cur}}
		}
		if req.Worktree != "" {
			if _, err := os.Stat(req.Worktree); err == nil {
				abortInProgress(ctx, req.Worktree)
			}
		}
		fields = append(fields, docstore.Field{Key: "finished", Value: time.Now()})
		if err := w.setRecord(d.Path, fields, ""); err != nil {
			return err
		}
		if head != "" && cur == head {
			_, _ = w.opt.Broker.Annotate(req.Item, []docstore.Field{{Key: "merged", Value: head}})
		}
		w.event(EventMergeRecovered, d.Path, req, map[string]any{"was": status, "how": how, "old": old, "head": head, "base_now": cur})
	}
	return nil
}

// restoreCheckout puts back the base's checkout after a fast-forward
// from old to head killed half-way. Only the files the fast-forward
// would write (git diff old head) are restored: the checkout was clean
// when it started, but the person may have edited other files since
// (the recovery runs at the next merge, or doctor --fix, maybe hours
// later), and git reset --hard would throw those edits away. When head
// is not a commit git knows, every file but the store's is restored, as
// nothing narrower is known.
func (w *Workspaces) restoreCheckout(ctx context.Context, checkout, old, head string) {
	ps := w.notStore(checkout)
	if changed, err := git(ctx, checkout, nil, "diff", "--name-only", "-z", old, head, "--"); err == nil {
		store := ""
		if ps != nil {
			store = strings.TrimPrefix(ps[len(ps)-1], ":(exclude)") + "/"
		}
		var files []string
		for _, f := range strings.Split(changed, "\x00") {
			if f != "" && (store == "" || !strings.HasPrefix(f, store)) {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return
		}
		args := append([]string{"restore", "--source", old, "--staged", "--worktree", "--"}, files...)
		if _, err := git(ctx, checkout, nil, args...); err != nil {
			// A file the fast-forward never reached (not in old, not
			// written yet) fails the whole pathspec: one at a time.
			for _, f := range files {
				_, _ = git(ctx, checkout, nil, "restore", "--source", old, "--staged", "--worktree", "--", f)
			}
		}
		return
	}
	if ps == nil {
		_, _ = git(ctx, checkout, nil, "reset", "--quiet", "--hard", old)
		return
	}
	_, _ = git(ctx, checkout, nil, append([]string{"restore", "--source", old, "--staged", "--worktree"}, ps...)...)
}

// abortInProgress aborts a rebase or merge a killed git left in a
// worktree.
func abortInProgress(ctx context.Context, dir string) {
	for _, p := range []string{"rebase-merge", "rebase-apply"} {
		if path, err := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", p); err == nil {
			if _, err := os.Stat(path); err == nil {
				if _, err := git(ctx, dir, nil, "rebase", "--abort"); err != nil {
					_ = os.RemoveAll(path)
				}
			}
		}
	}
	if path, err := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "MERGE_HEAD"); err == nil {
		if _, err := os.Stat(path); err == nil {
			_, _ = git(ctx, dir, nil, "merge", "--abort")
		}
	}
	if path, err := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "index.lock"); err == nil {
		_ = os.Remove(path)
	}
}

// staleLockWait is how long recovery lets a lock file be, in case the
// git that holds it is still running (orphaned by its dead merger).
const staleLockWait = 5 * time.Second

// removeStaleLock removes a git lock file a killed merger's git left:
// once it has stayed staleLockWait (a live git finishes its ref or index
// update in milliseconds). Safe under the merge slot: no other merger
// runs, and the one whose git held it is dead.
func (w *Workspaces) removeStaleLock(path string) {
	deadline := time.Now().Add(staleLockWait)
	for {
		if _, err := os.Stat(path); err != nil {
			return
		}
		if time.Now().After(deadline) {
			_ = os.Remove(path)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Landed returns the merge record of item that landed, if any.
func (w *Workspaces) Landed(item string) (*docstore.Doc, error) {
	recs, err := w.Records(item)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].String("status") == "landed" {
			return recs[i], nil
		}
	}
	return nil, err
}
