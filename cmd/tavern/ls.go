package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	register(&cli.Command{
		Name:      "ls",
		Usage:     "list documents of a kind",
		ArgsUsage: "KIND",
		Description: `Lists documents, filtered by --where (all must match), sorted and limited.
EXPR is field=value, field!=value, field<N, field<=N, field>N, field>=N,
field~substring (case-insensitive) or field? (exists). Fields may be dotted
(bookmarks.general). A list field matches = and ~ if any entry does. Fields
are compared as the current schema sees them (older documents migrated in
memory). < <= > >= compare as numbers when both sides are numbers, as times
when both are timestamps, else as text; a numeric field never matches a
non-numeric bound.
--sort -field sorts descending; documents without the field sort last.
--limit applies after sorting. Documents that fail validation are listed and
marked INVALID; files that do not parse are not listed, and each gives one
error line on stderr (a JSON error object under --json) without failing ls.
An empty result is not an error: exit 0, and [] under --json.
--json prints an array of show --json objects without "body" (add --body).

Examples:
   tavern ls agents --where state=working
   tavern ls items --where queue=build --where priority<2 --sort priority --limit 10 --json`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "where", Aliases: []string{"w"}, Usage: "filter `EXPR` (repeatable)"},
			&cli.StringFlag{Name: "sort", Usage: "sort by `FIELD` (-FIELD for descending)"},
			&cli.IntFlag{Name: "limit", Usage: "print at most `N` documents"},
			&cli.BoolFlag{Name: "body", Usage: "include bodies in --json output"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("ls takes one KIND (see `tavern schema` for the kinds)")
			}
			k, err := schema.Lookup(c.Args().First())
			if err != nil {
				return err
			}
			var conds []docstore.Cond
			for _, w := range c.StringSlice("where") {
				cond, err := docstore.ParseWhere(w)
				if err != nil {
					return err
				}
				conds = append(conds, cond)
			}
			s, err := openStore(c)
			if err != nil {
				return err
			}
			docs, errs := s.List(k)
			for _, e := range errs {
				warn(c, e)
			}
			docs = filterDocs(docs, conds)
			if f := c.String("sort"); f != "" {
				docstore.SortBy(docs, f, func(d *docstore.Doc) map[string]any { return d.View().Fields() })
			}
			if n := c.Int("limit"); n > 0 && len(docs) > n {
				docs = docs[:n]
			}
			if c.Bool("json") {
				out := make([]*docObject, 0, len(docs))
				for _, d := range docs {
					out = append(out, docJSON(s, d, c.Bool("body")))
				}
				return printJSON(c, out)
			}
			printTable(c, k, docs)
			return nil
		},
	})
}

func filterDocs(docs []*docstore.Doc, conds []docstore.Cond) []*docstore.Doc {
	out := docs[:0:0]
next:
	for _, d := range docs {
		f := d.View().Fields()
		for _, c := range conds {
			if !c.Match(f) {
				continue next
			}
		}
		out = append(out, d)
	}
	return out
}

// summaryFields are shown as columns by `ls` when a kind has them.
var summaryFields = []string{"state", "status", "role", "queue", "title", "priority", "attempts", "claimed_by", "topic", "domain", "description", "message_count"}

func printTable(c *cli.Context, k *schema.Kind, docs []*docstore.Doc) {
	var cols []string
	for _, f := range summaryFields {
		if k.Field(f) != nil {
			cols = append(cols, f)
		}
	}
	if len(cols) > 4 {
		cols = cols[:4]
	}
	tw := tabwriter.NewWriter(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\t%s\tREV\n", strings.ToUpper(strings.Join(cols, "\t")))
	for _, d := range docs {
		v := d.View()
		row := []string{d.Name}
		for _, col := range cols {
			val := v.String(col)
			if len(val) > 40 {
				val = val[:37] + "..."
			}
			row = append(row, val)
		}
		rev := d.Rev
		if len(d.Validate(false)) > 0 {
			rev += " INVALID"
		}
		fmt.Fprintf(tw, "%s\t%s\n", strings.Join(row, "\t"), rev)
	}
	tw.Flush()
}
