package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
)

func newContextCommand() *cli.Command {
	return &cli.Command{
		Name:      "context",
		Usage:     "search events, memory, knowledge, messages, notes, questions and items together",
		ArgsUsage: "QUERY...",
		Description: `Finds QUERY in the event journal, the agent's memory (only with --as),
knowledge, messages, notes, questions and queue items: every word must match
a word of the entry, by stem (databases finds database) or, for words of four
letters or more, as a prefix (postgres finds PostgreSQL). Prints a timeline
(the last 10 matches, oldest first) and the current state (the newest 5 per
subsystem); sections without matches are left out. No match prints nothing
and exits 0, as every listing does.

Example:
   tavern context stateless --as zealot-2`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runContext,
	}
}

func runContext(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("context takes QUERY")
	}
	q, err := queryArg(c, 0, "context")
	if err != nil {
		return err
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	return printContext(c, s, q)
}

func printContext(c *cli.Context, s *docstore.Store, query string) error {
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	r, err := agents.Context(s, query, as.AgentName())
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, r); err != nil {
			return err
		}
	} else {
		outf(c, "%s", r.Text())
	}
	return nil
}
