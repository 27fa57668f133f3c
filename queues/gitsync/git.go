package gitsync

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// emptyTree is git's well-known empty tree object.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// repo is the engine-private bare repository .tavern/.sync/git: Tavern's
// state commits and claim records live there, apart from the project's
// own repository (its index, branches and hooks are never touched).
type repo struct {
	dir     string // the bare repository
	machine string
	mu      sync.Mutex
}

// openRepo creates the bare repository on first use.
func openRepo(dir, machine string) (*repo, error) {
	r := &repo{dir: dir, machine: machine}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		tmp := dir + ".init" + strconv.Itoa(os.Getpid())
		os.RemoveAll(tmp)
		if _, err := runGit("", nil, nil, "init", "--bare", "--quiet", tmp); err != nil {
			return nil, err
		}
		for _, kv := range [][2]string{{"gc.auto", "0"}, {"core.logAllRefUpdates", "false"}, {"fetch.unpackLimit", "1000000"}, {"transfer.unpackLimit", "1000000"}} {
			if _, err := runGit(tmp, nil, nil, "config", kv[0], kv[1]); err != nil {
				return nil, err
			}
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp)
			if _, serr := os.Stat(filepath.Join(dir, "HEAD")); serr != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// GitError is a failed git command.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return "git " + strings.Join(e.Args, " ") + ": " + msg
}

func (e *GitError) Unwrap() error { return e.Err }

// gitEnv is the environment of every git command: the caller's, without
// anything that would point git at another repository or prompt.
func gitEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "GIT_SSH") && !strings.HasPrefix(kv, "GIT_CONFIG_GLOBAL") && !strings.HasPrefix(kv, "GIT_TRACE") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	return append(env, extra...)
}

func runGit(gitDir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	return runGitContext(context.Background(), gitDir, env, stdin, args...)
}

// runGitContext is runGit that gives up when ctx ends: git and what it
// started (ssh, a credential helper) are killed as one process group, so
// an unresponsive remote cannot hold a caller, or the locks it holds,
// past its deadline.
func runGitContext(ctx context.Context, gitDir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	full := args
	if gitDir != "" {
		full = append([]string{"--git-dir=" + gitDir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a child that escaped the group keeps no pipe open past it
	cmd.Env = gitEnv(env)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return out.Bytes(), &GitError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.Bytes(), nil
}

// git runs a git command in the repository with this machine as author
// and committer.
func (r *repo) git(stdin io.Reader, args ...string) ([]byte, error) {
	return r.gitContext(context.Background(), stdin, args...)
}

// gitContext is git bounded by ctx (runGitContext).
func (r *repo) gitContext(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	env := []string{"GIT_AUTHOR_NAME=" + r.machine, "GIT_AUTHOR_EMAIL=" + r.machine + "@tavern",
		"GIT_COMMITTER_NAME=" + r.machine, "GIT_COMMITTER_EMAIL=" + r.machine + "@tavern"}
	return runGitContext(ctx, r.dir, env, stdin, args...)
}

func (r *repo) gitEnv(env []string, stdin io.Reader, args ...string) ([]byte, error) {
	env = append(env, "GIT_AUTHOR_NAME="+r.machine, "GIT_AUTHOR_EMAIL="+r.machine+"@tavern",
		"GIT_COMMITTER_NAME="+r.machine, "GIT_COMMITTER_EMAIL="+r.machine+"@tavern")
	return runGit(r.dir, env, stdin, args...)
}

// blobID is the object id git gives data as a blob.
func blobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// writeBlobs stores blobs and returns their ids (one git process).
func (r *repo) writeBlobs(blobs [][]byte) ([]string, error) {
	if len(blobs) == 0 {
		return nil, nil
	}
	// fast-import would be faster for thousands; hash-object --stdin-paths
	// needs files, so the blobs go through a temp directory.
	dir, err := os.MkdirTemp(r.dir, "blobs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var paths bytes.Buffer
	for i, b := range blobs {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		paths.WriteString(p + "\n")
	}
	out, err := r.git(&paths, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	if len(ids) != len(blobs) {
		return nil, fmt.Errorf("hash-object returned %d ids for %d blobs", len(ids), len(blobs))
	}
	return ids, nil
}

// hashFiles stores files (absolute paths) as blobs and returns their ids.
func (r *repo) hashFiles(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	in := strings.Join(paths, "\n") + "\n"
	out, err := r.git(strings.NewReader(in), "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	if len(ids) != len(paths) {
		return nil, fmt.Errorf("hash-object returned %d ids for %d files", len(ids), len(paths))
	}
	return ids, nil
}

// entry is one file of a tree: mode and blob id.
type entry struct {
	mode string // 100644 or 100755
	oid  string
}

// writeTree builds a tree from a flat path map (one git read-tree,
// update-index and write-tree on a temporary index).
func (r *repo) writeTree(files map[string]entry) (string, error) {
	if len(files) == 0 {
		return emptyTree, nil
	}
	idx, err := os.CreateTemp(r.dir, "index-")
	if err != nil {
		return "", err
	}
	idx.Close()
	os.Remove(idx.Name())
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	var in bytes.Buffer
	for p, e := range files {
		fmt.Fprintf(&in, "%s %s\t%s\n", e.mode, e.oid, p)
	}
	if _, err := r.gitEnv(env, &in, "update-index", "--add", "--index-info"); err != nil {
		return "", err
	}
	out, err := r.gitEnv(env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// readTree lists a commit's (or tree's) files.
func (r *repo) readTree(rev string) (map[string]entry, error) {
	out := map[string]entry{}
	if rev == "" {
		return out, nil
	}
	b, err := r.git(nil, "ls-tree", "-r", "-z", "--full-tree", rev)
	if err != nil {
		return nil, err
	}
	for _, rec := range bytes.Split(b, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		out[string(path)] = entry{mode: f[0], oid: f[2]}
	}
	return out, nil
}

// commitTree makes a commit of tree with parents and message.
func (r *repo) commitTree(tree, msg string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		if p != "" {
			args = append(args, "-p", p)
		}
	}
	out, err := r.git(strings.NewReader(msg), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// revParse resolves a ref, "" if it does not exist.
func (r *repo) revParse(ref string) string {
	out, err := r.git(nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func (r *repo) treeOf(commit string) string {
	if commit == "" {
		return emptyTree
	}
	out, err := r.git(nil, "rev-parse", commit+"^{tree}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// isAncestor reports whether a is an ancestor of (or equal to) b.
func (r *repo) isAncestor(a, b string) bool {
	if a == "" {
		return true
	}
	if b == "" {
		return false
	}
	_, err := r.git(nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

func (r *repo) mergeBase(a, b string) string {
	out, err := r.git(nil, "merge-base", a, b)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// blobs reads objects with one cat-file --batch process.
func (r *repo) blobs(oids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(oids) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, o := range oids {
		in.WriteString(o + "\n")
	}
	b, err := r.git(&in, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	rd := bufio.NewReader(bytes.NewReader(b))
	for _, o := range oids {
		hdr, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		f := strings.Fields(hdr)
		if len(f) < 3 {
			return nil, fmt.Errorf("cat-file %s: %s", o, strings.TrimSpace(hdr))
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, err
		}
		data := make([]byte, n+1)
		if _, err := io.ReadFull(rd, data); err != nil {
			return nil, err
		}
		out[o] = data[:n]
	}
	return out, nil
}

// pushResult classifies a push: ok, rejected (the remote ref moved: a
// lost compare-and-swap) or failed (unreachable, refused for another
// reason).
type pushResult int

const (
	pushOK pushResult = iota
	pushRejected
	pushFailed
)

// push pushes src to dst on remote. expect, if not nil, is the
// compare-and-swap: the remote ref must be *expect ("" = must not exist).
//
// Rejected means the ref moved under the push: git's own checks
// ([rejected] fetch first, non-fast-forward, stale info) or the
// server's, when two pushes race inside the remote ([remote rejected]
// failed to update ref / cannot lock ref). A rejection for any other
// reason (a hook declined it, a protected or hidden ref, a full disk)
// would be the same next time: it is a failure, with git's reason.
func (r *repo) push(ctx context.Context, remote, src, dst string, expect *string) (pushResult, error) {
	args := []string{"push", "--porcelain", "--quiet"}
	if expect != nil {
		args = append(args, "--force-with-lease="+dst+":"+*expect)
	}
	args = append(args, remote, src+":"+dst)
	out, err := r.gitContext(ctx, nil, args...)
	if err == nil {
		return pushOK, nil
	}
	var ge *GitError
	stderr := ""
	if errors.As(err, &ge) {
		stderr = ge.Stderr
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "!\t") {
			continue
		}
		switch {
		case strings.Contains(line, "[rejected]"):
			return pushRejected, err
		case strings.Contains(line, "[remote rejected]"):
			if lostRace(line + "\n" + stderr) {
				return pushRejected, err
			}
			_, reason, _ := strings.Cut(line, "[remote rejected]")
			if reason = strings.TrimSpace(reason); reason != "" {
				reason = " " + reason
			}
			return pushFailed, fmt.Errorf("the remote declined the push%s: %w", reason, err)
		}
	}
	if strings.Contains(stderr, "stale info") || strings.Contains(stderr, "fetch first") || strings.Contains(stderr, "non-fast-forward") {
		return pushRejected, err
	}
	return pushFailed, err
}

// lostRace reports whether a [remote rejected] push lost a race inside
// the remote: another push updated the ref between this push's check and
// its update.
func lostRace(s string) bool {
	for _, m := range []string{"failed to update ref", "cannot lock ref", "failed to lock", "but expected"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// clearStaleLocks removes the lock files git left on the refs under ref
// (the ref itself, or every ref below it when it names a directory): a
// git killed mid-update (SIGKILL, a machine that lost power) leaves
// <ref>.lock behind, and every later update of that ref fails with
// "File exists" until someone removes it. Call it only holding the flock
// that every writer of those refs in this repository takes (.locks/sync
// for refs/tavern/remote, .locks/gitclaims for the fetched claim refs):
// then no live git can be holding one of them.
func (r *repo) clearStaleLocks(ref string) error {
	p := filepath.Join(r.dir, filepath.FromSlash(strings.TrimSuffix(ref, "/")))
	if err := os.Remove(p + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !strings.HasSuffix(ref, "/") {
		return nil
	}
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".lock") {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// fetch runs git fetch of refspecs from remote. A refspec whose remote
// ref does not exist is not an error (missing reports it).
func (r *repo) fetch(ctx context.Context, remote string, refspecs ...string) (missing bool, err error) {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", remote}, refspecs...)
	_, err = r.gitContext(ctx, nil, args...)
	var ge *GitError
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "couldn't find remote ref") {
		return true, nil
	}
	return false, err
}

func (r *repo) updateRef(ref, oid string) error {
	_, err := r.git(nil, "update-ref", ref, oid)
	return err
}
