package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Commitment statuses.
const (
	StatusPending = "pending"
	StatusPassed  = "passed"
	StatusFailed  = "failed"
)

// DefaultAssertionTimeout applies to commitments without a timeout.
const DefaultAssertionTimeout = 60 * time.Second

// outputTail is how much of an assertion's output a commitment keeps.
const outputTail = 2048

// Commitment is the parsed frontmatter of commitments/<agent>/<id>.md.
type Commitment struct {
	ID          string           `json:"id"`
	Agent       string           `json:"agent"`
	Description string           `json:"description"`
	Assertion   string           `json:"assertion"`
	Timeout     time.Duration    `json:"-"` // "timeout" in JSON, as written in the file (60s)
	Status      string           `json:"status"`
	ExitCode    *int             `json:"exit_code,omitempty"`
	Output      string           `json:"output,omitempty"`
	VerifiedAt  schema.Timestamp `json:"verified_at,omitzero"`
	VerifiedBy  string           `json:"verified_by,omitempty"`
	Path        string           `json:"path"`
}

// MarshalJSON writes the timeout as a duration string, the way the
// commitment file holds it, rather than as nanoseconds.
func (c Commitment) MarshalJSON() ([]byte, error) {
	type plain Commitment
	return json.Marshal(struct {
		plain
		Timeout string `json:"timeout"`
	}{plain(c), c.Timeout.String()})
}

func commitmentFromDoc(d *docstore.Doc) *Commitment {
	c := &Commitment{ID: d.String("id"), Agent: d.String("agent"), Description: d.String("description"),
		Assertion: d.String("assertion"), Status: d.String("status"), Output: d.String("output"),
		VerifiedBy: d.String("verified_by"), Path: d.Path}
	if parts := strings.SplitN(d.Name, "/", 2); len(parts) == 2 {
		if c.Agent == "" {
			c.Agent = parts[0]
		}
		if c.ID == "" {
			c.ID = parts[1]
		}
	}
	if c.Status == "" {
		c.Status = StatusPending
	}
	c.Timeout = DefaultAssertionTimeout
	if t, err := time.ParseDuration(d.String("timeout")); err == nil && t > 0 {
		c.Timeout = t
	}
	if n, ok := d.Int("exit_code"); ok {
		v := int(n)
		c.ExitCode = &v
	}
	c.VerifiedAt.Time, _ = d.Time("verified_at")
	return c
}

// AddCommitment records a claim the agent makes and the shell assertion
// that checks it. timeout 0 means DefaultAssertionTimeout.
func (m *Manager) AddCommitment(agent, description, assertion string, timeout time.Duration) (*Commitment, error) {
	if err := ValidAgentName(agent); err != nil {
		return nil, err
	}
	if err := AgentExists(m.Store, agent); err != nil {
		return nil, err
	}
	// Blank is a bad value given, not an invalid document: nothing is
	// written, and the error says which one is missing.
	if strings.TrimSpace(description) == "" {
		return nil, &AgentError{Op: "commit", Path: "commitments/" + agent + "/", Err: fmt.Errorf("%w: a commitment needs a description", ErrEmptyText)}
	}
	if strings.TrimSpace(assertion) == "" {
		return nil, &AgentError{Op: "commit", Path: "commitments/" + agent + "/", Err: fmt.Errorf("%w: a commitment needs an assertion", ErrEmptyText)}
	}
	if timeout <= 0 {
		timeout = DefaultAssertionTimeout
	}
	id := docstore.NewID()
	rel := "commitments/" + agent + "/" + id + ".md"
	now := m.now()
	d, err := docstore.New(schema.Commitment, []docstore.Field{
		{Key: schema.VersionField, Value: schema.Commitment.Version}, {Key: "id", Value: id}, {Key: "agent", Value: agent},
		{Key: "description", Value: description}, {Key: "assertion", Value: assertion}, {Key: "timeout", Value: timeout.String()},
		{Key: "status", Value: StatusPending}, {Key: "created", Value: now}, {Key: "updated", Value: now},
	}, []byte("\n"))
	if err != nil {
		return nil, err
	}
	if err := m.Store.Create(rel, d); err != nil {
		return nil, err
	}
	c := commitmentFromDoc(d)
	return c, m.event(journal.Event{Type: "commitment.added", Kind: "commitment", Path: rel, Agent: agent,
		Data: map[string]any{"description": description, "assertion": assertion, "assertion_sha256": AssertionHash(assertion)}})
}

// Commitments lists an agent's commitments, oldest first.
func (m *Manager) Commitments(agent string) ([]*Commitment, error) {
	if err := AgentExists(m.Store, agent); err != nil {
		return nil, err
	}
	return commitments(m.Store, agent)
}

func commitments(s *docstore.Store, agent string) ([]*Commitment, error) {
	if err := ValidAgentName(agent); err != nil {
		return nil, err
	}
	// Only the agent's own directory: a hook asks on every stop, and a
	// walk of every agent's commitments grows with the team.
	paths, err := s.Docs("commitments/" + agent)
	if err != nil {
		return nil, err
	}
	var out []*Commitment
	for _, p := range paths {
		d, err := s.Get(p)
		if err != nil {
			return out, err
		}
		out = append(out, commitmentFromDoc(d))
	}
	return out, nil
}

// StatusFields are the commitment fields only a verifier writes (see
// InstallRules).
var StatusFields = []string{"status", "exit_code", "output", "verified_at", "verified_by", "duration"}

// Result is the outcome of one assertion run.
type Result struct {
	Commitment *Commitment    `json:"commitment"`
	Passed     bool           `json:"passed"`
	ExitCode   int            `json:"exit_code"`
	TimedOut   bool           `json:"timed_out,omitempty"`
	Tampered   bool           `json:"tampered,omitempty"` // not run: ErrTampered
	Output     string         `json:"output,omitempty"`
	Duration   time.Duration  `json:"duration_ns"`
	Err        error          `json:"-"`
	Extra      map[string]any `json:"-"`
}

// Verify runs every assertion of the agent's commitments (sh -c, in the
// project directory, each under its timeout; the whole process group is
// killed on timeout) and writes status, exit_code, output tail,
// verified_at and verified_by into each commitment. by names the verifier;
// an agent verifying itself is refused with ErrSelfVerify. An assertion
// whose text does not match the hash journaled when the commitment was
// made is never run: the commitment fails, Tampered, with the reason as
// its output. It does not change the agent's state (see VerifyAgent).
func (m *Manager) Verify(ctx context.Context, agent, by string) ([]Result, error) {
	if by == agent {
		return nil, &AgentError{Op: "verify", Path: AgentPath(agent), Err: ErrSelfVerify}
	}
	if by == "" {
		by = "verifier"
	}
	cs, err := m.Commitments(agent)
	if err != nil {
		return nil, err
	}
	results := []Result{} // non-nil: verified, even with no commitments
	records := newAssertionRecords(m.Store.Root())
	for _, c := range cs {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		var r Result
		if terr := records.check(c); terr != nil {
			r = Result{Commitment: c, ExitCode: -1, Tampered: true, Output: "not run: " + terr.Error()}
		} else {
			r = m.runAssertion(ctx, c)
		}
		if ctx.Err() != nil { // interrupted: not a verdict
			return results, ctx.Err()
		}
		now := m.now()
		d, err := m.Store.Update(c.Path, func(d *docstore.Doc) error {
			status := StatusFailed
			if r.Passed {
				status = StatusPassed
			}
			if err := d.SetMany([]docstore.Field{{Key: "status", Value: status}, {Key: "exit_code", Value: r.ExitCode}, {Key: "output", Value: r.Output},
				{Key: "verified_at", Value: now}, {Key: "verified_by", Value: by}, {Key: "duration", Value: r.Duration.Round(time.Millisecond).String()}, {Key: "updated", Value: now}}); err != nil {
				return err
			}
			return nil
		})
		if err != nil {
			return results, err
		}
		r.Commitment = commitmentFromDoc(d)
		results = append(results, r)
		data := map[string]any{"passed": r.Passed, "exit_code": r.ExitCode, "timed_out": r.TimedOut, "by": by}
		if r.Tampered {
			data["tampered"] = true
		}
		if err := m.event(journal.Event{Type: "commitment.verified", Kind: "commitment", Path: c.Path, Agent: agent, Data: data}); err != nil {
			return results, err
		}
	}
	return results, nil
}

func (m *Manager) runAssertion(ctx context.Context, c *Commitment) Result {
	start := time.Now()
	code, out, timedOut, err := RunShell(ctx, m.ProjectDir(), c.Assertion, c.Timeout, nil)
	r := Result{Commitment: c, ExitCode: code, TimedOut: timedOut, Output: out, Duration: time.Since(start), Err: err}
	if timedOut {
		r.Output = strings.TrimSpace(r.Output + fmt.Sprintf("\n[timed out after %s; process group killed]", c.Timeout))
	} else if err != nil {
		r.Output = strings.TrimSpace(r.Output + "\n[" + err.Error() + "]")
	}
	r.Passed = err == nil && !timedOut && code == 0
	return r
}

// RunShell runs script with `sh -c` in dir, in its own process group,
// combining stdout and stderr and keeping the last outputTail bytes. After
// timeout (or when ctx ends) the whole group is killed with SIGKILL, so
// children of the shell cannot keep running or hold the output open. env
// nil inherits the environment. If this process dies first (a SIGKILLed
// verifier), the group dies with it (GroupGuard).
func RunShell(ctx context.Context, dir, script string, timeout time.Duration, env []string) (exitCode int, output string, timedOut bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "/bin/sh", "-c", GroupGuard, "sh", script)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil
	var buf tailBuffer
	buf.max = outputTail
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	// Linux sends Pdeathsig when the thread that forked the child ends,
	// not the process: fork and wait on one locked thread.
	ran := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ran <- cmd.Run()
	}()
	err = <-ran
	// The shell may have exited while its group lives on: kill it anyway.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	timedOut = errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, buf.String(), false, nil
	case errors.As(err, &ee):
		code := ee.ExitCode()
		if code < 0 { // killed by a signal
			code = 128
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		return code, buf.String(), timedOut, nil
	case errors.Is(err, exec.ErrWaitDelay):
		return 0, buf.String(), timedOut, nil
	}
	return -1, buf.String(), timedOut, &os.PathError{Op: "run", Path: "/bin/sh", Err: err}
}

// GroupGuard is the shell RunShell runs an assertion ($1) under (and the
// merge queue its check, agents/workspace): the
// assertion runs as its child, and the SIGTERM the kernel sends the guard
// when the process that started it dies (Pdeathsig) kills the whole
// group, the assertion's own children included, which no timeout would
// end any more. The guard exits with the assertion's status (128+N for a
// signal N, as the verifier reads a killed shell).
const GroupGuard = `trap 'kill -KILL 0' TERM; /bin/sh -c "$1" & wait $!`

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
}

// Tampered lists the commitments whose assertion does not match the hash
// journaled when they were made (see TamperedError): `tavern agent audit`
// and `tavern check` report them. Unreadable commitments come back as
// errors.
func (m *Manager) Tampered() ([]*TamperedError, error) {
	docs, errs := m.Store.List(schema.Commitment)
	records := newAssertionRecords(m.Store.Root())
	var out []*TamperedError
	for _, d := range docs {
		var te *TamperedError
		if errors.As(records.check(commitmentFromDoc(d)), &te) {
			out = append(out, te)
		}
	}
	return out, errors.Join(errs...)
}
