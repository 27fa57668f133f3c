package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

var errVerifyFailed = errors.New("verification failed")

func init() {
	mapExit(errVerifyFailed, exitError)
	register(&cli.Command{
		Name:      "verify",
		Usage:     "run an agent's commitment assertions and record the results",
		ArgsUsage: "AGENT",
		Description: `Runs every assertion of AGENT's commitments (sh -c, in the project directory,
each under its timeout; the process group is killed on timeout) and writes
status, exit_code, output, verified_at and verified_by into each commitment.
An agent in state verifying then moves on: done if all passed, else back to
working (or failed after --max-attempts) with the failures in its Notes.
An agent cannot verify itself (TAVERN_AGENT or --as equal to AGENT: exit 4).
Exit 1 if any assertion failed.`,
		Flags: []cli.Flag{
			asFlag,
			&cli.IntFlag{Name: "max-attempts", Value: agents.DefaultVerifyAttempts, Usage: "failed verifications before the agent goes to failed"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("verify takes one AGENT")
			}
			m, err := openManager(c)
			if err != nil {
				return err
			}
			defer m.Close()
			name := c.Args().First()
			by := actor(c)
			if by == name {
				return &agents.AgentError{Op: "verify", Path: agents.AgentPath(name), Err: agents.ErrSelfVerify}
			}
			if by == "" {
				by = "user"
			}
			a, err := m.GetAgent(name)
			if err != nil {
				return err
			}
			var results []agents.Result
			state := a.Effective()
			if state == agents.Verifying {
				state, results, err = m.VerifyAgent(c.Context, name, by, c.Int("max-attempts"))
			} else {
				results, err = m.Verify(c.Context, name, by)
			}
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if !r.Passed {
					failed++
				}
			}
			if c.Bool("json") {
				if err := printJSON(c, map[string]any{"agent": name, "state": state, "results": orEmpty(results), "failed": failed}); err != nil {
					return err
				}
			} else {
				printResults(c, results)
				outf(c, "%s: %d passed, %d failed; state %s\n", name, len(results)-failed, failed, state)
			}
			if failed > 0 {
				return withCode(exitError, errSilent)
			}
			return nil
		},
	})
	register(&cli.Command{
		Name:  "verifier",
		Usage: "run the verification daemon",
		Description: `Watches agents/ and verifies every agent that enters verifying, moving it to
done or back to working with the failures in its Notes. On each pass it also
marks failed the agents whose spawn wrapper died, and bubbles questions left
unanswered for longer than bubble_after (tavern.md) to the next parent.
Runs until interrupted; --once does one pass.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Value: "verifier", Usage: "verified_by `NAME`"},
			&cli.IntFlag{Name: "max-attempts", Value: agents.DefaultVerifyAttempts},
			&cli.DurationFlag{Name: "bubble-after", Usage: "override bubble_after (`DUR`; negative: never bubble)"},
			&cli.DurationFlag{Name: "reconcile", Value: 30 * time.Second, Usage: "full rescan interval besides watcher events"},
			&cli.BoolFlag{Name: "once", Usage: "one pass, then exit"},
		},
		Action: withManager(func(c *cli.Context, m *agents.Manager) error {
			if !c.Bool("once") {
				defer startBackgroundSync(c, m.Store, m.Journal)() // sync.go: several machines
			}
			err := m.RunVerifier(c.Context, agents.VerifierOptions{
				By: c.String("as"), MaxAttempts: c.Int("max-attempts"), BubbleAfter: c.Duration("bubble-after"),
				Reconcile: c.Duration("reconcile"), Once: c.Bool("once"),
				OnVerified: func(agent, state string, results []agents.Result) {
					passed := 0
					for _, r := range results {
						if r.Passed {
							passed++
						}
					}
					errf(c, "verifier: %s: %d/%d passed -> %s\n", agent, passed, len(results), state)
				},
				OnBubbled: func(q *agents.Question) { errf(c, "verifier: question %s bubbled to %s\n", q.ID, q.To) },
				OnError:   func(err error) { errf(c, "verifier: %v\n", err) },
			})
			if errors.Is(err, c.Context.Err()) && c.Context.Err() != nil {
				return nil // interrupted: a clean stop
			}
			return err
		}),
	})
}

func printResults(c *cli.Context, results []agents.Result) {
	for _, r := range results {
		mark := "PASS"
		if !r.Passed {
			mark = "FAIL"
		}
		extra := ""
		if r.TimedOut {
			extra = " (timed out)"
		}
		outf(c, "%s %s: `%s` exit %d%s\n", mark, r.Commitment.Description, r.Commitment.Assertion, r.ExitCode, extra)
		if !r.Passed && r.Output != "" {
			outf(c, "%s\n", indent(r.Output))
		}
	}
}

func indent(s string) string {
	out := ""
	for _, l := range splitLines(s) {
		out += "    " + l + "\n"
	}
	return fmt.Sprint(out[:max(len(out)-1, 0)])
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
