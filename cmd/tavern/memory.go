package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newMemoryCommand() *cli.Command {
	as := func(more ...cli.Flag) []cli.Flag { return append(more, asFlag(), jsonFlag()) }
	limit := func() cli.Flag { return limitFlag("show at most `N` results", 10) }
	return &cli.Command{
		Name:  "memory",
		Usage: "an agent's private memory: add, ls, search, inspect, archive",
		Description: `Memory entries are memory/AGENT/ID.md with a kebab-case topic, a core flag
and an archived flag. Every subcommand acts for one agent and sees only its
entries (--as, else $TAVERN_AGENT, else yours: memory/user/). IDs may be
shortened to a unique prefix. A topic is a free tag: one near a topic the
agent already uses (stlye beside style) is written with a warning, and an
ls --topic that names none but is near one warns.

Examples:
   tavern memory add --as zealot --topic parser --core "we parse with goldmark"
   tavern memory search --as zealot "parser goldmark"
   tavern memory inspect --as zealot 0194a7c2`,
		Subcommands: []*cli.Command{
			{
				Name: "add", Usage: "add a memory", ArgsUsage: "[TEXT...]",
				Description: `Add a memory.

Examples:
   tavern memory add --as alice --topic db-choice "we chose postgres"
   tavern memory add --as alice --topic role --core "I own the parser"`,
				Flags: as(
					&cli.StringFlag{Name: "topic", Usage: "kebab-case `TOPIC`", Value: recall.DefaultTopic},
					&cli.BoolFlag{Name: "core", Usage: "a core memory: always in the wake briefing"},
				),
				Action: runMemoryAdd,
			},
			{
				Name: "ls", Usage: "list memories (core first, then newest)",
				Description: `List memories (core first, then newest).

Examples:
   tavern memory ls --as alice
   tavern memory ls --as alice --core --json`,
				Flags: as(
					&cli.StringFlag{Name: "topic", Usage: "only `TOPIC`"},
					&cli.BoolFlag{Name: "core", Usage: "only core memories"},
					&cli.BoolFlag{Name: "archived", Usage: "include archived entries"},
				),
				Action: withAgentStore(nil, runMemoryLs),
			},
			{
				Name: "search", Usage: "rank memories by keyword similarity", ArgsUsage: "QUERY...",
				Description: `Rank memories by keyword similarity. No match prints nothing ([] with
--json) and exits 0, as every listing does.

Examples:
   tavern memory search postgres --as alice
   tavern memory search "parser bug" --as alice --limit 3 --json`,
				Flags:  as(limit()),
				Action: withAgentStore(needArgs("memory search takes QUERY", 1, -1), runMemorySearch),
			},
			{
				Name: "inspect", Usage: "show a memory and its most related entries", ArgsUsage: "ID",
				Description: `Show a memory and its most related entries.

Examples:
   tavern memory inspect 01a2f0c4 --as alice`,
				Flags:  as(limit()),
				Action: withAgentStore(needArgs("memory inspect takes ID", 1, 1), runMemoryInspect),
			},
			{
				Name: "archive", Usage: "archive a memory (hidden, kept)", ArgsUsage: "ID",
				Description: `Archive a memory (hidden, kept).

Examples:
   tavern memory archive 01a2f0c4 --as alice`,
				Flags:  as(),
				Action: withAgentStore(needArgs("memory archive takes ID", 1, 1), runMemoryArchive),
			},
		},
	}
}

// withAgentStore is an Action for the commands that act for someone
// (actorOf): the arguments first (args says what they must be; nil
// takes any), then the store and the actor.
func withAgentStore(args func(c *cli.Context) error, fn func(c *cli.Context, s *docstore.Store, agent string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if args != nil {
			if err := args(c); err != nil {
				return err
			}
		}
		s, err := openStore(c)
		if err != nil {
			return err
		}
		a, err := actorOf(c, s)
		if err != nil {
			return err
		}
		return fn(c, s, a.Name)
	}
}

func runMemoryAdd(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	agent, err := actorOf(c, s)
	if err != nil {
		return err
	}
	text, err := textArg(c, 0)
	if err != nil {
		return err
	}
	// Before the write: a topic near one the agent uses is likely a typo.
	// A topic is a tag, not a thing with a name, so it is a warning.
	var near []string
	if topic := c.String("topic"); c.IsSet("topic") {
		if exists, n, err := recall.KnownTopic(s, agent.Name, topic); err == nil && !exists {
			near = n
		}
	}
	m, err := recall.AddMemory(s, agent.Name, c.String("topic"), text, c.Bool("core"))
	if err != nil {
		return err
	}
	if len(near) > 0 {
		warnf(c, schema.ErrLikelyTypo, "--topic %q: a new topic; did you mean %s?", c.String("topic"), schema.NearList(near))
	}
	if c.Bool("json") {
		return printJSON(c, m)
	}
	outf(c, "%s\n", m.ID)
	return nil
}

func runMemoryLs(c *cli.Context, s *docstore.Store, agent string) error {
	// A filter that names no topic but is near one: empty for a typo.
	if topic := c.String("topic"); topic != "" {
		if exists, near, err := recall.KnownTopic(s, agent, topic); err == nil && !exists && len(near) > 0 {
			warnf(c, schema.ErrLikelyTypo, "--topic %q: no such topic; did you mean %s?", topic, schema.NearList(near))
		}
	}
	list, err := recall.ListMemory(s, agent, recall.MemoryFilter{Topic: c.String("topic"), CoreOnly: c.Bool("core"), Archived: c.Bool("archived")})
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(list))
	}
	for _, m := range list {
		outf(c, "%s\n", memoryLine(m, -1))
	}
	return nil
}

func runMemorySearch(c *cli.Context, s *docstore.Store, agent string) error {
	q, err := queryArg(c, 0, "memory search")
	if err != nil {
		return err
	}
	hits, err := recall.SearchMemory(s, agent, q, c.Int("limit"))
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(hits))
	}
	for _, h := range hits {
		outf(c, "%s\n", memoryLine(h.Memory, h.Score))
	}
	return nil
}

func runMemoryInspect(c *cli.Context, s *docstore.Store, agent string) error {
	m, rel, err := recall.InspectMemory(s, agent, c.Args().First(), c.Int("limit"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]any{"entry": m, "related": rel})
	}
	outf(c, "%s\n%s\n\nrelated:\n", memoryLine(m, -1), m.Text)
	for _, h := range rel {
		outf(c, "%s\n", memoryLine(h.Memory, h.Score))
	}
	return nil
}

func runMemoryArchive(c *cli.Context, s *docstore.Store, agent string) error {
	m, err := recall.ArchiveMemory(s, agent, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, m)
	}
	outf(c, "%s\n", m.Path)
	return nil
}

func memoryLine(m *recall.Memory, score float64) string {
	core := " "
	if m.Core {
		core = "*"
	}
	s := ""
	if score >= 0 {
		s = fmt.Sprintf("%.3f ", score)
	}
	return fmt.Sprintf("%s%s %s %-16s %s", s, m.ID, core, m.Topic, oneLine(m.Text))
}

// warnSkipped prints a warning (path:line:col) for each memory or
// knowledge file a listing skipped and returns nil; any other error is
// returned as is. One bad file never hides the others.
func warnSkipped(c *cli.Context, err error) error {
	bad := recall.Skipped(err)
	if bad == nil {
		return err
	}
	for _, e := range bad {
		if c.Bool("json") {
			// Under --json every error on stderr is a JSON object, the
			// warnings ls gives for the same files included.
			warn(c, e)
			continue
		}
		errf(c, "tavern: warning: %v\n", e)
	}
	return nil
}
