package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newKnowledgeCommand() *cli.Command {
	limit := func() cli.Flag { return limitFlag("show at most `N` results", 10) }
	domain := func() cli.Flag { return &cli.StringSliceFlag{Name: "domain", Usage: "only `DOMAIN` (repeatable)"} }
	return &cli.Command{
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
				Description: `Add an entry. Without --as the contributor is $TAVERN_AGENT, else "user". A
domain that has no entries yet and is near an existing one ("decisoin" beside
"decision") is refused as a likely typo (exit 2); --new-domain creates it.

Examples:
   tavern knowledge add --domain decision --as alice "we use postgres"
   echo "one package per concern" | tavern knowledge add --domain architecture`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "domain", Value: "general", Usage: "`DOMAIN`, e.g. architecture, decision"},
					&cli.StringFlag{Name: "title", Usage: "a short title"},
					&cli.BoolFlag{Name: "new-domain", Usage: "create DOMAIN even if it is near an existing one"},
					asFlag(), jsonFlag(),
				},
				Action: runKnowledgeAdd,
			},
			{
				Name: "ls", Usage: "list entries, newest first",
				Description: `List entries, newest first.

Examples:
   tavern knowledge ls
   tavern knowledge ls --domain decision --json`,
				Flags:  []cli.Flag{domain(), &cli.BoolFlag{Name: "archived", Usage: "include archived entries"}, asFlag(), jsonFlag()},
				Action: withStore(runKnowledgeLs),
			},
			{
				Name: "search", Usage: "rank entries by keyword similarity", ArgsUsage: "QUERY...",
				Description: `Rank entries by keyword similarity. No match prints nothing ([] with
--json) and exits 0, as every listing does.

Examples:
   tavern knowledge search "package layering"
   tavern knowledge search postgres --domain decision --limit 3 --json`,
				Flags:  []cli.Flag{domain(), limit(), asFlag(), jsonFlag()},
				Action: runKnowledgeSearch,
			},
			{
				Name: "inspect", Usage: "show an entry and its most related entries", ArgsUsage: "ID",
				Description: `Show an entry and its most related entries.

Examples:
   tavern knowledge inspect 01a2f0c4
   tavern knowledge inspect 01a2f0c4 --limit 5 --json`,
				Flags:  []cli.Flag{limit(), asFlag(), jsonFlag()},
				Action: runKnowledgeInspect,
			},
			{
				Name: "archive", Usage: "archive an entry (hidden, kept)", ArgsUsage: "ID",
				Description: `Archive an entry (hidden, kept).

Examples:
   tavern knowledge archive 01a2f0c4`,
				Flags:  []cli.Flag{asFlag(), jsonFlag()},
				Action: runKnowledgeArchive,
			},
		},
	}
}

func runKnowledgeAdd(c *cli.Context) error {
	// Shared knowledge may come from a person: the contributor is then
	// "user" (agents.Person).
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
	k, err := recall.AddKnowledgeWith(s, c.String("domain"), agent.Name, c.String("title"), text,
		recall.KnowledgeOptions{NewDomain: c.Bool("new-domain")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, k)
	}
	outf(c, "%s\n", k.ID)
	return nil
}

// warnNearDomains says when a --domain filter names no domain but is near
// one that exists: the listing would be empty for a typo.
func warnNearDomains(c *cli.Context, s *docstore.Store) {
	for _, d := range c.StringSlice("domain") {
		if exists, near, err := recall.KnownDomain(s, d); err == nil && !exists && len(near) > 0 {
			warnf(c, recall.ErrNearDomain, "--domain %q: no such domain; did you mean %s?", d, schema.NearList(near))
		}
	}
}

func runKnowledgeLs(c *cli.Context, s *docstore.Store) error {
	warnNearDomains(c, s)
	list, err := recall.ListKnowledge(s, recall.KnowledgeFilter{Domains: c.StringSlice("domain"), Archived: c.Bool("archived")})
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(list))
	}
	for _, k := range list {
		outf(c, "%s\n", knowledgeLine(k, -1))
	}
	return nil
}

func runKnowledgeSearch(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("knowledge search takes QUERY")
	}
	q, err := queryArg(c, 0, "knowledge search")
	if err != nil {
		return err
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	warnNearDomains(c, s)
	hits, err := recall.SearchKnowledge(s, q, c.StringSlice("domain"), c.Int("limit"))
	if err = warnSkipped(c, err); err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(hits))
	}
	for _, h := range hits {
		outf(c, "%s\n", knowledgeLine(h.Knowledge, h.Score))
	}
	return nil
}

func runKnowledgeInspect(c *cli.Context) error {
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
}

func runKnowledgeArchive(c *cli.Context) error {
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
}

func knowledgeLine(k *recall.Knowledge, score float64) string {
	s := ""
	if score >= 0 {
		s = fmt.Sprintf("%.3f ", score)
	}
	return fmt.Sprintf("%s%s %-14s %s (%s)", s, k.ID, k.Domain, oneLine(k.Text), k.Contributor)
}
