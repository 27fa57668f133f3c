package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// WorkClaim is an item the spawn wrapper claimed for its child. The queues
// adapter (queue.go) implements it over package queues.
type WorkClaim interface {
	ItemID() string
	Queue() string
	Path() string // document path of the claimed item
	Attempt() int
	Title() string
	Body() []byte
	Stolen() bool // taken from a queue other than the agent's own
	Lease() time.Duration
	Renew() error
	Complete(result string) error
	Fail(reason string) error
	Release(reason string) error
}

// WorkSource hands out claims. Take claims one item from queues (in
// order, stealing from others when steal is set) for agent, as a liveness
// claim kept alive by the lock named lockKey, which the caller holds,
// waiting up to wait for one. It returns ErrNoWork when there is nothing
// to claim.
type WorkSource interface {
	Take(ctx context.Context, queues []string, agent, lockKey string, steal bool, wait time.Duration) (WorkClaim, error)
}

// SpawnOptions describe one run of the spawn wrapper.
type SpawnOptions struct {
	Name   string // "" draws a themed name
	Role   string
	Parent string
	Model  string
	Pool   string
	Queues []string // claim one item first (drone: one task, then exit)
	Steal  bool
	// Wait is how long to wait for an item when none is claimable (an
	// idle drone); 0 returns ErrNoWork at once.
	Wait    time.Duration
	Command []string // the child's argv
	// Env is the child's base environment (the cmd passes os.Environ());
	// the TAVERN_* variables are added to it.
	Env []string
	Dir string // working directory; default the project directory
	// Stdin is the child's stdin when no item is claimed (nil: empty).
	Stdin io.Reader
	// Tee copies the child's output lines to these writers as captured.
	TeeOut, TeeErr io.Writer
	// AcceptConstitution spawns under a changed role constitution and
	// records its new sha256.
	AcceptConstitution bool
	// Signals are forwarded to the child's process group. A forwarded
	// signal marks the run interrupted: the item is released, not failed,
	// and the agent goes back to idle.
	Signals <-chan os.Signal
	// Work is the queue engine; required when Queues is set.
	Work WorkSource
	// ResultLines is how many last stdout lines become the item's result
	// when the child wrote no TAVERN_RESULT file (default 5).
	ResultLines int
	// OnStart is called once the child runs (pid, claimed item or nil).
	OnStart func(agent string, pid int, item WorkClaim)
}

// SpawnResult is what happened.
type SpawnResult struct {
	Agent       string `json:"agent"`
	Spawns      int    `json:"spawns"`
	PID         int    `json:"pid,omitempty"`
	Item        string `json:"item,omitempty"`
	Queue       string `json:"queue,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	Stolen      bool   `json:"stolen,omitempty"`
	ExitCode    int    `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`      // signal that ended the child, if any
	Interrupted bool   `json:"interrupted,omitempty"` // a signal was forwarded
	Outcome     string `json:"outcome"`               // done | failed | released | no_work
	ItemError   string `json:"item_error,omitempty"`  // the queue refused the completion (lost claim...)
	State       string `json:"state"`                 // agent state after the run
	Duration    string `json:"duration"`
}

// Outcomes of a spawn.
const (
	OutcomeDone     = "done"
	OutcomeFailed   = "failed"
	OutcomeReleased = "released"
	OutcomeNoWork   = "no_work"
)

// Spawn runs the spawn wrapper: it creates or updates the agent document,
// takes the agent's liveness lock and holds it for the life of the child,
// claims one item when queues are given, starts the child with the item
// body on stdin and TAVERN_* in its environment, renews the lease while it
// runs, captures its output into the agent's message chunks, and maps the
// exit to item and agent states (doc.go, "The spawn wrapper"). The error
// is about the wrapper; the child's failure is in the result.
func (m *Manager) Spawn(ctx context.Context, opt SpawnOptions) (*SpawnResult, error) {
	if len(opt.Command) == 0 {
		return nil, errors.New("spawn: no command")
	}
	if len(opt.Queues) > 0 && opt.Work == nil {
		return nil, errors.New("spawn: queues given without a work source")
	}
	start := time.Now()
	name := opt.Name
	if name == "" {
		a, err := m.CreateAgent(AgentSpec{Role: opt.Role, Parent: opt.Parent, Model: opt.Model, Queues: opt.Queues, Pool: opt.Pool})
		if err != nil {
			return nil, err
		}
		name = a.Name
	} else if _, err := m.GetAgent(name); errors.Is(err, docstore.ErrNotExist) {
		if _, err := m.CreateAgent(AgentSpec{Name: name, Role: opt.Role, Parent: opt.Parent, Model: opt.Model, Queues: opt.Queues, Pool: opt.Pool}); err != nil && !errors.Is(err, docstore.ErrExist) {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	lock, ok, err := m.Store.TryLock(schema.AgentLockKey(name))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, m.refuseSpawn(name, &AgentError{Op: "spawn", Path: AgentPath(name), Err: fmt.Errorf("%w: a live process holds its liveness lock", ErrBusy)})
	}
	defer lock.Unlock()

	// Every reason to refuse is checked before anything changes: a refused
	// spawn leaves the agent, its items and the queues as they were.
	if err := m.spawnRefusal(name, opt); err != nil {
		return nil, m.refuseSpawn(name, err)
	}
	a, err := m.prepare(name, opt)
	if err != nil {
		return nil, err
	}
	res := &SpawnResult{Agent: name}

	var claim WorkClaim
	if len(opt.Queues) > 0 {
		claim, err = opt.Work.Take(ctx, opt.Queues, name, schema.AgentLockKey(name), opt.Steal, opt.Wait)
		if errors.Is(err, ErrNoWork) {
			res.Outcome, res.State = OutcomeNoWork, a.Effective()
			res.Duration = time.Since(start).Round(time.Millisecond).String()
			return res, err
		}
		if err != nil {
			return nil, err
		}
		res.Item, res.Queue, res.Attempt, res.Stolen = claim.ItemID(), claim.Queue(), claim.Attempt(), claim.Stolen()
	}

	sha, accepted, err := m.checkConstitution(a, opt.AcceptConstitution)
	if err != nil {
		if claim != nil {
			_ = claim.Release("constitution changed")
		}
		return nil, err
	}

	// The child's result file lives outside the store: it is scratch.
	scratch, err := os.MkdirTemp("", "tavern-spawn-")
	if err != nil {
		m.releaseOnError(claim, err)
		return nil, err
	}
	defer os.RemoveAll(scratch)
	resultFile := filepath.Join(scratch, "result")

	dir := opt.Dir
	if dir == "" {
		dir = m.ProjectDir()
	}
	cmd := exec.Command(opt.Command[0], opt.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), opt.Env...), m.childEnv(a, opt, claim, resultFile)...)
	switch {
	case claim != nil:
		cmd.Stdin = bytes.NewReader(claim.Body())
	case opt.Stdin != nil:
		cmd.Stdin = opt.Stdin
	}
	// Own process group: a terminal's Ctrl-C reaches only the wrapper,
	// which forwards it once to the whole group (child and grandchildren).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tee := map[string]io.Writer{}
	if opt.TeeOut != nil {
		tee["stdout"] = opt.TeeOut
	}
	if opt.TeeErr != nil {
		tee["stderr"] = opt.TeeErr
	}
	capt := newCapture(m, name, tee)
	outW, outWait := capt.stream("stdout")
	errW, errWait := capt.stream("stderr")
	cmd.Stdout, cmd.Stderr = outW, errW

	spawns := a.Spawns + 1
	assignment := ""
	if claim != nil {
		assignment = fmt.Sprintf("Item `%s` from queue `%s` (attempt %d): %s\n\n%s", claim.ItemID(), claim.Queue(), claim.Attempt(), claim.Title(), clip(string(claim.Body()), 2000))
	}
	// Working before the child runs: the child may at once ask a
	// question (working -> waiting) or be looked at by others.
	_, terr := m.Transition(name, Working, TransitionOptions{By: "spawn", Reason: "spawn " + strconv.Itoa(spawns), Edit: func(d *docstore.Doc) error {
		kv := []docstore.Field{{Key: "spawns", Value: spawns}, {Key: "host", Value: m.Host}}
		if sha != "" {
			kv = append(kv, docstore.Field{Key: "constitution_sha256", Value: sha})
		}
		if opt.Model != "" {
			kv = append(kv, docstore.Field{Key: "model", Value: opt.Model})
		}
		if opt.Pool != "" {
			kv = append(kv, docstore.Field{Key: "pool", Value: opt.Pool})
		}
		if len(opt.Queues) > 0 {
			kv = append(kv, docstore.Field{Key: "queues", Value: opt.Queues})
		}
		if err := d.SetMany(kv); err != nil {
			return err
		}
		if assignment != "" {
			d.SetBody(SetSection(d.Body(), SectionAssignment, assignment))
		}
		return nil
	}})
	if terr != nil {
		// The agent document refused (hand edit, invalid): do not run
		// unrecorded work.
		outW.Close()
		errW.Close()
		capt.close()
		m.releaseOnError(claim, terr)
		return nil, terr
	}
	res.Spawns = spawns
	if err := cmd.Start(); err != nil {
		outW.Close()
		errW.Close()
		capt.close()
		m.releaseOnError(claim, err)
		_, _ = m.Transition(name, Failed, TransitionOptions{By: "spawn", Reason: "start: " + err.Error(), Edit: clearProcess})
		return nil, &AgentError{Op: "spawn", Path: AgentPath(name), Err: err}
	}
	res.PID = cmd.Process.Pid
	if _, err := m.EditAgent(name, func(d *docstore.Doc) error { return d.Set("pid", cmd.Process.Pid) }); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		outW.Close()
		errW.Close()
		capt.close()
		m.releaseOnError(claim, err)
		return nil, err
	}
	ev := map[string]any{"spawns": spawns, "pid": cmd.Process.Pid, "command": opt.Command}
	if accepted {
		ev["constitution_accepted"] = sha
	}
	if claim != nil {
		ev["item"], ev["queue"], ev["attempt"] = claim.ItemID(), claim.Queue(), claim.Attempt()
	}
	jerr := m.event(journal.Event{Type: "agent.spawned", Kind: "agent", Path: AgentPath(name), Agent: name, Parent: a.Parent, Item: res.Item, Queue: res.Queue, Data: ev})
	if opt.OnStart != nil {
		opt.OnStart(name, cmd.Process.Pid, claim)
	}

	// Renew the lease while the child runs; forward signals.
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	var renewErr error
	var renewMu sync.Mutex
	stopRenew := make(chan struct{})
	var renewWG sync.WaitGroup
	if claim != nil {
		renewWG.Add(1)
		go func() {
			defer renewWG.Done()
			every := max(claim.Lease()/3, 10*time.Millisecond)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stopRenew:
					return
				case <-t.C:
					if err := claim.Renew(); err != nil {
						renewMu.Lock()
						renewErr = err
						renewMu.Unlock()
					}
				}
			}
		}()
	}
	var waitErr error
	var forwarded os.Signal
	ctxDone := ctx.Done()
loop:
	for {
		select {
		case waitErr = <-waitDone:
			break loop
		case sig := <-opt.Signals:
			if forwarded == nil {
				forwarded = sig
			}
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(-cmd.Process.Pid, s)
			}
		case <-ctxDone:
			ctxDone = nil
			if forwarded == nil {
				forwarded = syscall.SIGTERM
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	close(stopRenew)
	renewWG.Wait()
	// The pipes close when the child (and any grandchild holding them)
	// exits; wait for the last lines, then flush.
	outW.Close()
	errW.Close()
	outWait()
	errWait()
	if err := capt.close(); err != nil {
		jerr = errors.Join(jerr, m.journalOutputError(name, err))
	}

	code := 0
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
			code = 128 + int(ws.Signal())
		}
	} else if waitErr != nil {
		code = -1
	}
	res.ExitCode = code
	res.Interrupted = forwarded != nil

	// Item first (the queue is the shared truth), then the agent.
	var itemErr error
	switch {
	case forwarded != nil:
		res.Outcome = OutcomeReleased
		if claim != nil {
			itemErr = claim.Release("wrapper interrupted by " + forwarded.String())
		}
	case code == 0:
		res.Outcome = OutcomeDone
		if claim != nil {
			itemErr = claim.Complete(m.result(resultFile, capt, opt.ResultLines))
		}
	default:
		res.Outcome = OutcomeFailed
		if claim != nil {
			reason := "exit status " + strconv.Itoa(code)
			if res.Signal != "" {
				reason = "killed by " + res.Signal
			}
			if t := capt.tail("stderr", 10); len(t) > 0 {
				reason += "\n" + strings.Join(t, "\n")
			}
			itemErr = claim.Fail(reason)
		}
	}
	if itemErr != nil {
		res.ItemError = itemErr.Error()
	}
	renewMu.Lock()
	if renewErr != nil && res.ItemError == "" {
		res.ItemError = "lease renewal: " + renewErr.Error()
	}
	renewMu.Unlock()

	final, err := m.finish(name, res, capt)
	res.State = final
	res.Duration = time.Since(start).Round(time.Millisecond).String()
	data := map[string]any{"exit_code": code, "outcome": res.Outcome, "state": final, "duration": res.Duration}
	if res.Signal != "" {
		data["signal"] = res.Signal
	}
	if res.ItemError != "" {
		data["item_error"] = res.ItemError
	}
	jerr = errors.Join(jerr, m.event(journal.Event{Type: "agent.exited", Kind: "agent", Path: AgentPath(name), Agent: name, Parent: a.Parent, Item: res.Item, Queue: res.Queue, Data: data}))
	if err != nil {
		return res, err
	}
	if itemErr != nil {
		return res, itemErr
	}
	return res, jerr
}

// spawnRefusal returns why the agent may not be spawned now (nil: it may),
// without changing anything: a hand edit the engine will not act on, an
// agent waiting for its verifier, a changed constitution not accepted.
func (m *Manager) spawnRefusal(name string, opt SpawnOptions) error {
	a, err := m.GetAgent(name)
	if err != nil {
		return err
	}
	if a.IllegalEdit() {
		return CheckAgent(a)
	}
	if st := a.Effective(); st == Verifying {
		return &AgentError{Op: "spawn", Path: AgentPath(name), Err: fmt.Errorf("%w: in verifying (run `tavern verify %s` or the verifier)", ErrBusy, name)}
	}
	_, _, err = m.checkConstitution(a, opt.AcceptConstitution)
	return err
}

// refuseSpawn journals a refused spawn ("agent.spawn_refused", with the
// reason) and returns err.
func (m *Manager) refuseSpawn(name string, err error) error {
	if jerr := m.event(journal.Event{Type: "agent.spawn_refused", Kind: "agent", Path: AgentPath(name), Agent: name,
		Data: map[string]any{"reason": err.Error()}}); jerr != nil {
		return errors.Join(err, jerr)
	}
	return err
}

// prepare reconciles the agent's state before a run: a previous wrapper
// that died leaves working/waiting with a pid (failed now), done and failed
// agents return to idle, an agent back in working after a failed
// verification is resumed as it is. An agent in verifying waits for its
// verifier (ErrBusy).
func (m *Manager) prepare(name string, opt SpawnOptions) (*Agent, error) {
	a, err := m.GetAgent(name)
	if err != nil {
		return nil, err
	}
	if a.IllegalEdit() {
		return nil, CheckAgent(a)
	}
	st := a.Effective()
	if running(st) && a.Host != "" {
		// We hold the liveness lock, so the process recorded is gone: reap
		// it here (ReapAgents would need the lock we hold).
		pid := a.PID
		if _, err := m.Transition(name, Failed, TransitionOptions{By: "spawn", Reason: "previous wrapper died (pid " + strconv.Itoa(pid) + ")",
			Edit: clearProcess}); err != nil {
			return nil, err
		}
		if err := m.event(journal.Event{Type: "agent.reaped", Kind: "agent", Path: AgentPath(name), Agent: name, Data: map[string]any{"pid": pid}}); err != nil {
			return nil, err
		}
		st = Failed
	}
	switch st {
	case Verifying:
		return nil, &AgentError{Op: "spawn", Path: AgentPath(name), Err: fmt.Errorf("%w: in verifying (run `tavern verify %s` or the verifier)", ErrBusy, name)}
	case Waiting:
		// waiting without a process: its question is still open; a new
		// run resumes it.
		if _, err := m.Transition(name, Working, TransitionOptions{By: "spawn", Reason: "resumed while waiting"}); err != nil {
			return nil, err
		}
	case Done, Failed:
		if _, err := m.Transition(name, Idle, TransitionOptions{By: "spawn", Reason: "respawn"}); err != nil {
			return nil, err
		}
	}
	return m.GetAgent(name)
}

func (m *Manager) releaseOnError(claim WorkClaim, err error) {
	if claim != nil {
		_ = claim.Release("spawn failed: " + err.Error())
	}
}

// result is the item's result: the TAVERN_RESULT file if the child wrote
// one, else its last stdout lines.
func (m *Manager) result(file string, c *capture, lines int) string {
	if data, err := os.ReadFile(file); err == nil {
		return strings.TrimSpace(clip(string(data), 16<<10))
	}
	if lines <= 0 {
		lines = 5
	}
	return strings.Join(c.tail("stdout", lines), "\n")
}

// finish moves the agent after the child exited and clears pid/host, all
// in the writes that precede the release of the liveness lock.
func (m *Manager) finish(name string, res *SpawnResult, c *capture) (string, error) {
	recent := c.recentSection()
	edit := func(d *docstore.Doc) error {
		if recent != "" {
			d.SetBody(SetSection(d.Body(), SectionMessages, recent))
		}
		return clearProcess(d)
	}
	a, err := m.GetAgent(name)
	if err != nil {
		return "", err
	}
	st := a.Effective()
	if st == Waiting && res.Outcome != OutcomeReleased {
		if _, err := m.Transition(name, Working, TransitionOptions{By: "spawn", Reason: "child exited while waiting"}); err != nil {
			return st, err
		}
	}
	to := Failed
	reason := "exit status " + strconv.Itoa(res.ExitCode)
	switch res.Outcome {
	case OutcomeReleased:
		to, reason = Idle, "interrupted"
	case OutcomeDone:
		to = Done
		cs, err := m.Commitments(name)
		if err != nil {
			return st, err
		}
		if len(cs) > 0 {
			to = Verifying
		}
	}
	if _, err := m.Transition(name, to, TransitionOptions{By: "spawn", Reason: reason, Edit: edit}); err != nil {
		// The state may have been moved meanwhile (e.g. forced by a
		// person): still clear the process fields.
		_, _ = m.EditAgent(name, edit)
		return st, err
	}
	return to, nil
}

func (m *Manager) childEnv(a *Agent, opt SpawnOptions, claim WorkClaim, resultFile string) []string {
	env := []string{
		"TAVERN_DIR=" + m.Store.Root(),
		"TAVERN_AGENT=" + a.Name,
		"TAVERN_RESULT=" + resultFile,
	}
	parent := a.Parent
	if opt.Parent != "" {
		parent = opt.Parent
	}
	env = append(env, "TAVERN_PARENT="+parent)
	if a.Role != "" {
		env = append(env, "TAVERN_ROLE="+a.Role)
		if p, err := m.Store.Abs(ConstitutionPath(a.Role)); err == nil {
			if _, err := os.Stat(p); err == nil {
				env = append(env, "TAVERN_CONSTITUTION="+p)
			}
		}
	}
	model := a.Model
	if opt.Model != "" {
		model = opt.Model
	}
	if model != "" {
		env = append(env, "TAVERN_MODEL="+model)
	}
	if claim != nil {
		p, _ := m.Store.Abs(claim.Path())
		env = append(env, "TAVERN_ITEM="+claim.ItemID(), "TAVERN_ITEM_PATH="+p,
			"TAVERN_QUEUE="+claim.Queue(), "TAVERN_ATTEMPT="+strconv.Itoa(claim.Attempt()))
	}
	return env
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
