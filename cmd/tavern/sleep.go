package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func newSleepCommand() *cli.Command {
	return &cli.Command{
		Name:  "sleep",
		Usage: "end an agent's session: store its summary as a core memory",
		Description: `Writes --summary as a core memory of topic "summary" and sets last_sleep on
agents/AGENT.md. "--summary -" reads the summary from stdin.

Example:
   tavern sleep --as zealot-2 --summary "parser half done; next: lists"`,
		Flags:  []cli.Flag{agentFlag(), jsonFlag(), &cli.StringFlag{Name: "summary", Usage: "what this session did and what is next (required)"}},
		Before: requireFlags("summary"),
		Action: runSleep,
	}
}

func runSleep(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	as, err := agentActor(c, s)
	if err != nil {
		return err
	}
	summary := c.String("summary")
	if summary == "-" {
		if summary, err = textArg(c, c.NArg()); err != nil {
			return err
		}
	}
	m, err := agents.Sleep(s, as.Name, summary, time.Now())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, m)
	}
	outf(c, "%s\n", m.Path)
	return nil
}
