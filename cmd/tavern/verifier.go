package main

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
)

func newVerifierCommand() *cli.Command {
	return &cli.Command{
		Name:  "verifier",
		Usage: "run the verification daemon",
		Description: `Watches agents/ and verifies every agent that enters verifying, moving it to
done or back to working with the failures in its Notes (a spawned agent whose
command has exited: to failed, resumed by its next spawn). On each pass it also
marks failed the agents whose spawn wrapper died, and bubbles questions left
unanswered for longer than bubble_after (tavern.md) to the next parent.
Runs until interrupted; --once does one pass. With --json each
verification and each bubbled question is one JSON object per line on
stdout.

Examples:
   tavern verifier                # runs until Ctrl-C
   tavern verifier --once`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Value: "verifier", Usage: "verified_by `NAME`"},
			&cli.IntFlag{Name: "max-attempts", Value: agents.DefaultVerifyAttempts, Usage: "failed verifications before an agent goes to failed", Action: atLeastOne("max-attempts", "an agent needs at least one verification")},
			&cli.DurationFlag{Name: "bubble-after", Usage: "move questions unanswered for `DUR` up (0: at once; negative: never)", DefaultText: "tavern.md bubble_after"},
			&cli.DurationFlag{Name: "reconcile", Value: 30 * time.Second, Usage: "full rescan interval besides watcher events", Action: positiveDur("reconcile", "a rescan every 0s never rests")},
			&cli.BoolFlag{Name: "once", Usage: "one pass, then exit"},
		},
		Action: withManager(runVerifier),
	}
}

func runVerifier(c *cli.Context, m *agents.Manager) error {
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		return err
	}
	defer b.Close()
	if !c.Bool("once") {
		defer startBackgroundSync(c, m.Store, m.Journal)() // sync.go: several machines
		defer openServingProjection(c, m, "tavern verifier", false)()
	}
	err = m.RunVerifier(c.Context, agents.VerifierOptions{
		Broker: b,
		By:     c.String("as"), MaxAttempts: c.Int("max-attempts"), BubbleAfter: c.Duration("bubble-after"),
		Reconcile: c.Duration("reconcile"), Once: c.Bool("once"), Explicit: explicit(c, "bubble-after"),
		OnVerified: func(agent, state string, results []agents.Result) {
			passed := 0
			for _, r := range results {
				if r.Passed {
					passed++
				}
			}
			if c.Bool("json") {
				jsonLine(c, map[string]any{"event": "verified", "agent": agent, "state": state, "passed": passed, "failed": len(results) - passed})
				return
			}
			errf(c, "verifier: %s: %d of %d passed -> %s\n", agent, passed, len(results), state)
		},
		OnBubbled: func(q *agents.Question) {
			if c.Bool("json") {
				jsonLine(c, map[string]any{"event": "bubbled", "question": q.ID, "to": q.To})
				return
			}
			errf(c, "verifier: question %s bubbled to %s\n", q.ID, q.To)
		},
		OnError: func(err error) { errf(c, "verifier: %v\n", err) },
	})
	if errors.Is(err, c.Context.Err()) && c.Context.Err() != nil {
		return nil // interrupted: a clean stop
	}
	return err
}
