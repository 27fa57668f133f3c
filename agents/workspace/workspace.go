package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

// Options configure Open.
type Options struct {
	// Repo is a directory inside the git repository (default: the
	// directory holding .tavern/).
	Repo string
	// Base is the branch work is branched from and merged into (default
	// "main").
	Base string
	// Root is where worktrees are made, one directory per item (default
	// <git common dir>/tavern/worktrees: inside .git, so no tool walking
	// the project sees them).
	Root string
	// Prefix starts every branch name (default "tavern/").
	Prefix string
	// Mode is how a branch is brought onto the base: "rebase" (default)
	// or "merge" (a merge commit of the base into the branch).
	Mode string
	// Check is a shell command run in the worktree after the rebase or
	// merge, before the base moves; a non-zero exit fails the item.
	Check string
	// CheckTimeout bounds Check (default 10m).
	CheckTimeout time.Duration
	// MaxWorktrees bounds the worktrees under Root (default 64); orphans
	// are pruned first when it is reached.
	MaxWorktrees int
	// MaxDisk bounds the bytes under Root (default DefaultMaxDisk; < 0:
	// no bound); orphans are pruned first when it is reached.
	MaxDisk int64
	// Broker is the queue engine (items record their worktree, branch
	// and merge commit).
	Broker *queues.Broker
	// Space holds the merge-slot token.
	Space *tuples.Space
	// Who names the merger in merge records (default host/pid).
	Who string
}

// DefaultMaxDisk is the default bound on the bytes of all worktrees under
// Root: abandoned worktrees are what fills disks (peers' users found tens
// of gigabytes of them), so there is a bound unless one asks for none.
const DefaultMaxDisk int64 = 20 << 30

// Workspaces manage the worktrees and the merge queue of one repository
// and base branch.
type Workspaces struct {
	opt    Options
	top    string // the repository's main worktree
	common string // its common git directory
	root   string
	ident  []string // committer identity when git has none configured
	token  string
}

// Open checks the repository and the base branch.
func Open(ctx context.Context, opt Options) (*Workspaces, error) {
	w, err := openRepo(ctx, opt)
	if err != nil {
		return nil, err
	}
	if err := w.checkBase(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.root, 0o755); err != nil {
		return nil, err
	}
	return w, nil
}

// OpenExisting opens the repository to list and prune its worktrees (List,
// Prune), which look at every worktree under Root whatever base it was
// made from: a Base given is checked as Open checks it, but none is
// needed. So listing works in a repository whose branch is not "main"
// (git's own default is "master") or that has no commit yet.
func OpenExisting(ctx context.Context, opt Options) (*Workspaces, error) {
	given := opt.Base != ""
	w, err := openRepo(ctx, opt)
	if err != nil {
		return nil, err
	}
	if given {
		if err := w.checkBase(ctx); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// checkBase refuses a base that is not a branch of the repository,
// naming the near branches or, with none near, the checked-out one.
func (w *Workspaces) checkBase(ctx context.Context) error {
	base := w.opt.Base
	if _, err := git(ctx, w.top, nil, "check-ref-format", "--branch", base); err != nil {
		return fmt.Errorf("%w: base %q is not a branch name", ErrConfig, base)
	}
	if _, err := git(ctx, w.top, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+base); err == nil {
		return nil
	}
	hint := ""
	if out, lerr := git(ctx, w.top, nil, "for-each-ref", "--format=%(refname:short)", "refs/heads/"); lerr == nil {
		if near := schema.Near(base, strings.Fields(out)); len(near) > 0 {
			hint = " (did you mean " + schema.NearList(near) + "?)"
		}
	}
	if hint == "" {
		if head, herr := git(ctx, w.top, nil, "symbolic-ref", "--quiet", "--short", "HEAD"); herr == nil && strings.TrimSpace(head) != "" {
			head = strings.TrimSpace(head)
			if _, err := git(ctx, w.top, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+head); err == nil {
				hint = fmt.Sprintf(" (the checked-out branch is %q)", head)
			}
		}
	}
	return fmt.Errorf("%w: base branch %q does not exist in %s%s", ErrConfig, base, w.top, hint)
}

// openRepo fills in the defaults and finds the repository (its top and
// common git directory) and the worktree root, without looking at the
// base branch or creating anything.
func openRepo(ctx context.Context, opt Options) (*Workspaces, error) {
	if opt.Broker == nil || opt.Space == nil {
		return nil, errors.New("workspace: a broker and a tuple space are required")
	}
	if opt.Repo == "" {
		opt.Repo = filepath.Dir(opt.Broker.Store().Root())
	}
	if opt.Base == "" {
		opt.Base = "main"
	}
	if opt.Prefix == "" {
		opt.Prefix = "tavern/"
	}
	switch opt.Mode {
	case "":
		opt.Mode = "rebase"
	case "rebase", "merge":
	default:
		return nil, fmt.Errorf("%w: mode %q (want rebase or merge)%s", ErrConfig, opt.Mode, schema.ChoiceHint(opt.Mode, []string{"rebase", "merge"}))
	}
	if opt.CheckTimeout <= 0 {
		opt.CheckTimeout = 10 * time.Minute
	}
	if opt.MaxWorktrees <= 0 {
		opt.MaxWorktrees = 64
	}
	if opt.MaxDisk == 0 {
		opt.MaxDisk = DefaultMaxDisk
	}
	if opt.Who == "" {
		host, _ := os.Hostname()
		opt.Who = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	w := &Workspaces{opt: opt}
	top, err := git(ctx, opt.Repo, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not in a git repository: %v", ErrConfig, opt.Repo, err)
	}
	common, err := git(ctx, opt.Repo, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	w.top, w.common = top, common
	w.root = opt.Root
	if w.root == "" {
		w.root = filepath.Join(common, "tavern", "worktrees")
	}
	if w.root, err = filepath.Abs(w.root); err != nil {
		return nil, err
	}
	if v, _ := git(ctx, top, nil, "config", "user.email"); v == "" {
		w.ident = []string{"GIT_COMMITTER_NAME=tavern", "GIT_COMMITTER_EMAIL=tavern@localhost", "GIT_AUTHOR_NAME=tavern", "GIT_AUTHOR_EMAIL=tavern@localhost"}
	}
	sum := sha256.Sum256([]byte(common))
	w.token = "merge-" + sanitize(opt.Base, 40) + "-" + hex.EncodeToString(sum[:4])
	return w, nil
}

// Base is the base branch.
func (w *Workspaces) Base() string { return w.opt.Base }

// CommandFound refuses a drone command given as a path relative to the
// worktree it runs in (./build-one.sh, bin/x) that the base branch does
// not hold (a *CommandError): every worktree starts from the base, so
// every drone would fail to start it and be replaced, a crash loop. A
// command found on $PATH, an absolute path and one leaving the worktree
// (../x) are not judged here.
func (w *Workspaces) CommandFound(ctx context.Context, op, prog string) error {
	if !strings.Contains(prog, "/") || filepath.IsAbs(prog) {
		return nil
	}
	rel := path.Clean(filepath.ToSlash(prog))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	_, err := git(ctx, w.top, nil, "cat-file", "-e", w.opt.Base+":"+rel)
	var ge *GitError
	if errors.As(err, &ge) && ge.Code > 0 {
		return &CommandError{Op: op, Path: prog, Base: w.opt.Base}
	}
	return err
}

// Repo is the repository's main worktree.
func (w *Workspaces) Repo() string { return w.top }

// Root is the directory of the worktrees.
func (w *Workspaces) Root() string { return w.root }

// TokenName is the merge-slot token of this repository and base: one
// merge at a time per base.
func (w *Workspaces) TokenName() string { return w.token }

// Workspace is one item's worktree.
type Workspace struct {
	Item    string `json:"item"`
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Base    string `json:"base"`
	Resumed bool   `json:"resumed,omitempty"` // an earlier attempt's worktree, kept
}

var unsafe = regexp.MustCompile(`[^a-z0-9]+`)

// sanitize turns s into a lower-case [a-z0-9-] slug of at most n bytes.
func sanitize(s string, n int) string {
	s = strings.Trim(unsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	if s == "" {
		s = "item"
	}
	return s
}

// BranchName is the branch of an item: the prefix, its title as a slug
// and the end of its id ("tavern/add-the-parser-3f0b2a7c").
func (w *Workspaces) BranchName(it *queues.Item) string {
	id := it.ID
	if len(id) > 8 {
		id = id[len(id)-8:]
	}
	return w.opt.Prefix + sanitize(it.Title, 40) + "-" + sanitize(id, 8)
}

// Prepare gives item it its worktree: the one an earlier attempt left
// (recorded in the item), or a new one on a new branch from the base.
// The item records worktree:, branch: and base:.
func (w *Workspaces) Prepare(ctx context.Context, it *queues.Item) (*Workspace, error) {
	// A worktree outside Root or the base as branch (a hand edit: the
	// project's own checkout, main) is not the item's: a drone there
	// would work on the base itself, and its leftovers commit (add -A)
	// would take the user's files. It gets its own, as a new item does.
	branch := strings.TrimPrefix(it.Branch, "refs/heads/")
	if branch == w.opt.Base {
		branch = ""
	}
	if it.Worktree != "" && branch != "" && w.under(it.Worktree) {
		if ok, _ := w.isWorktree(ctx, it.Worktree, branch); ok {
			return &Workspace{Item: it.ID, Path: it.Worktree, Branch: branch, Base: w.opt.Base, Resumed: true}, nil
		}
	}
	if err := w.makeRoom(ctx); err != nil {
		return nil, err
	}
	if branch == "" {
		b, err := w.freeBranch(ctx, w.BranchName(it))
		if err != nil {
			return nil, err
		}
		branch = b
	}
	path := filepath.Join(w.root, it.ID)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		// A worktree removed by hand (rm -rf) stays registered, and git
		// refuses to add its path again until it forgets it.
		if reg, _ := w.registered(ctx, path); reg {
			_, _ = git(ctx, w.top, nil, "worktree", "prune")
		}
	} else if err == nil {
		// A directory left by a worktree that git no longer knows (or that
		// is on another branch): git forgets the stale ones, we remove the
		// leftover directory, which is ours (inside Root).
		if _, err := git(ctx, w.top, nil, "worktree", "remove", "--force", path); err != nil {
			_, _ = git(ctx, w.top, nil, "worktree", "prune")
			if err := os.RemoveAll(path); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if _, verr := git(ctx, w.top, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); verr == nil {
		_, err = git(ctx, w.top, nil, "worktree", "add", path, branch)
	} else {
		_, err = git(ctx, w.top, nil, "worktree", "add", "-b", branch, path, w.opt.Base)
	}
	if err != nil {
		return nil, fmt.Errorf("worktree for %s: %w", it.ID, err)
	}
	if _, err := w.opt.Broker.Annotate(it.ID, []docstore.Field{{Key: "worktree", Value: path}, {Key: "branch", Value: branch}, {Key: "base", Value: w.opt.Base}}); err != nil {
		return nil, err
	}
	return &Workspace{Item: it.ID, Path: path, Branch: branch, Base: w.opt.Base}, nil
}

// freeBranch is the branch a new item's worktree goes on: name, or
// name-2, name-3... when a branch of that name has commits the base does
// not (a person's, or one fetched from another clone). The item records
// no branch, so no attempt of its own made it; a drone's work on it would
// merge the stranger's commits onto the base. A branch of the name with
// no commits of its own is taken: an earlier attempt made it and stopped
// before recording it.
func (w *Workspaces) freeBranch(ctx context.Context, name string) (string, error) {
	for n := 1; n < 100; n++ {
		cand := name
		if n > 1 {
			cand = fmt.Sprintf("%s-%d", name, n)
		}
		if _, err := git(ctx, w.top, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+cand); err != nil {
			return cand, nil // no such branch
		}
		if _, err := git(ctx, w.top, nil, "merge-base", "--is-ancestor", "refs/heads/"+cand, w.opt.Base); err == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%w: %s and %s-2 to -99 all have commits the base lacks (delete or rename some)", ErrBranchTaken, name, name)
}

// registered reports whether git lists path as a worktree of this
// repository (its directory may be gone).
func (w *Workspaces) registered(ctx context.Context, path string) (bool, error) {
	list, err := w.worktrees(ctx)
	if err != nil {
		return false, err
	}
	for _, wt := range list {
		// The directory is gone: compare its parent, which is not.
		if samePath(wt.path, path) || filepath.Base(wt.path) == filepath.Base(path) && samePath(filepath.Dir(wt.path), filepath.Dir(path)) {
			return true, nil
		}
	}
	return false, nil
}

// isWorktree reports whether path is a worktree of this repository with
// branch checked out.
func (w *Workspaces) isWorktree(ctx context.Context, path, branch string) (bool, error) {
	list, err := w.worktrees(ctx)
	if err != nil {
		return false, err
	}
	for _, wt := range list {
		if samePath(wt.path, path) {
			_, err := os.Stat(path)
			return wt.branch == "refs/heads/"+branch && err == nil, nil
		}
	}
	return false, nil
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

type worktree struct{ path, head, branch string }

// worktrees lists the repository's worktrees (git worktree list).
func (w *Workspaces) worktrees(ctx context.Context) ([]worktree, error) {
	out, err := git(ctx, w.top, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []worktree
	var cur *worktree
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "worktree":
			list = append(list, worktree{path: v})
			cur = &list[len(list)-1]
		case "HEAD":
			if cur != nil {
				cur.head = v
			}
		case "branch":
			if cur != nil {
				cur.branch = v
			}
		}
	}
	return list, nil
}

// baseCheckout returns the worktree where the base branch is checked
// out ("" if none).
func (w *Workspaces) baseCheckout(ctx context.Context) (string, error) {
	list, err := w.worktrees(ctx)
	if err != nil {
		return "", err
	}
	for _, wt := range list {
		if wt.branch == "refs/heads/"+w.opt.Base {
			return wt.path, nil
		}
	}
	return "", nil
}

// Remove deletes a worktree and, with deleteBranch, its branch. A branch
// that is kept (a dead item's, one whose item is gone) is kept for a
// person to pick the work up: what was left uncommitted in the worktree
// is committed onto it first, not removed with it (--force).
func (w *Workspaces) Remove(ctx context.Context, path, branch string, deleteBranch bool) error {
	if !w.under(path) {
		return fmt.Errorf("%w: %s is not under %s", ErrConfig, path, w.root)
	}
	if err := w.checkOwnBranch(path, branch, deleteBranch); err != nil {
		return err
	}
	if !deleteBranch && branch != "" {
		if err := w.saveLeftovers(ctx, path, branch); err != nil {
			return err
		}
	}
	if _, err := git(ctx, w.top, nil, "worktree", "remove", "--force", path); err != nil {
		if _, serr := os.Stat(path); serr == nil {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
		}
		_, _ = git(ctx, w.top, nil, "worktree", "prune")
	}
	if deleteBranch && branch != "" {
		if _, err := git(ctx, w.top, nil, "branch", "-D", branch); err != nil {
			var ge *GitError
			if !errors.As(err, &ge) || !strings.Contains(ge.Output, "not found") {
				return err
			}
		}
	}
	return nil
}

// checkOwnBranch refuses, before anything is removed, to delete a branch
// Tavern did not make: the base, or any without the branch prefix. The
// name comes from the item's branch: field, which a person may have
// edited (to main, say), and git branch -D deletes any branch not
// checked out.
func (w *Workspaces) checkOwnBranch(path, branch string, deleteBranch bool) error {
	if !deleteBranch || branch == "" {
		return nil
	}
	if branch == w.opt.Base || !strings.HasPrefix(branch, w.opt.Prefix) {
		return fmt.Errorf("%w: remove %s: its branch %s is not one Tavern made (%s...), and is not deleted; remove the worktree by hand (git worktree remove)", ErrConfig, path, branch, w.opt.Prefix)
	}
	return nil
}

// under reports whether path is inside Root, where Tavern's worktrees are.
func (w *Workspaces) under(path string) bool {
	return strings.HasPrefix(filepath.Clean(path)+string(filepath.Separator), w.root+string(filepath.Separator))
}

// saveLeftovers commits what is uncommitted in the worktree at path onto
// its branch (when the worktree is on it: one checked out elsewhere by
// hand is not committed to behind its back). A commit that fails keeps
// the worktree: the error says why.
func (w *Workspaces) saveLeftovers(ctx context.Context, path, branch string) error {
	if _, err := os.Stat(path); err != nil {
		return nil // gone already: nothing to save
	}
	if cur, err := git(ctx, path, nil, "symbolic-ref", "--quiet", "--short", "HEAD"); err != nil || cur != branch {
		return nil
	}
	st, err := git(ctx, path, nil, "status", "--porcelain")
	if err != nil || st == "" {
		return nil // not a worktree git can read, or clean
	}
	if _, err := git(ctx, path, nil, "add", "-A"); err != nil {
		return fmt.Errorf("keep the work left in %s on %s: %w", path, branch, err)
	}
	env := append([]string{"GIT_AUTHOR_NAME=tavern", "GIT_AUTHOR_EMAIL=tavern@tavern"}, w.ident...)
	msg := "Left uncommitted in " + filepath.Base(path) + "\n\nTavern kept this branch when it removed the worktree of item " + filepath.Base(path) + "."
	if _, err := git(ctx, path, env, "commit", "--quiet", "--no-verify", "-m", msg); err != nil {
		return fmt.Errorf("keep the work left in %s on %s: %w", path, branch, err)
	}
	return nil
}

// Entry is one worktree under Root and what it is for.
type Entry struct {
	Path      string `json:"path"`
	Branch    string `json:"branch,omitempty"`
	Item      string `json:"item"`
	ItemState string `json:"item_state"` // pending | claimed | done | dead | missing
	Orphan    bool   `json:"orphan"`     // its item is done, dead or gone: removable
	Bytes     int64  `json:"bytes"`
}

// List lists the worktrees under Root (registered with git, or stray
// directories), with their item's state and size.
func (w *Workspaces) List(ctx context.Context) ([]Entry, error) {
	list, err := w.worktrees(ctx)
	if err != nil {
		return nil, err
	}
	branch := map[string]string{}
	for _, wt := range list {
		branch[filepath.Clean(wt.path)] = strings.TrimPrefix(wt.branch, "refs/heads/")
	}
	ents, err := os.ReadDir(w.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no worktree made yet (OpenExisting makes no root)
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(w.root, e.Name())
		en := Entry{Path: p, Branch: branch[p], Item: e.Name()}
		it, err := w.opt.Broker.Get(e.Name())
		switch {
		case errors.Is(err, fs.ErrNotExist) && !w.ours(e.Name(), en.Branch):
			// Not Tavern's (a --worktree-root shared with one's own
			// directories or worktrees): never listed, never removed.
			continue
		case errors.Is(err, fs.ErrNotExist):
			en.ItemState, en.Orphan = "missing", true
		case err != nil:
			en.ItemState = "unreadable"
		default:
			en.ItemState = it.State
			en.Orphan = it.State == queues.Done || it.State == queues.Dead
		}
		en.Bytes = dirSize(p)
		out = append(out, en)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Item < out[j].Item })
	return out, nil
}

// itemID is the shape of the ids queue add makes (queues.NewItemID).
var itemID = regexp.MustCompile(`^p[0-9]{2}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ours reports whether a directory under Root whose item is gone is one
// Tavern made: named after an item, or a worktree on a branch of
// Tavern's. Anything else there is someone's own and is left alone.
func (w *Workspaces) ours(name, branch string) bool {
	return itemID.MatchString(name) || (branch != "" && strings.HasPrefix(branch, w.opt.Prefix))
}

// Prune removes the orphan worktrees (their item is done, dead or gone)
// and lets git forget worktrees whose directories are missing. Branches
// of dead items are kept (the work may be wanted); those of done items,
// merged, are deleted.
func (w *Workspaces) Prune(ctx context.Context) ([]Entry, error) {
	_, _ = git(ctx, w.top, nil, "worktree", "prune")
	list, err := w.List(ctx)
	if err != nil {
		return nil, err
	}
	var removed []Entry
	var errs []error
	for _, e := range list {
		if !e.Orphan {
			continue
		}
		if err := w.Remove(ctx, e.Path, e.Branch, e.ItemState == queues.Done); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e)
	}
	return removed, errors.Join(errs...)
}

// DiskUsage is the bytes under Root.
func (w *Workspaces) DiskUsage() int64 { return dirSize(w.root) }

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// makeRoom prunes orphans when the worktree count or disk bound is
// reached, and refuses (ErrLimit) if that is not enough.
func (w *Workspaces) makeRoom(ctx context.Context) error {
	over := func() (string, error) {
		list, err := w.List(ctx)
		if err != nil {
			return "", err
		}
		if len(list) >= w.opt.MaxWorktrees {
			return fmt.Sprintf("worktrees under %s: %d, at most %d", w.root, len(list), w.opt.MaxWorktrees), nil
		}
		if w.opt.MaxDisk > 0 { // < 0: no bound
			var n int64
			for _, e := range list {
				n += e.Bytes
			}
			if n >= w.opt.MaxDisk {
				return fmt.Sprintf("%d bytes under %s (at most %d)", n, w.root, w.opt.MaxDisk), nil
			}
		}
		return "", nil
	}
	why, err := over()
	if err != nil || why == "" {
		return err
	}
	if _, err := w.Prune(ctx); err != nil {
		return err
	}
	if why, err = over(); err != nil || why == "" {
		return err
	}
	return fmt.Errorf("%w: %s, none of them an orphan", ErrLimit, why)
}
