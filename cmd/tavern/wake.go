package main

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newWakeCommand() *cli.Command {
	return &cli.Command{
		Name:  "wake",
		Usage: "start an agent's session: count the spawn, print its briefing",
		Description: `Prints a compact briefing for the agent's first prompt: every core memory
(of the sleep summaries only the newest 3), recent memories (7 days, 20 max),
unread counts and the channel to read first, knowledge of the last 24 h in the
decision and architecture domains, its claimed items and open questions.
Increments spawns on agents/AGENT.md, unless a process holds the agent's
liveness lock (a child of tavern spawn, or a hooked session: that process
counted the session already).

Example:
   tavern wake --as zealot-2`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runWake,
	}
}

func runWake(c *cli.Context) error {
	as, err := actingAgent(c)
	if err != nil {
		return err
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	if err := ensureAgent(s, as); err != nil {
		return err
	}
	b, err := agents.Wake(s, as, time.Now())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, b)
	}
	outf(c, "%s", b.Text())
	return nil
}

// ensureAgent creates agents/NAME.md (idle, journaled) when NAME has none
// yet: send, recv and memory work for any --as name, so the session
// commands should not refuse an agent that has only ever been a name.
func ensureAgent(s *docstore.Store, name string) error {
	rel, err := schema.Agent.Path(name, nil)
	if err != nil {
		return err
	}
	abs, err := s.Abs(rel)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
		return nil // present (or unreadable: the caller's read reports it)
	}
	m, err := agents.NewManager(s)
	if err != nil {
		return err
	}
	defer m.Close()
	if _, err := m.CreateAgent(agents.AgentSpec{Name: name}); err != nil && !errors.Is(err, docstore.ErrExist) {
		return err
	}
	return nil
}
