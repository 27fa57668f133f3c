package agents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// SpawnHooks extend one run of the spawn wrapper at fixed points; the
// workflow packages plug in here: a workspace per drone and the merge
// queue (agents/workspace), the plan a finished item ticks
// (queues/plans). Every field may be nil. Hooks of several SpawnHooks
// run in the order given.
type SpawnHooks struct {
	// Prepare runs once the item is claimed, before the child starts. It
	// may set run.Dir and add to run.Env (a workspace). An error releases
	// the item and fails the spawn; an *AlreadyDone completes the item
	// without running the child (work a killed wrapper finished).
	Prepare func(ctx context.Context, run *Run) error
	// Finish runs after a child that exited 0, when its item has passed
	// its gates, before the item is completed (the merge queue). An error
	// fails the item with the error's text as the reason; run.Result may
	// be changed.
	Finish func(ctx context.Context, run *Run) error
	// Exit runs once the item is settled (done, failed or released) and
	// before the wrapper returns (cleanup, plan sync). Errors are
	// reported, never change the outcome.
	Exit func(run *Run, res *SpawnResult) error
}

// Run is what hooks see of a spawn.
type Run struct {
	M      *Manager
	Agent  string
	Role   string
	Model  string
	Pool   string
	Parent string
	Claim  WorkClaim // nil when the spawn has no item
	Dir    string    // the child's working directory
	Env    []string  // added to the child's environment
	// Set once the child exited:
	Started  time.Time
	Ended    time.Time
	ExitCode int
	CPU      time.Duration // user + system time of the child (and its reaped descendants)
	Output   []byte        // the last bytes of its stdout (up to MaxUsageOutput)
	Result   string        // the item's result (Finish may change it)
}

// AlreadyDone is returned by a Prepare hook when the item's work is
// already finished (a merge that landed before its wrapper died): the
// item completes with Result and no child runs.
type AlreadyDone struct{ Result string }

func (e *AlreadyDone) Error() string { return "already done: " + e.Result }

// HookError is a hook's failure, naming the hook point.
type HookError struct {
	Point string // prepare | finish | exit
	Err   error
}

func (e *HookError) Error() string { return fmt.Sprintf("%s hook: %v", e.Point, e.Err) }
func (e *HookError) Unwrap() error { return e.Err }

func runPrepare(ctx context.Context, hooks []SpawnHooks, run *Run) error {
	for _, h := range hooks {
		if h.Prepare == nil {
			continue
		}
		if err := h.Prepare(ctx, run); err != nil {
			var done *AlreadyDone
			if errors.As(err, &done) {
				return err
			}
			return &HookError{Point: "prepare", Err: err}
		}
	}
	return nil
}

func runFinish(ctx context.Context, hooks []SpawnHooks, run *Run) error {
	for _, h := range hooks {
		if h.Finish == nil {
			continue
		}
		if err := h.Finish(ctx, run); err != nil {
			return err
		}
	}
	return nil
}

func runExit(hooks []SpawnHooks, run *Run, res *SpawnResult) error {
	var errs []error
	for _, h := range hooks {
		if h.Exit == nil {
			continue
		}
		if err := h.Exit(run, res); err != nil {
			errs = append(errs, &HookError{Point: "exit", Err: err})
		}
	}
	return errors.Join(errs...)
}

// byteTail keeps the last max bytes written to it.
type byteTail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *byteTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *byteTail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

// completeWithoutChild completes an item whose work a Prepare hook found
// finished already (AlreadyDone): no child runs, the agent stays as it is.
func (m *Manager) completeWithoutChild(name string, a *Agent, claim WorkClaim, result string, res *SpawnResult, start time.Time) (*SpawnResult, error) {
	res.Outcome = OutcomeDone
	err := claim.Complete(result)
	if err != nil {
		res.ItemError = err.Error()
	}
	res.State = a.Effective()
	res.Duration = time.Since(start).Round(time.Millisecond).String()
	jerr := m.event(journal.Event{Type: "agent.exited", Kind: "agent", Path: AgentPath(name), Agent: name, Parent: a.Parent, Item: res.Item, Queue: res.Queue,
		Data: map[string]any{"outcome": res.Outcome, "recovered": result, "duration": res.Duration}})
	return res, errors.Join(err, jerr)
}
