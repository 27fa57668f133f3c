package tuples

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher/journal"
)

// StagedPaths returns the paths staged for commit in the git work tree
// containing dir (`git diff --cached --name-only -z`), relative to the
// project root (the directory holding the store's .tavern/). Staged paths
// outside the project are left out. Deletions and renames count: removing
// a reserved file is touching it.
func (sp *Space) StagedPaths(ctx context.Context, dir string) ([]string, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	out, err := git(ctx, dir, "diff", "--cached", "--name-only", "-z", "--no-renames")
	if err != nil {
		return nil, err
	}
	topDir := strings.TrimSpace(string(top))
	if real, err := filepath.EvalSymlinks(topDir); err == nil {
		topDir = real
	}
	project := filepath.Dir(sp.store.Root())
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		abs := filepath.Join(topDir, filepath.FromSlash(string(p)))
		rel, err := filepath.Rel(project, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		paths = append(paths, filepath.ToSlash(rel))
	}
	return paths, nil
}

// Guard checks the staged paths of the git work tree containing dir
// against other agents' reservations (agent is the committer's identity;
// empty means every reservation counts). It returns the conflicts and,
// if there are any, a *ReservedError. It is what `tavern guard` runs as a
// pre-commit hook. Reservation files that cannot be read guard nothing:
// the commit is decided on the others (a hook must not block every commit
// for a broken file), and a *SkippedError naming them is returned with
// the conflicts, joined with the *ReservedError when there is one, so the
// caller can say which files were left out.
//
// instance is the committer's instance ($TAVERN_INSTANCE, set by tavern
// spawn), or "". A commit of an instance that a newer spawn of agent
// replaced, or whose spawn wrapper is gone, is a dead instance's late
// action: refused with a *FencedError whatever it touches. With instance set, a reservation recorded by
// another instance of agent counts as another holder's.
func (sp *Space) Guard(ctx context.Context, dir, agent, instance string) ([]Conflict, error) {
	if _, err := sp.fence("guard", agent, instance); err != nil {
		return nil, err
	}
	paths, err := sp.StagedPaths(ctx, dir)
	if err != nil {
		return nil, err
	}
	conflicts, err := sp.checkPaths(agent, instance, paths)
	var skipped *SkippedError
	if err != nil && !errors.As(err, &skipped) {
		return nil, err
	}
	var reserved error
	if len(conflicts) > 0 {
		for _, c := range conflicts {
			sp.event("reservation.conflict", journal.Event{Agent: agent, Path: c.Held.Path, Data: map[string]any{
				"path": c.Want, "held_glob": c.Held.Glob, "held_by": c.Held.Agent, "by": "guard"}})
		}
		reserved = &ReservedError{Conflicts: conflicts}
	}
	if skipped != nil {
		return conflicts, errors.Join(reserved, skipped)
	}
	return conflicts, reserved
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	// Inside a hook git exports GIT_DIR and GIT_INDEX_FILE for the
	// repository being committed; keep them, they are what we must read.
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") {
			// Run where it cannot work (a usage error), not a failure.
			return nil, fmt.Errorf("git %s: %w: %w: %s", strings.Join(args, " "), ErrNotGit, err, msg)
		}
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// HookScript is the pre-commit hook `tavern guard --install` writes: it
// runs the given tavern binary's guard, so a commit touching paths
// reserved by another agent is refused. TAVERN_AGENT names the committer.
// storeArg, when not empty, is given to guard as --dir: the store the
// hook must read (see InstallHook).
func HookScript(tavernBin, storeArg string) string {
	dir := ""
	if storeArg != "" {
		dir = " --dir " + shellQuote(storeArg)
	}
	return "#!/bin/sh\n# Installed by `tavern guard --install`: refuse commits that touch paths\n" +
		"# reserved by another agent (tavern reserve). Identity: $TAVERN_AGENT.\n" +
		"# Bypass once with `git commit --no-verify`.\n" +
		"exec " + shellQuote(tavernBin) + " guard" + dir + "\n"
}

// hookStoreArg is the --dir the hook needs for store, the .tavern
// directory: none when guard finds it by itself from the top of the work
// tree, where git runs the hook; else its path relative to the top when
// it is inside (a project in a subdirectory of a monorepo: the clone may
// move), else the absolute path. Without it, a hook installed from the
// subdirectory found no store and let every commit by.
func hookStoreArg(top, store string) string {
	if store == "" {
		return ""
	}
	if found, err := docstore.Find(top); err == nil && sameDir(found, store) {
		return ""
	}
	if realTop, err := filepath.EvalSymlinks(top); err == nil {
		top = realTop
	}
	if realStore, err := filepath.EvalSymlinks(store); err == nil {
		store = realStore
	}
	if rel, err := filepath.Rel(top, store); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return store
}

func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// InstallHook writes HookScript into the pre-commit hook of the git
// repository containing dir and returns the hook's path. store is the
// .tavern directory the hook guards ("" for none found: the hook then
// looks for one when it runs). An existing hook that is not ours is kept
// unless force is set.
func InstallHook(ctx context.Context, dir, tavernBin, store string, force bool) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	storeArg := ""
	if store != "" {
		top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
		if err != nil {
			return "", err
		}
		storeArg = hookStoreArg(strings.TrimSpace(string(top)), store)
	}
	hooks := strings.TrimSpace(string(out))
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(dir, hooks)
	}
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(hooks, "pre-commit")
	if old, err := os.ReadFile(path); err == nil && !force && !bytes.Contains(old, []byte("tavern guard --install")) {
		return path, fmt.Errorf("%s exists and was not written by tavern (use --force to replace it): %w", path, os.ErrExist)
	}
	// The hook is not a document: a plain write, then chmod +x.
	if err := os.WriteFile(path, []byte(HookScript(tavernBin, storeArg)), 0o755); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o755)
}
