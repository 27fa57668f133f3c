package agents

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher"
)

// DefaultVerifyAttempts is how many failed verifications send an agent to
// failed instead of back to working.
const DefaultVerifyAttempts = 3

// VerifyAgent verifies an agent in state verifying and moves it on: to done
// when every commitment passed, else back to working with the failures
// appended to its Notes and verify_attempts counted, or to failed once
// maxAttempts verifications have failed. Concurrent verifiers exclude each
// other per agent (lock "verify/<name>"); the loser gets ErrBusy. An agent
// not in verifying is left alone (state is returned, results nil).
func (m *Manager) VerifyAgent(ctx context.Context, name, by string, maxAttempts int) (string, []Result, error) {
	if by == "" {
		by = "verifier"
	}
	if maxAttempts <= 0 {
		maxAttempts = DefaultVerifyAttempts
	}
	l, ok, err := m.Store.TryLock("verify/" + name)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, &AgentError{Op: "verify", Path: AgentPath(name), Err: fmt.Errorf("%w: another verifier is verifying it", ErrBusy)}
	}
	defer l.Unlock()
	a, err := m.GetAgent(name)
	if err != nil {
		return "", nil, err
	}
	if a.IllegalEdit() || a.Effective() != Verifying {
		return a.Effective(), nil, nil
	}
	results, err := m.Verify(ctx, name, by)
	if err != nil {
		return Verifying, results, err
	}
	var failures []string
	for _, r := range results {
		if !r.Passed {
			line := fmt.Sprintf("- %s: `%s` exit %d", r.Commitment.Description, r.Commitment.Assertion, r.ExitCode)
			if r.TimedOut {
				line += " (timed out)"
			}
			if r.Tampered {
				line += " (not run: the assertion changed since the commitment was made)"
			}
			if out := lastLines(r.Output, 3); out != "" {
				line += "\n\n  ```\n  " + strings.ReplaceAll(out, "\n", "\n  ") + "\n  ```"
			}
			failures = append(failures, line)
		}
	}
	if len(failures) == 0 {
		_, err := m.Transition(name, Done, TransitionOptions{By: by, Reason: fmt.Sprintf("commitments passed: %d of %d", len(results), len(results))})
		return Done, results, err
	}
	attempt := a.VerifyAttempts + 1
	to := Working
	switch {
	case attempt >= maxAttempts:
		to = Failed
	case a.PID == 0 && a.Spawns > 0:
		// A spawned agent whose child exited (the wrapper cleared pid
		// before verifying): nobody would work on it. Back in working
		// it would sit there with no process, forever; failed is where
		// the state machine puts an agent that needs a person (or a
		// respawn, which resumes it with the failures in its Notes). An
		// agent never spawned is driven by hand: back to working.
		to = Failed
	}
	note := fmt.Sprintf("Verification %d failed (%s, by %s):\n\n%s", attempt, m.now().UTC().Format(time.RFC3339), by, strings.Join(failures, "\n"))
	reason := fmt.Sprintf("commitments failed: %d of %d, attempt %d", len(failures), len(results), attempt)
	if to == Failed && attempt < maxAttempts {
		reason += "; no process runs the agent: respawn it to resume"
	}
	_, err = m.Transition(name, to, TransitionOptions{By: by, Reason: reason,
		Edit: func(d *docstore.Doc) error {
			d.SetBody(AppendSection(d.Body(), SectionNotes, note))
			return d.Set("verify_attempts", attempt)
		}})
	return to, results, err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// VerifierOptions configure RunVerifier.
type VerifierOptions struct {
	By          string        // verified_by; default "verifier"
	MaxAttempts int           // default DefaultVerifyAttempts
	BubbleAfter time.Duration // 0: tavern.md bubble_after; < 0: do not bubble questions
	// Explicit names the options given on purpose ("bubble_after"): a
	// zero listed here is the value zero (bubble every open question at
	// once), not tavern.md's bubble_after.
	Explicit []string
	// Reconcile is the interval of a full scan besides the watcher's
	// events (default 30s): a safety net, not the mechanism.
	Reconcile time.Duration
	// OnVerified is called after each verification (for the CLI's output).
	OnVerified func(agent, state string, results []Result)
	// OnBubbled is called for each question that moved up.
	OnBubbled func(q *Question)
	// OnError reports errors that do not stop the daemon.
	OnError func(error)
	// Once does one pass and returns.
	Once bool
	// Broker, when set, makes the verifier reap queue claims of dead
	// holders too (Manager.RunReaper) every ReapEvery (default 1s),
	// besides the agents of dead wrappers it reaps on each pass.
	Broker    *queues.Broker
	ReapEvery time.Duration
}

// RunVerifier is the verification daemon. It watches agents/ (watcher
// package: fsnotify with rescans) and on every change verifies the agents
// that entered verifying; on each pass it also reaps agents whose wrapper
// died and bubbles questions left unanswered for longer than BubbleAfter.
// It returns when ctx is done.
func (m *Manager) RunVerifier(ctx context.Context, opt VerifierOptions) error {
	if opt.Reconcile <= 0 {
		opt.Reconcile = 30 * time.Second
	}
	report := func(err error) {
		if err != nil && opt.OnError != nil {
			opt.OnError(err)
		}
	}
	bubbleAfter := opt.BubbleAfter
	if bubbleAfter == 0 && !slices.Contains(opt.Explicit, "bubble_after") {
		bubbleAfter = m.BubbleAfter()
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if opt.Broker != nil {
		if opt.Once {
			_, err := m.Reap(opt.Broker)
			report(err)
		} else {
			rctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); m.RunReaper(rctx, opt.Broker, opt.ReapEvery, report) }()
			defer wg.Wait()
			defer stop()
		}
	}
	if !opt.Once {
		for _, dir := range []string{"agents", "questions"} {
			w, err := watcher.WatchFS(filepath.Join(m.Store.Root(), dir), watcher.FSOptions{
				OnChange: func([]watcher.Change) { poke() }, Reconcile: opt.Reconcile, OnDegrade: m.degraded})
			if err != nil {
				return err
			}
			defer w.Close()
		}
	}
	for {
		agents, errs := m.ListAgents()
		for _, e := range errs {
			report(e)
		}
		for _, a := range agents {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if a.IllegalEdit() || a.Effective() != Verifying {
				continue
			}
			state, results, err := m.VerifyAgent(ctx, a.Name, opt.By, opt.MaxAttempts)
			if err != nil {
				report(err)
				continue
			}
			if results != nil && opt.OnVerified != nil {
				opt.OnVerified(a.Name, state, results)
			}
		}
		_, _, err := m.ReapAgents() // its bad files: reported above, by ListAgents
		report(err)
		next := time.Time{}
		if bubbleAfter >= 0 {
			moved, due, err := m.Bubble(bubbleAfter)
			report(err)
			for _, q := range moved {
				if opt.OnBubbled != nil {
					opt.OnBubbled(q)
				}
			}
			next = due
		}
		if opt.Once {
			return nil
		}
		wait := opt.Reconcile
		if !next.IsZero() {
			if d := time.Until(next); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}
