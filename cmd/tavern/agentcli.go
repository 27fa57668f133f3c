package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

// Shared by the agent commands (agent, constitution, commit, verify,
// verifier, ask, questions, answer, bubble, spawn, pool, demo).

func init() {
	mapExit(agents.ErrBadAgentName, exitUsage)
	mapExit(agents.ErrIllegalTransition, exitConflict)
	mapExit(agents.ErrIllegalEdit, exitInvalid)
	mapExit(agents.ErrConstitutionChanged, exitConflict)
	mapExit(agents.ErrBusy, exitConflict)
	mapExit(agents.ErrSelfVerify, exitConflict)
	mapExit(agents.ErrUnverified, exitConflict)
	mapExit(agents.ErrAnswered, exitConflict)
	mapExit(agents.ErrNoWork, exitNotFound)
	mapExit(agents.ErrOwnAssertion, exitConflict)
	mapExit(agents.ErrTampered, exitInvalid)
}

// openManager opens the store and its agent manager.
func openManager(c *cli.Context) (*agents.Manager, error) {
	s, err := openStore(c)
	if err != nil {
		return nil, err
	}
	return agents.NewManager(s)
}

// actor is the agent identity of the caller: --as, else TAVERN_AGENT
// (set by the spawn wrapper for its child), else "" (a person).
func actor(c *cli.Context) string {
	if v := c.String("as"); v != "" {
		return v
	}
	return os.Getenv("TAVERN_AGENT")
}

// contextWithoutCancel keeps the command's values but not main's
// cancellation on SIGINT: commands that drain on their own signal channel
// (pool run) decide themselves what a signal means.
func contextWithoutCancel(c *cli.Context) context.Context {
	return context.WithoutCancel(c.Context)
}

// withManager is an Action that opens the agents Manager for fn and
// closes it afterwards.
func withManager(fn func(*cli.Context, *agents.Manager) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		m, err := openManager(c)
		if err != nil {
			return err
		}
		defer m.Close()
		return fn(c, m)
	}
}
