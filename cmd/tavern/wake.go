package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
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
		Flags:  []cli.Flag{agentFlag(), jsonFlag()},
		Action: runWake,
	}
}

func runWake(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	as, err := agentActor(c, s)
	if err != nil {
		return err
	}
	b, err := agents.Wake(s, as.Name, time.Now())
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, b)
	}
	outf(c, "%s", b.Text())
	return nil
}
