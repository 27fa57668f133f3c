package main

import (
	"fmt"

	"github.com/tavernhq/tavern/agents/recall"
	"github.com/urfave/cli/v2"
)

func init() {
	as := []cli.Flag{asFlag, jsonFlag}
	limit := &cli.IntFlag{Name: "limit", Value: 10, Usage: "show at most `N` results"}
	register(&cli.Command{
		Name:  "memory",
		Usage: "an agent's private memory: add, ls, search, inspect, archive",
		Description: `Memory entries are memory/AGENT/ID.md with a kebab-case topic, a core flag
and an archived flag. Every subcommand acts --as an agent and sees only its
entries. IDs may be shortened to a unique prefix.

Examples:
   tavern memory add --as zealot --topic parser --core "we parse with goldmark"
   tavern memory search --as zealot "parser goldmark"
   tavern memory inspect --as zealot 0194a7c2`,
		Subcommands: []*cli.Command{
			{
				Name: "add", Usage: "add a memory", ArgsUsage: "[TEXT...]",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "topic", Usage: "kebab-case `TOPIC`", Value: recall.DefaultTopic},
					&cli.BoolFlag{Name: "core", Usage: "a core memory: always in the wake briefing"},
				}, as...),
				Action: func(c *cli.Context) error {
					agent, err := actingAgent(c)
					if err != nil {
						return err
					}
					text, err := textArg(c, 0)
					if err != nil {
						return err
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					m, err := recall.AddMemory(s, agent, c.String("topic"), text, c.Bool("core"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, m)
					}
					outf(c, "%s\n", m.ID)
					return nil
				},
			},
			{
				Name: "ls", Usage: "list memories (core first, then newest)",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "topic", Usage: "only `TOPIC`"},
					&cli.BoolFlag{Name: "core", Usage: "only core memories"},
					&cli.BoolFlag{Name: "archived", Usage: "include archived entries"},
				}, as...),
				Action: func(c *cli.Context) error {
					agent, err := actingAgent(c)
					if err != nil {
						return err
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					list, err := recall.ListMemory(s, agent, recall.MemoryFilter{Topic: c.String("topic"), CoreOnly: c.Bool("core"), Archived: c.Bool("archived")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if list == nil {
							list = []*recall.Memory{}
						}
						return printJSON(c, list)
					}
					for _, m := range list {
						outf(c, "%s\n", memoryLine(m, -1))
					}
					return nil
				},
			},
			{
				Name: "search", Usage: "rank memories by keyword similarity", ArgsUsage: "QUERY...",
				Flags: append([]cli.Flag{limit}, as...),
				Action: func(c *cli.Context) error {
					agent, err := actingAgent(c)
					if err != nil {
						return err
					}
					if c.NArg() == 0 {
						return usageErr("memory search takes QUERY")
					}
					q, _ := textArg(c, 0)
					s, err := openStore(c)
					if err != nil {
						return err
					}
					hits, err := recall.SearchMemory(s, agent, q, c.Int("limit"))
					if err != nil {
						return err
					}
					return printMemoryHits(c, hits)
				},
			},
			{
				Name: "inspect", Usage: "show a memory and its most related entries", ArgsUsage: "ID",
				Flags: append([]cli.Flag{limit}, as...),
				Action: func(c *cli.Context) error {
					agent, err := actingAgent(c)
					if err != nil {
						return err
					}
					if c.NArg() != 1 {
						return usageErr("memory inspect takes ID")
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
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
				},
			},
			{
				Name: "archive", Usage: "archive a memory (hidden, kept)", ArgsUsage: "ID",
				Flags: as,
				Action: func(c *cli.Context) error {
					agent, err := actingAgent(c)
					if err != nil {
						return err
					}
					if c.NArg() != 1 {
						return usageErr("memory archive takes ID")
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					m, err := recall.ArchiveMemory(s, agent, c.Args().First())
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, m)
					}
					outf(c, "%s\n", m.Path)
					return nil
				},
			},
		},
	})
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
	return fmt.Sprintf("%s%s %s %-16s %s", s, m.ID, core, m.Topic, oneLineCLI(m.Text))
}

func printMemoryHits(c *cli.Context, hits []recall.MemoryHit) error {
	if c.Bool("json") {
		return printJSON(c, hits)
	}
	for _, h := range hits {
		outf(c, "%s\n", memoryLine(h.Memory, h.Score))
	}
	if len(hits) == 0 {
		return errSilentNothing
	}
	return nil
}

func oneLineCLI(s string) string {
	r := []rune(s)
	for i, x := range r {
		if x == '\n' {
			return string(r[:i]) + " …"
		}
		if i >= 100 {
			return string(r[:i]) + "…"
		}
	}
	return s
}
