package main

import (
	"fmt"

	"github.com/tavernhq/tavern/agents/recall"
	"github.com/urfave/cli/v2"
)

func init() {
	limit := &cli.IntFlag{Name: "limit", Value: 10, Usage: "show at most `N` results"}
	domain := &cli.StringSliceFlag{Name: "domain", Usage: "only `DOMAIN` (repeatable)"}
	register(&cli.Command{
		Name:  "knowledge",
		Usage: "shared knowledge: add, ls, search, inspect, archive",
		Description: `Knowledge entries are knowledge/DOMAIN/ID.md, shared by all agents, with the
contributor recorded. IDs may be shortened to a unique prefix.

Examples:
   tavern knowledge add --domain architecture --as zealot "one package per concern"
   tavern knowledge search "package layering"
   tavern knowledge inspect 0194a7c2`,
		Subcommands: []*cli.Command{
			{
				Name: "add", Usage: "add an entry", ArgsUsage: "[TEXT...]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "domain", Value: "general", Usage: "`DOMAIN`, e.g. architecture, decision"},
					&cli.StringFlag{Name: "title", Usage: "a short title"},
					asFlag, jsonFlag,
				},
				Action: func(c *cli.Context) error {
					// Shared knowledge may come from a person: without --as
					// the contributor is "user" (as verify's verified_by).
					agent := c.String("as")
					if agent == "" {
						agent = "user"
					}
					text, err := textArg(c, 0)
					if err != nil {
						return err
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					k, err := recall.AddKnowledge(s, c.String("domain"), agent, c.String("title"), text)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, k)
					}
					outf(c, "%s\n", k.ID)
					return nil
				},
			},
			{
				Name: "ls", Usage: "list entries, newest first",
				Flags: []cli.Flag{domain, &cli.BoolFlag{Name: "archived", Usage: "include archived entries"}, asFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					s, err := openStore(c)
					if err != nil {
						return err
					}
					list, err := recall.ListKnowledge(s, recall.KnowledgeFilter{Domains: c.StringSlice("domain"), Archived: c.Bool("archived")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if list == nil {
							list = []*recall.Knowledge{}
						}
						return printJSON(c, list)
					}
					for _, k := range list {
						outf(c, "%s\n", knowledgeLine(k, -1))
					}
					return nil
				},
			},
			{
				Name: "search", Usage: "rank entries by keyword similarity", ArgsUsage: "QUERY...",
				Flags: []cli.Flag{domain, limit, asFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return usageErr("knowledge search takes QUERY")
					}
					q, _ := textArg(c, 0)
					s, err := openStore(c)
					if err != nil {
						return err
					}
					hits, err := recall.SearchKnowledge(s, q, c.StringSlice("domain"), c.Int("limit"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, hits)
					}
					for _, h := range hits {
						outf(c, "%s\n", knowledgeLine(h.Knowledge, h.Score))
					}
					if len(hits) == 0 {
						return errSilentNothing
					}
					return nil
				},
			},
			{
				Name: "inspect", Usage: "show an entry and its most related entries", ArgsUsage: "ID",
				Flags: []cli.Flag{limit, asFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("knowledge inspect takes ID")
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					k, rel, err := recall.InspectKnowledge(s, c.Args().First(), c.Int("limit"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, map[string]any{"entry": k, "related": rel})
					}
					outf(c, "%s\n%s\n\nrelated:\n", knowledgeLine(k, -1), k.Text)
					for _, h := range rel {
						outf(c, "%s\n", knowledgeLine(h.Knowledge, h.Score))
					}
					return nil
				},
			},
			{
				Name: "archive", Usage: "archive an entry (hidden, kept)", ArgsUsage: "ID",
				Flags: []cli.Flag{asFlag, jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("knowledge archive takes ID")
					}
					s, err := openStore(c)
					if err != nil {
						return err
					}
					k, err := recall.ArchiveKnowledge(s, c.Args().First())
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, k)
					}
					outf(c, "%s\n", k.Path)
					return nil
				},
			},
		},
	})
}

func knowledgeLine(k *recall.Knowledge, score float64) string {
	s := ""
	if score >= 0 {
		s = fmt.Sprintf("%.3f ", score)
	}
	return fmt.Sprintf("%s%s %-14s %s (%s)", s, k.ID, k.Domain, oneLineCLI(k.Text), k.Contributor)
}
