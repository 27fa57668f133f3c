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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
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

// InstanceSource is a WorkSource that can tie a claim to a spawn
// instance (QueueWork is one): the claim records the instance and lives
// as long as the instance's lock (schema.InstanceLockKey), which the
// wrapper and its child's whole tree hold, instead of the agent's.
type InstanceSource interface {
	TakeFor(ctx context.Context, queues []string, agent, instance string, steal bool, wait time.Duration, guard func() error) (WorkClaim, error)
}

// WorkSource hands out claims. Take claims one item from queues (in
// order, stealing from others when steal is set) for agent, as a liveness
// claim kept alive by the lock named lockKey, which the caller holds,
// waiting up to wait for one. It returns ErrNoWork when there is nothing
// to claim. guard, when not nil, is asked before every attempt to claim:
// its error ends the take, nothing claimed (queues.TakeOptions.Guard).
type WorkSource interface {
	Take(ctx context.Context, queues []string, agent, lockKey string, steal bool, wait time.Duration, guard func() error) (WorkClaim, error)
}

// SpawnOptions describe one run of the spawn wrapper.
type SpawnOptions struct {
	Name   string // "" draws a themed name
	Role   string
	Parent string
	// ParentFromCaller: Parent is the caller's own identity
	// ($TAVERN_AGENT), not a --parent given: a new agent's parent, and
	// the child's TAVERN_PARENT, but never written over an existing
	// agent's (an agent may run its own parent).
	ParentFromCaller bool
	Model            string
	Pool             string
	Queues           []string // claim one item first (drone: one task, then exit)
	Steal            bool
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
	// Admit, when set, is asked before anything changes: an error (a
	// spent budget, usage.Admit) refuses the spawn like the other
	// refusals — journaled, no state changed. Pools admit their drones
	// themselves (PoolOptions.Admit).
	Admit func() error
	// Signals are forwarded to the child's process group, each followed
	// by SIGCONT (a stopped child would never see it). A forwarded signal
	// marks the run interrupted: the item is released, not failed, and
	// the agent goes back to idle.
	Signals <-chan os.Signal
	// KillGrace is how long a child may take to exit after the first
	// forwarded signal (or ctx done) before its process group is
	// SIGKILLed: a child that ignores SIGTERM must not hold its wrapper
	// (and a draining pool) for ever. 0 takes DefaultKillGrace; negative
	// never escalates.
	KillGrace time.Duration
	// PoolRun: the run is a drone that the running pool Pool started
	// (`pool run`). While it runs it watches the pool's liveness lock
	// (schema.PoolLockKey); once that is free, the pool is gone and the
	// run is interrupted as by SIGTERM: a drone that has not claimed yet
	// claims nothing (ErrNoWork, with ErrPoolGone), a busy one's child is
	// signalled (KillGrace applies) and its item released, not failed.
	// The lock is looked at every poolWatchEvery; on Linux a pool's own
	// drones also get SIGTERM at once when it dies (Pdeathsig).
	PoolRun bool
	// Work is the queue engine; required when Queues is set.
	Work WorkSource
	// ResultLines is how many last stdout lines become the item's result
	// when the child wrote no TAVERN_RESULT file (default 5).
	ResultLines int
	// OnStart is called once the child runs (pid, claimed item or nil).
	OnStart func(agent string, pid int, item WorkClaim)
	// Hooks extend the run (workspaces, the merge queue, plans; see
	// SpawnHooks). Every run also gates (a complete-stage gate holds a
	// successful item until a person decides) and records its usage.
	Hooks []SpawnHooks
}

// SpawnResult is what happened.
type SpawnResult struct {
	Agent       string `json:"agent"`
	Instance    string `json:"instance,omitempty"` // this run's instance id (TAVERN_INSTANCE)
	Spawns      int    `json:"spawns"`
	PID         int    `json:"pid,omitempty"`
	Item        string `json:"item,omitempty"`
	Queue       string `json:"queue,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	Stolen      bool   `json:"stolen,omitempty"`
	ExitCode    int    `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`      // signal that ended the child, if any
	Interrupted bool   `json:"interrupted,omitempty"` // a signal was forwarded, or ended the wait at a gate
	// InterruptedBy names that signal ("SIGTERM"; a cancelled context
	// counts as SIGTERM).
	InterruptedBy string `json:"interrupted_by,omitempty"`
	Outcome       string `json:"outcome"`              // done | failed | released | no_work
	ItemError     string `json:"item_error,omitempty"` // the queue refused the completion (lost claim...)
	// Failure is why the item failed though the child exited 0: a gate
	// rejected it, a Finish step (the merge queue's rebase, check or
	// landing) failed, or the run failed its item itself (ownEnd).
	Failure  string `json:"failure,omitempty"`
	State    string `json:"state"` // agent state after the run
	Duration string `json:"duration"`
}

// DefaultKillGrace is SpawnOptions.KillGrace's default.
const DefaultKillGrace = 10 * time.Second

// Outcomes of a spawn.
const (
	OutcomeDone     = "done"
	OutcomeFailed   = "failed"
	OutcomeReleased = "released"
	OutcomeNoWork   = "no_work"
)

// Spawn runs the spawn wrapper: it creates or updates the agent document,
// takes the agent's lock and a new instance's liveness lock (inherited by
// the child), claims one item when queues are given, starts the child
// with the item body on stdin and TAVERN_* in its environment, renews the
// lease while it runs, captures its output into the agent's message
// chunks, and maps the exit to item and agent states (doc.go, "The spawn
// wrapper" and "Supervision"). The error is about the wrapper; the
// child's failure is in the result.
//
// The steps, each a method of spawnRun: ensure the agent, lock, prepare
// (refusals first: a refused spawn changes nothing), claim, the Prepare
// hooks, start the child, supervise, read its exit status, settle (gates,
// Finish hooks, item, agent, usage, Exit hooks). A step that fails calls
// abort, the one undo sequence.
func (m *Manager) Spawn(ctx context.Context, opt SpawnOptions) (*SpawnResult, error) {
	if len(opt.Command) == 0 {
		return nil, errors.New("spawn: no command")
	}
	if len(opt.Queues) > 0 && opt.Work == nil {
		return nil, errors.New("spawn: queues given without a work source")
	}
	// Every name first: a typo'd queue must not leave a new agent (or an
	// existing one's configuration changed) behind.
	for _, q := range opt.Queues {
		if err := queues.CheckQueue(m.Store, q); err != nil {
			return nil, err
		}
	}
	// A spent budget refuses before anything is written, the agent
	// document included (a refused spawn changes no state).
	if opt.Admit != nil {
		if err := opt.Admit(); err != nil {
			path := ""
			if opt.Name != "" {
				path = AgentPath(opt.Name)
			}
			return nil, m.refuseSpawn(opt.Name, &AgentError{Op: "spawn", Path: path, Err: err})
		}
	}
	r := &spawnRun{m: m, opt: opt, start: time.Now()}
	defer r.unlock()
	defer r.stopRenewal()
	if err := r.ensureAgent(); err != nil {
		return nil, err
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	if opt.PoolRun && opt.Pool != "" {
		var stop context.CancelFunc
		ctx, stop = m.watchPool(ctx, opt.Pool)
		defer stop()
	}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	if err := r.claimWork(ctx); err != nil {
		if errors.Is(err, ErrNoWork) {
			r.res.Outcome, r.res.State = OutcomeNoWork, r.a.Effective()
			r.res.Duration = time.Since(r.start).Round(time.Millisecond).String()
			return r.res, err
		}
		return nil, r.abort(err)
	}
	if err := r.prepareHooks(ctx); err != nil {
		var done *AlreadyDone
		if errors.As(err, &done) {
			return m.completeWithoutChild(r.name, r.a, r.claim, done.Result, r.res, r.start)
		}
		return nil, r.abort(err)
	}
	if r.workDone() {
		// An earlier claim ran the command to success and waited at
		// the item's gate until its wrapper stopped: wait again, then
		// finish (merge), without running the command a second time.
		if err := r.resume(); err != nil {
			return nil, r.abort(err)
		}
		return r.settle(ctx)
	}
	if err := r.startChild(); err != nil {
		return nil, r.abort(err)
	}
	r.supervise(ctx)
	r.exitStatus()
	return r.settle(ctx)
}

// spawnRun is one execution of the spawn wrapper.
type spawnRun struct {
	m     *Manager
	opt   SpawnOptions
	start time.Time

	name     string
	instance string         // this run's id (docstore.NewID)
	agent    *docstore.Lock // schema.AgentLockKey: one wrapper per agent name
	tree     *docstore.Lock // schema.InstanceLockKey: held by the child's whole tree
	a        *Agent
	res      *SpawnResult
	claim    WorkClaim
	sha      string // constitution to record
	accepted bool   // sha accepted anew
	hook     *Run   // what the hooks see and change (hooks.go)

	scratch    string // the child's TAVERN_RESULT lives here
	cmd        *exec.Cmd
	capt       *capture
	captClosed bool
	outW, errW io.WriteCloser
	outWait    func()
	errWait    func()
	outTail    *byteTail // the end of stdout, for the usage ledger
	working    bool      // the agent was moved to working
	waitDone   chan error
	jerr       error // journal failures, reported after the run

	stopRenew chan struct{} // nil: no renewal running
	renewWG   sync.WaitGroup
	renewMu   sync.Mutex
	renewErr  error

	waitErr   error
	forwarded os.Signal
	// resumed: no child ran; the item's work was done by an earlier
	// claim (work_done) and this run waits at its gate (resume).
	resumed bool
	// roleChanged: spawn --role gave the agent another role (prepare).
	roleChanged bool
}

// ensureAgent creates the agent document if needed (drawing a themed
// name when none is given).
func (r *spawnRun) ensureAgent() error {
	m, opt := r.m, r.opt
	spec := AgentSpec{Name: opt.Name, Role: opt.Role, Parent: opt.Parent, Model: opt.Model, Queues: opt.Queues, Pool: opt.Pool}
	if opt.Name == "" {
		a, err := m.CreateAgent(spec)
		if err != nil {
			return err
		}
		r.name = a.Name
		return nil
	}
	r.name = opt.Name
	if _, err := m.GetAgent(opt.Name); errors.Is(err, docstore.ErrNotExist) {
		// A name given (not a pool's drone) that is a clear typo of an
		// existing agent's (alcie for alice) is refused as session start
		// refuses it: a typo never creates state. Only a clear one: spawn
		// --name is how agents are made, and people name them in
		// families, so a name is refused only when it is an existing
		// name with two adjacent letters swapped. coder-2 beside coder,
		// bobby beside bob, david beside dave, leader beside reader,
		// and any series (coder-2 beside coder-1, drone-b beside
		// drone-a) are new agents.
		if !opt.PoolRun {
			near := slices.DeleteFunc(schema.NearNew(opt.Name, AgentNames(m.Store)), func(n string) bool { return !clearTypo(opt.Name, n) })
			if len(near) > 0 {
				return &AgentError{Op: "spawn", Path: AgentPath(opt.Name), Err: &schema.UnknownError{What: "agent", Name: opt.Name, Near: near, Err: err}}
			}
		}
		if _, err := m.CreateAgent(spec); err != nil && !errors.Is(err, docstore.ErrExist) {
			return err
		}
	} else if err != nil {
		return err
	}
	return nil
}

// clearTypo reports whether name is a clear typo of agent (see
// ensureAgent): two adjacent letters swapped, not a series. One letter
// changed is not clear: leader and reader, maria and mario are names.
func clearTypo(name, agent string) bool {
	return schema.Swapped(name, agent) && !series(name, agent)
}

// series reports whether a and b are two names of one series: they
// differ only in their digits, or only after their last '-', '_' or '.'
// by other than two swapped letters (drone-b beside drone-a, not
// code-reveiwer beside code-reviewer: a swap makes no other member).
func series(a, b string) bool {
	drop := func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}
	if strings.Map(drop, a) == strings.Map(drop, b) {
		return true
	}
	i, j := strings.LastIndexAny(a, "-_."), strings.LastIndexAny(b, "-_.")
	return i > 0 && i == j && a[:i] == b[:j] && !schema.Swapped(a, b)
}

// lock takes the agent's lock (busy: another wrapper runs the agent) and
// the new instance's liveness lock, on a descriptor the child inherits.
func (r *spawnRun) lock() error {
	m := r.m
	l, ok, err := m.Store.TryLock(schema.AgentLockKey(r.name))
	if err == nil && !ok && m.reaperMayHold(r.name) {
		// Held while the document shows a dead wrapper, or an agent
		// just marked failed: a reaper is marking it failed, or has and
		// is about to let go (a pool replacing a crashed drone). "Busy"
		// would be a lie, and a pool would count it as a crash.
		l, ok, err = m.awaitAgentLock(r.name)
	}
	if err != nil {
		return err
	}
	if !ok {
		return m.refuseSpawn(r.name, &AgentError{Op: "spawn", Path: AgentPath(r.name), Err: fmt.Errorf("%w: a live process holds its liveness lock", ErrBusy)})
	}
	r.agent = l
	r.instance = docstore.NewID()
	t, ok, err := m.Store.TryLockInheritable(schema.InstanceLockKey(r.instance))
	if err != nil {
		return err
	}
	if !ok { // a fresh UUIDv7: cannot be held
		return fmt.Errorf("spawn: instance lock %s is held", r.instance)
	}
	r.tree = t
	r.res = &SpawnResult{Agent: r.name, Instance: r.instance}
	return nil
}

// agentLockWait bounds how long a spawn waits for an agent's lock that a
// reaper may hold (awaitAgentLock).
const agentLockWait = 5 * time.Second

// deadWrapper reports whether the agent's document shows a wrapper of
// this host that died: in working or waiting, host set to ours, the lock
// of the instance it names free. A reaper holds the agent's lock only to
// mark such an agent failed (reapOne), and lets it go in a moment; any
// other holder (a running wrapper, a session keeper) makes a spawn busy.
func (m *Manager) deadWrapper(name string) bool {
	a, err := m.GetAgent(name)
	if err != nil || !running(a.Effective()) || a.Host == "" || a.Host != m.Host {
		return false
	}
	if a.Instance == "" || schema.ValidName(a.Instance) != nil {
		return true
	}
	free, err := m.Store.LockFree(schema.InstanceLockKey(a.Instance))
	return err == nil && free
}

// reaperMayHold reports whether the holder of the agent's lock may be a
// reaper (reapOne), which holds it only for its writes: the document shows
// a dead wrapper (it is about to mark the agent failed), or a failed agent
// that names no process (marked so, host and pid cleared, by a reaper
// that has not let go yet). Another holder of a failed agent's lock (a
// spawn reviving it) soon makes the document say otherwise.
func (m *Manager) reaperMayHold(name string) bool {
	if m.deadWrapper(name) {
		return true
	}
	a, err := m.GetAgent(name)
	return err == nil && a.Effective() == Failed && a.Host == "" && a.PID == 0
}

// testHookAwaitAgentLock, when set (tests), runs as a spawn starts to wait
// for an agent's lock a reaper may hold.
var testHookAwaitAgentLock func(agent string)

// awaitAgentLock waits up to agentLockWait for the agent's lock while a
// reaper may hold it (reaperMayHold); ok is false when the document stops
// saying so without the lock coming free (a wrapper took it), or the wait
// ran out.
func (m *Manager) awaitAgentLock(name string) (*docstore.Lock, bool, error) {
	if testHookAwaitAgentLock != nil {
		testHookAwaitAgentLock(name)
	}
	deadline := time.Now().Add(agentLockWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		l, err := m.Store.LockContext(ctx, schema.AgentLockKey(name))
		cancel()
		if err == nil {
			return l, true, nil
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return nil, false, err
		}
		if time.Now().After(deadline) || !m.reaperMayHold(name) {
			return nil, false, nil
		}
	}
}

// unlock releases the instance's lock (removing its file: no instance
// is ever reused) and the agent's lock, in that order.
func (r *spawnRun) unlock() {
	if r.tree != nil {
		_ = r.tree.Remove()
		r.tree = nil
	}
	if r.agent != nil {
		_ = r.agent.Unlock()
		r.agent = nil
	}
}

// prepare checks every reason to refuse before anything changes (a
// refused spawn leaves the agent, its items and the queues as they were),
// then reconciles the agent's state (Manager.prepare).
func (r *spawnRun) prepare() error {
	if err := r.m.spawnRefusal(r.name, r.opt); err != nil {
		return r.m.refuseSpawn(r.name, err)
	}
	a, err := r.m.prepare(r.name, r.opt)
	if err != nil {
		return err
	}
	if r.opt.Role != "" && r.opt.Role != a.Role {
		a = withRole(a, r.opt.Role) // written with the move to working
		r.roleChanged = true
	}
	r.a = a
	return nil
}

// claimWork claims one item for the instance when queues are given, and
// reads the role's constitution to record.
func (r *spawnRun) claimWork(ctx context.Context) error {
	opt := r.opt
	if len(opt.Queues) > 0 {
		if err := context.Cause(ctx); errors.Is(err, ErrPoolGone) {
			// A take without a wait would claim all the same.
			return fmt.Errorf("%w: %w", ErrNoWork, err)
		}
		var guard func() error
		if opt.PoolRun && opt.Pool != "" {
			// Once its pool drains, a drone claims nothing: the guard
			// is asked before every attempt of the take, and the watch
			// ends an idle drone's wait (else it would wait, and hold
			// the drain, for up to --idle-wait).
			guard = func() error { return r.m.poolDraining(opt.Pool) }
			var stop context.CancelFunc
			ctx, stop = r.m.watchCond(ctx, guard)
			defer stop()
		}
		c, err := takeFor(ctx, opt.Work, opt.Queues, r.name, r.instance, opt.Steal, opt.Wait, guard)
		if err != nil && guard != nil {
			if cause := context.Cause(ctx); errors.Is(cause, ErrPoolDraining) {
				err = cause // the watch ended the wait
			}
			if errors.Is(err, ErrPoolDraining) {
				err = fmt.Errorf("%w: %w", ErrNoWork, err)
			}
		}
		if err != nil {
			return err
		}
		r.claim = c
		r.res.Item, r.res.Queue, r.res.Attempt, r.res.Stolen = c.ItemID(), c.Queue(), c.Attempt(), c.Stolen()
	}
	sha, accepted, err := r.m.checkConstitution(r.a, opt.AcceptConstitution)
	if err != nil {
		return err
	}
	r.sha, r.accepted = sha, accepted
	return nil
}

// takeFor takes from w for the instance: an InstanceSource ties the
// claim to the instance's lock; another WorkSource to the agent's.
func takeFor(ctx context.Context, w WorkSource, qs []string, agent, instance string, steal bool, wait time.Duration, guard func() error) (WorkClaim, error) {
	if is, ok := w.(InstanceSource); ok {
		return is.TakeFor(ctx, qs, agent, instance, steal, wait, guard)
	}
	return w.Take(ctx, qs, agent, schema.AgentLockKey(agent), steal, wait, guard)
}

// prepareHooks builds what the hooks see (Run) and runs their Prepare
// step (a workspace, a recovered merge) when an item was claimed.
func (r *spawnRun) prepareHooks(ctx context.Context) error {
	opt, a := r.opt, r.a
	dir := opt.Dir
	if dir == "" {
		dir = r.m.ProjectDir()
	}
	r.hook = &Run{M: r.m, Agent: r.name, Role: a.Role, Model: opt.Model, Pool: opt.Pool, Parent: opt.Parent, Claim: r.claim, Dir: dir}
	if r.hook.Model == "" {
		r.hook.Model = a.Model
	}
	if r.claim == nil {
		return nil
	}
	return runPrepare(ctx, opt.Hooks, r.hook)
}

// startChild moves the agent to working (recording the instance) and
// starts the child: own process group, SIGKILL when the wrapper dies
// (Linux), the instance's lock inherited as descriptor 3.
func (r *spawnRun) startChild() error {
	m, opt, a := r.m, r.opt, r.a
	scratch, err := os.MkdirTemp("", "tavern-spawn-")
	if err != nil {
		return err
	}
	r.scratch = scratch
	resultFile := filepath.Join(scratch, "result")
	cmd := exec.Command(opt.Command[0], opt.Command[1:]...)
	cmd.Dir = r.hook.Dir
	cmd.Env = append(append(append([]string(nil), opt.Env...), m.childEnv(a, opt, r.claim, resultFile, r.instance)...), r.hook.Env...)
	switch {
	case r.claim != nil:
		cmd.Stdin = bytes.NewReader(r.claim.Body())
	case opt.Stdin != nil:
		cmd.Stdin = opt.Stdin
	}
	// Own process group: a terminal's Ctrl-C reaches only the wrapper,
	// which forwards it once to the whole group (child and grandchildren).
	// Pdeathsig: the child dies with the wrapper (see startOnLockedThread).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.ExtraFiles = []*os.File{r.tree.File()}
	tee := map[string]io.Writer{}
	if opt.TeeOut != nil {
		tee["stdout"] = opt.TeeOut
	}
	if opt.TeeErr != nil {
		tee["stderr"] = opt.TeeErr
	}
	r.capt = newCapture(m, r.name, tee)
	r.outW, r.outWait = r.capt.stream("stdout")
	r.errW, r.errWait = r.capt.stream("stderr")
	r.outTail = &byteTail{max: MaxUsageOutput}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(r.outW, r.outTail), r.errW
	r.cmd = cmd

	spawns := a.Spawns + 1
	assignment := ""
	if c := r.claim; c != nil {
		assignment = fmt.Sprintf("Item `%s` from queue `%s` (attempt %d): %s\n\n%s", c.ItemID(), c.Queue(), c.Attempt(), c.Title(), clip(string(c.Body()), 2000))
	}
	// Working before the child runs: the child may at once ask a
	// question (working -> waiting) or be looked at by others.
	_, err = m.Transition(r.name, Working, TransitionOptions{By: "spawn", Reason: "spawn " + strconv.Itoa(spawns), Edit: func(d *docstore.Doc) error {
		kv := []docstore.Field{{Key: "spawns", Value: spawns}, {Key: "host", Value: m.Host}, {Key: "instance", Value: r.instance}}
		// The wrapper owns the agent now: a session_id left by a hooked
		// session that died without its end would read as another live
		// session to the child's own session-start hook.
		if d.Has("session_id") {
			if err := d.Delete("session_id"); err != nil {
				return err
			}
		}
		if r.sha != "" {
			kv = append(kv, docstore.Field{Key: "constitution_sha256", Value: r.sha})
		}
		if opt.Model != "" {
			kv = append(kv, docstore.Field{Key: "model", Value: opt.Model})
		}
		if opt.Parent != "" && !opt.ParentFromCaller && opt.Parent != a.Parent {
			// The child is told TAVERN_PARENT=P: its questions must
			// bubble to P too.
			kv = append(kv, docstore.Field{Key: "parent", Value: opt.Parent})
		}
		if r.roleChanged {
			kv = append(kv, docstore.Field{Key: "role", Value: r.a.Role})
			if r.sha == "" {
				// The new role has no constitution: the old role's
				// record would be taken for a changed one at the
				// next spawn.
				if err := d.Delete("constitution_sha256"); err != nil {
					return err
				}
			}
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
	if err != nil {
		// The agent document refused (hand edit, invalid): do not run
		// unrecorded work.
		return err
	}
	r.working = true
	r.res.Spawns = spawns
	if err := r.startOnLockedThread(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = &commandNotFound{err}
		}
		return &AgentError{Op: "spawn", Path: AgentPath(r.name), Err: err}
	}
	r.res.PID = cmd.Process.Pid
	r.hook.Started = time.Now()
	if _, err := m.EditAgent(r.name, func(d *docstore.Doc) error { return d.Set("pid", cmd.Process.Pid) }); err != nil {
		return err
	}
	ev := map[string]any{"spawns": spawns, "pid": cmd.Process.Pid, "command": opt.Command, "instance": r.instance}
	if r.accepted {
		ev["constitution_accepted"] = r.sha
	}
	if c := r.claim; c != nil {
		ev["item"], ev["queue"], ev["attempt"] = c.ItemID(), c.Queue(), c.Attempt()
	}
	r.jerr = m.event(journal.Event{Type: "agent.spawned", Kind: "agent", Path: AgentPath(r.name), Agent: r.name, Parent: a.Parent, Item: r.res.Item, Queue: r.res.Queue, Data: ev})
	if opt.OnStart != nil {
		opt.OnStart(r.name, cmd.Process.Pid, r.claim)
	}
	return nil
}

// startOnLockedThread starts the child from a goroutine locked to its OS
// thread until the child has been reaped: Linux sends Pdeathsig when the
// thread that forked the child exits, not the process, and the Go runtime
// may end an idle thread that no goroutine is locked to. The goroutine
// then waits for the child (waitChild); its result arrives on r.waitDone.
func (r *spawnRun) startOnLockedThread() error {
	started := make(chan error, 1)
	r.waitDone = make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := r.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		r.waitDone <- r.waitChild()
	}()
	return <-started
}

// waitChild waits for the child to exit, kills what is left of its tree
// while its pid (its group's id) is still reserved by the zombie, then
// reaps it and waits for its output to drain.
func (r *spawnRun) waitChild() error {
	pid := r.cmd.Process.Pid
	if err := waitExited(pid); err == nil {
		// Leftovers of the run (background jobs of the child, in its
		// group) must not outlive it: the item is about to be settled,
		// and a failed one handed out again.
		_ = unix.Kill(-pid, unix.SIGKILL)
		if _, err := r.m.killTree(r.instance, pid); err != nil {
			r.jerr = errors.Join(r.jerr, err)
		}
	}
	return r.cmd.Wait()
}

// workDone reports whether the claimed item's work was done by an
// earlier claim that a complete-stage gate held (queues.Claim.MarkWorkDone).
func (r *spawnRun) workDone() bool {
	qc, ok := r.claim.(*queueClaim)
	return ok && !qc.c.WorkDone.IsZero()
}

// resume stands in for the child of a run whose item's work is done: the
// agent goes to working, the lease is renewed, and the run is settled as
// a child that exited 0 with the recorded result would be (its gates,
// the Finish hooks). Nothing is started, so no usage is recorded.
func (r *spawnRun) resume() error {
	qc := r.claim.(*queueClaim)
	_, err := r.m.Transition(r.name, Working, TransitionOptions{By: "spawn", Reason: "its item's work is done (work_done): it waits at the gate", Edit: func(d *docstore.Doc) error {
		kv := []docstore.Field{{Key: "host", Value: r.m.Host}, {Key: "instance", Value: r.instance}}
		if r.opt.Pool != "" {
			kv = append(kv, docstore.Field{Key: "pool", Value: r.opt.Pool})
		}
		return d.SetMany(kv)
	}})
	if err != nil {
		return err
	}
	r.working, r.resumed = true, true
	now := time.Now()
	r.hook.Started, r.hook.Ended = now, now
	r.hook.Result = qc.c.WorkResult
	r.startRenewal()
	return nil
}

// startRenewal renews the claim's lease until stopRenewal (while the
// child runs, and after, until settle stops it: gates and Finish hooks
// hold the item too).
func (r *spawnRun) startRenewal() {
	c := r.claim
	if c == nil {
		return
	}
	r.stopRenew = make(chan struct{})
	stop := r.stopRenew
	r.renewWG.Add(1)
	go func() {
		defer r.renewWG.Done()
		every := max(c.Lease()/3, 10*time.Millisecond)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := c.Renew(); err != nil {
					r.renewMu.Lock()
					r.renewErr = err
					r.renewMu.Unlock()
				}
			}
		}
	}()
}

// supervise renews the lease (startRenewal) and forwards signals (and
// the cancellation of ctx, as SIGTERM) to the child's process group.
func (r *spawnRun) supervise(ctx context.Context) {
	r.startRenewal()
	pgid := r.cmd.Process.Pid
	ctxDone := ctx.Done()
	grace := r.opt.KillGrace
	if grace == 0 {
		grace = DefaultKillGrace
	}
	var escalate <-chan time.Time
	var timer *time.Timer
	forward := func(sig os.Signal) {
		if r.forwarded == nil {
			r.forwarded = sig
		}
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(-pgid, s)
		}
		// A stopped child (SIGSTOP, a job stopped with Ctrl-Z) would
		// keep the signal pending, and its wrapper waiting, for ever.
		_ = syscall.Kill(-pgid, syscall.SIGCONT)
		if timer == nil && grace > 0 {
			timer = time.NewTimer(grace)
			escalate = timer.C
		}
	}
loop:
	for {
		select {
		case r.waitErr = <-r.waitDone:
			break loop
		case sig := <-r.opt.Signals:
			forward(sig)
		case <-ctxDone:
			ctxDone = nil
			forward(syscall.SIGTERM)
		case <-escalate:
			// The child had its grace: it ignores the signal (or hangs).
			escalate = nil
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	if timer != nil {
		timer.Stop()
	}
	r.hook.Ended = time.Now()
	// The pipes close when the child (and any grandchild holding them)
	// exits; wait for the last lines, then flush.
	r.closeOutput()
}

// stopRenewal ends the lease renewal (once; before the item is settled).
func (r *spawnRun) stopRenewal() {
	if r.stopRenew != nil {
		close(r.stopRenew)
		r.renewWG.Wait()
		r.stopRenew = nil
	}
}

// closeOutput ends the capture: pipes closed, last lines read, flushed.
func (r *spawnRun) closeOutput() {
	if r.capt == nil || r.captClosed {
		return
	}
	r.captClosed = true
	r.outW.Close()
	r.errW.Close()
	r.outWait()
	r.errWait()
	if err := r.capt.close(); err != nil {
		r.jerr = errors.Join(r.jerr, r.m.journalOutputError(r.name, err))
	}
}

// signalName is a signal's name as the journal and --json give it
// ("SIGTERM").
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if n := unix.SignalName(s); n != "" {
			return n
		}
		return "signal " + strconv.Itoa(int(s))
	}
	return sig.String()
}

// exitStatus reads the child's exit code, the signal that ended it and
// its CPU time.
func (r *spawnRun) exitStatus() {
	code := 0
	var ee *exec.ExitError
	if errors.As(r.waitErr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.res.Signal = unix.SignalName(ws.Signal())
			if r.res.Signal == "" {
				r.res.Signal = "signal " + strconv.Itoa(int(ws.Signal()))
			}
			code = 128 + int(ws.Signal())
		}
	} else if r.waitErr != nil {
		code = -1
	}
	r.res.ExitCode = code
	r.res.Interrupted = r.forwarded != nil
	if r.forwarded != nil {
		r.res.InterruptedBy = signalName(r.forwarded)
	}
	r.hook.ExitCode, r.hook.Output = code, r.outTail.Bytes()
	if ps := r.cmd.ProcessState; ps != nil {
		r.hook.CPU = ps.UserTime() + ps.SystemTime()
	}
}

// settle maps the exit to the item (first: the queue is the shared
// truth; a successful item waits at its gates and goes through the
// Finish hooks, its lease still renewed), then to the agent, journals
// agent.exited, records usage and runs the Exit hooks. The locks are
// released after (unlock, deferred by Spawn).
func (r *spawnRun) settle(ctx context.Context) (*SpawnResult, error) {
	m, res, claim := r.m, r.res, r.claim
	var itemErr error
	switch {
	case r.forwarded != nil && r.doneByRun():
		// Completed by its own run before the signal ended it: the
		// item is done; the exit code says how the child ended.
		res.Outcome = OutcomeDone
		r.stopRenewal()
	case r.forwarded != nil:
		res.Outcome = OutcomeReleased
		r.stopRenewal()
		if claim != nil {
			reason := "wrapper interrupted by " + r.forwarded.String()
			if cause := context.Cause(ctx); errors.Is(cause, ErrPoolGone) {
				reason += ": " + cause.Error()
			}
			itemErr = claim.Release(reason)
			if r.ownEnd(itemErr) {
				itemErr = nil
			}
		}
	case res.ExitCode == 0:
		res.Outcome = OutcomeDone
		if claim != nil {
			if !r.resumed {
				r.hook.Result = m.result(filepath.Join(r.scratch, "result"), r.capt, r.opt.ResultLines)
			}
			var intr *interruptedError
			if err := m.awaitGates(ctx, r.name, claim, r.hook.Result, r.opt.Signals); errors.As(err, &intr) {
				// Interrupted as a running child would be: the item
				// is not done until a person decides, so it goes back
				// (no attempt spent; its work_done kept: the next
				// claim waits here again) and the agent to idle.
				res.Outcome, res.Interrupted = OutcomeReleased, true
				res.InterruptedBy = signalName(intr.sig)
				r.stopRenewal()
				itemErr = claim.Release("wrapper " + intr.Error())
			} else if r.ownEnd(err) {
				r.stopRenewal() // the item is settled as its run said
			} else if err != nil {
				res.Outcome, res.Failure = OutcomeFailed, err.Error()
				r.stopRenewal()
				if errors.Is(err, queues.ErrRejected) || errors.Is(err, queues.ErrStale) {
					itemErr = err // the item is no longer ours (dead, or re-claimed)
				} else {
					itemErr = claim.Fail(err.Error())
				}
			} else if err := runFinish(ctx, r.opt.Hooks, r.hook); err != nil && ctx.Err() != nil {
				// Interrupted in a Finish step (the merge queue's
				// check, a git step the signal cut short): no verdict
				// on the work, so released as an interrupted child's
				// item is (no attempt spent), the agent back to idle.
				res.Outcome, res.Interrupted = OutcomeReleased, true
				// The signal that cancelled ctx is still in Signals
				// (nothing reads it once the child has exited): exit
				// 128+N names it. Without one, the pool is gone: SIGTERM.
				sig := os.Signal(syscall.SIGTERM)
				select {
				case got := <-r.opt.Signals:
					sig = got
				default:
				}
				res.InterruptedBy = signalName(sig)
				r.stopRenewal()
				itemErr = claim.Release("wrapper interrupted by " + signalName(sig) + " while finishing: " + err.Error())
			} else if err != nil {
				res.Outcome, res.Failure = OutcomeFailed, err.Error()
				r.stopRenewal()
				itemErr = claim.Fail(err.Error())
			} else {
				r.stopRenewal()
				itemErr = claim.Complete(r.hook.Result)
			}
		}
	case r.doneByRun():
		// The child completed its item (tavern item done) and then
		// exited non-zero: the completion stands, so the run is done
		// (never failed or retried); its exit code is reported as it was.
		res.Outcome = OutcomeDone
		r.stopRenewal()
	default:
		res.Outcome = OutcomeFailed
		r.stopRenewal()
		if claim != nil {
			reason := "exit status " + strconv.Itoa(res.ExitCode)
			if res.Signal != "" {
				reason = "killed by " + res.Signal
			}
			if t := r.capt.tail("stderr", 10); len(t) > 0 {
				reason += "\n" + strings.Join(t, "\n")
			}
			itemErr = claim.Fail(reason)
			if r.ownEnd(itemErr) {
				itemErr = nil
			}
		}
	}
	r.stopRenewal()
	_ = os.RemoveAll(r.scratch)
	if itemErr != nil {
		res.ItemError = itemErr.Error()
	}
	r.renewMu.Lock()
	if r.renewErr != nil && res.ItemError == "" {
		res.ItemError = "lease renewal: " + r.renewErr.Error()
	}
	r.renewMu.Unlock()

	final, err := m.finish(r.name, res, r.capt)
	res.State = final
	res.Duration = time.Since(r.start).Round(time.Millisecond).String()
	data := map[string]any{"exit_code": res.ExitCode, "outcome": res.Outcome, "state": final, "duration": res.Duration, "instance": r.instance}
	if res.Signal != "" {
		data["signal"] = res.Signal
	}
	if res.ItemError != "" {
		data["item_error"] = res.ItemError
	}
	if r.resumed {
		data["resumed"] = "work_done" // no child ran: the work was done by an earlier claim
	}
	jerr := errors.Join(r.jerr, m.event(journal.Event{Type: "agent.exited", Kind: "agent", Path: AgentPath(r.name), Agent: r.name, Parent: r.a.Parent, Item: res.Item, Queue: res.Queue, Data: data}))
	// The ledger, the hooks' cleanup, dead-letter escalation: reported,
	// never changing the outcome.
	if !r.resumed { // nothing ran: nothing to record
		jerr = errors.Join(jerr, m.recordUsage(r.hook, res))
	}
	jerr = errors.Join(jerr, runExit(r.opt.Hooks, r.hook, res))
	if res.Outcome == OutcomeFailed {
		if qc, ok := claim.(*queueClaim); ok {
			_, eerr := m.EscalateDead(qc.b, claim.Queue())
			jerr = errors.Join(jerr, eerr)
		}
	}
	if err != nil {
		return res, err
	}
	if itemErr != nil {
		return res, itemErr
	}
	return res, jerr
}

// ownEnd reports whether err, the wrapper's own settling of its claim
// refused as stale, only means that the claim was already ended as the run
// itself said: the child failed or released its own item (`tavern item
// fail|release "$TAVERN_ITEM"`; a person may do the same to the current
// claim). The wrapper then reports what was done, not a lost claim:
//
//   - failed: the outcome is failed (the agent goes to failed) and Failure
//     says so with the item's last_error; a child that exited 0 makes
//     the wrapper exit 1, as any item that failed though its command
//     succeeded does — its work did not get done, and the child said so;
//   - released: the outcome is released (the agent goes back to idle, the
//     item waits for another run); a child that exited 0 makes the
//     wrapper exit 0: nothing failed.
//
// An item the child completed itself is ownDone's (queue.go).
func (r *spawnRun) ownEnd(err error) bool {
	qc, ok := r.claim.(*queueClaim)
	if !ok || !errors.Is(err, queues.ErrStale) {
		return false
	}
	outcome, reason := qc.ownEnd()
	switch outcome {
	case OutcomeFailed:
		r.res.Outcome, r.res.Failure = OutcomeFailed, "its run failed it (tavern item fail): "+reason
	case OutcomeReleased:
		r.res.Outcome, r.res.Failure = OutcomeReleased, ""
	default:
		return false
	}
	return true
}

// doneByRun reports whether the run's item was completed by this very
// claim while it ran: the child ran `tavern item done "$TAVERN_ITEM"`
// itself. Asked once the child has exited (and its group was killed),
// so nothing of the run can change the item any more.
func (r *spawnRun) doneByRun() bool {
	qc, ok := r.claim.(*queueClaim)
	if !ok {
		return false
	}
	it, err := qc.b.Get(qc.c.ID)
	return err == nil && qc.doneBy(it)
}

// abort undoes a run that failed before the child ran to its end, in
// reverse order of the steps: the child (if started) is killed with its
// group and reaped, the output closed, the claim released, the agent (if
// moved to working) marked failed. It returns err. The locks are
// released after (unlock, deferred by Spawn).
func (r *spawnRun) abort(err error) error {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.waitDone
	}
	r.closeOutput()
	if r.claim != nil {
		_ = r.claim.Release("spawn failed: " + err.Error())
	}
	if r.working {
		_, _ = r.m.Transition(r.name, Failed, TransitionOptions{By: "spawn", Reason: "start: " + err.Error(), Edit: clearProcess})
	}
	if r.scratch != "" {
		_ = os.RemoveAll(r.scratch)
	}
	return err
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
	if opt.Role != "" && opt.Role != a.Role {
		// The run changes the role: a typo of a role is refused as at
		// creation, and the new role's constitution is judged as at a
		// first spawn under it (withRole).
		if _, err := m.agentRole(AgentPath(name), opt.Role); err != nil {
			return err
		}
		a = withRole(a, opt.Role)
	}
	if opt.Parent != "" && !opt.ParentFromCaller && opt.Parent != a.Parent && opt.Parent != Person {
		// The run records the parent (startChild), as --role and --model
		// are recorded: judged here as the write would judge it, so a
		// typo or a cycle is refused before anything is claimed or run.
		if err := AgentExists(m.Store, opt.Parent); err != nil {
			return &AgentError{Op: "spawn", Path: AgentPath(name), Err: fmt.Errorf("parent: %w", err)}
		}
		if chain := parentChain(m.Store, name, opt.Parent); chain != "" {
			return &AgentError{Op: "spawn", Path: AgentPath(name), Err: fmt.Errorf("%w: %s", ErrParentCycle, chain)}
		}
	}
	if _, _, err = m.checkConstitution(a, opt.AcceptConstitution); err != nil {
		return err
	}
	return nil
}

// withRole is a copy of a under role, as spawn --role makes it: the
// constitution recorded was the old role's, so none is recorded for the
// new one yet (the first spawn under a role records it).
func withRole(a *Agent, role string) *Agent {
	c := *a
	c.Role, c.Constitution = role, ""
	return &c
}

// refuseSpawn journals a refused spawn ("agent.spawn_refused", with the
// reason) and returns err.
func (m *Manager) refuseSpawn(name string, err error) error {
	path := ""
	if name != "" { // no name yet: a themed one is drawn only for a spawn that runs
		path = AgentPath(name)
	}
	if jerr := m.event(journal.Event{Type: "agent.spawn_refused", Kind: "agent", Path: path, Agent: name,
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
	// We hold the agent's lock, so no wrapper runs the agent: a tree its
	// last instance left (an orphan of a killed wrapper) is killed
	// before anything else runs under the name.
	if err := m.reapTree(a, "spawn"); err != nil {
		return nil, err
	}
	st := a.Effective()
	if running(st) && a.Host != "" {
		// The process recorded is gone: reap it here (ReapAgents would
		// need the lock we hold).
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
	recent := ""
	if c != nil { // nil: no child ran (resume)
		recent = c.recentSection()
	}
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
	if res.Outcome == OutcomeFailed && res.Failure != "" {
		// The item failed after the command (a rejected gate, the merge
		// queue's check): that is why, not the command's status 0.
		first, _, _ := strings.Cut(res.Failure, "\n")
		reason = first + " (its command: " + reason + ")"
	}
	switch res.Outcome {
	case OutcomeReleased:
		to, reason = Idle, "interrupted"
	case OutcomeDone:
		to = Done
		if res.ExitCode != 0 {
			reason = "its run completed the item (tavern item done), then exited with status " + strconv.Itoa(res.ExitCode)
		}
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

func (m *Manager) childEnv(a *Agent, opt SpawnOptions, claim WorkClaim, resultFile, instance string) []string {
	env := []string{
		"TAVERN_DIR=" + m.Store.Root(),
		"TAVERN_AGENT=" + a.Name,
		"TAVERN_INSTANCE=" + instance,
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
