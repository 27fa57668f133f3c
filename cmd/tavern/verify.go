package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func newVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "run an agent's commitment assertions and record the results",
		ArgsUsage: "AGENT",
		Description: `Runs every assertion of AGENT's commitments (sh -c, in the project directory,
each under its timeout; the process group is killed on timeout) and writes
status, exit_code, output, verified_at and verified_by into each commitment.
An assertion changed since the commitment was made is not run and fails.
An agent in state verifying then moves on: done if all passed, else back to
working (or failed after --max-attempts) with the failures in its Notes. A
spawned agent whose command has exited goes to failed instead (no process
would work on it; its next spawn resumes it with those Notes).
An agent cannot verify itself (TAVERN_AGENT or --as equal to AGENT: exit 4).
Exit 1 if any assertion failed.

Examples:
   tavern verify alice
   tavern verify alice --json`,
		Flags: []cli.Flag{
			asFlag(),
			&cli.IntFlag{Name: "max-attempts", Value: agents.DefaultVerifyAttempts, Usage: "failed verifications before the agent goes to failed", Action: atLeastOne("max-attempts", "an agent needs at least one verification")},
			jsonFlag(),
		},
		Action: runVerify,
	}
}

func runVerify(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("verify takes one AGENT")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	name := c.Args().First()
	actor, err := actorOf(c, m.Store)
	if err != nil {
		return err
	}
	by := actor.Name
	if by == name {
		return &agents.AgentError{Op: "verify", Path: agents.AgentPath(name), Err: agents.ErrSelfVerify}
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
