package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// GitError is a git command that failed: its arguments, exit status and
// output (stderr, else stdout).
type GitError struct {
	Dir    string
	Args   []string
	Code   int
	Output string
}

func (e *GitError) Error() string {
	out := strings.TrimSpace(e.Output)
	if len(out) > 2000 {
		out = out[:2000] + "…"
	}
	return fmt.Sprintf("git %s (in %s): exit %d: %s", strings.Join(e.Args, " "), e.Dir, e.Code, out)
}

// git runs one git command in dir and returns its trimmed stdout. The
// environment is the process's, without a prompt for credentials and
// with stable (C locale) messages; extra adds variables.
func git(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(gitEnv(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_EDITOR=true"), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := errb.String()
		if strings.TrimSpace(msg) == "" {
			msg = out.String()
		}
		if code == -1 {
			msg = err.Error()
		}
		return strings.TrimSpace(out.String()), &GitError{Dir: dir, Args: args, Code: code, Output: msg}
	}
	return strings.TrimSpace(out.String()), nil
}

// gitEnv is the environment without variables that would point git at
// another repository or index than the one named by the command's dir.
func gitEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY":
			continue
		}
		out = append(out, kv)
	}
	return out
}
