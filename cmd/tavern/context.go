package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newContextCommand() *cli.Command {
	return &cli.Command{
		Name:      "context",
		Usage:     "search events, memory, knowledge, messages and items together",
		ArgsUsage: "QUERY...",
		Description: `Finds QUERY (every word, any case) in the event journal, the agent's memory
(only with --as), knowledge, messages and queue items. Prints a timeline (the
last 10 matches, oldest first) and the current state (the newest 5 per
subsystem). No match prints empty sections and exits 0, as every listing
does.

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
	s, err := openStore(c)
	if err != nil {
		return err
	}
	return printContext(c, s, strings.Join(c.Args().Slice(), " "))
}

func printContext(c *cli.Context, s *docstore.Store, query string) error {
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	r, err := agents.Context(s, query, as.AgentName())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, r); err != nil {
			return err
		}
	} else {
		outf(c, "## timeline\n")
		for _, h := range r.Timeline {
			outf(c, "%s\n", contextLine(h))
		}
		outf(c, "\n## current state\n")
		for _, src := range agents.ContextSources {
			if len(r.State[src]) == 0 {
				continue
			}
			outf(c, "%s:\n", src)
			for _, h := range r.State[src] {
				outf(c, "  %s\n", contextLine(h))
			}
		}
	}
	return nil
}

func contextLine(h agents.ContextHit) string {
	who := h.Agent
	if who != "" {
		who = " " + who
	}
	return schema.FormatTime(h.Time) + " " + h.Source + " " + h.Where + who + ": " + oneLine(h.Text)
}
