package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/schema"
)

func newSchemaCommand() *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "describe the document kinds and their fields",
		ArgsUsage: "[KIND]",
		Description: `Without KIND, lists the kinds and where their files live. With KIND, lists its
fields. --json-schema prints a JSON Schema for editors (e.g. the YAML language
server) to validate frontmatter.

Examples:
   tavern schema
   tavern schema agent
   tavern schema --json-schema item > item.schema.json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json-schema", Usage: "print the JSON Schema of KIND"},
			jsonFlag(),
		},
		Action: runSchema,
	}
}

func runSchema(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("schema takes at most one KIND")
	}
	if c.NArg() == 0 {
		if c.Bool("json-schema") {
			return usageErr("--json-schema needs a KIND")
		}
		return listKinds(c)
	}
	k, err := schema.Lookup(c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json-schema") {
		return printJSON(c, k.JSONSchema())
	}
	if c.Bool("json") {
		return printJSON(c, kindJSON(k))
	}
	outf(c, "%s (%s): %s\nfile: .tavern/%s   schema_version: %d\n\n", k.Name, k.Plural, k.Doc, k.Pattern, k.Version)
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tREQUIRED\tDEFAULT\tNOTES")
	for _, f := range k.Fields {
		notes := f.Doc
		if len(f.Enum) > 0 {
			notes = strings.TrimSpace("one of " + strings.Join(f.Enum, "|") + " " + notes)
		}
		def := ""
		if f.Default != nil {
			def = fmt.Sprint(f.Default)
		}
		req := ""
		if f.Required {
			req = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, f.Type, req, def, notes)
	}
	return tw.Flush()
}

func listKinds(c *cli.Context) error {
	if c.Bool("json") {
		var out []map[string]any
		for _, k := range schema.Kinds() {
			out = append(out, kindJSON(k))
		}
		return printJSON(c, out)
	}
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tPLURAL\tFILE\tDESCRIPTION")
	for _, k := range schema.Kinds() {
		fmt.Fprintf(tw, "%s\t%s\t.tavern/%s\t%s\n", k.Name, k.Plural, k.Pattern, k.Doc)
	}
	return tw.Flush()
}

func kindJSON(k *schema.Kind) map[string]any {
	var fields []map[string]any
	for _, f := range k.Fields {
		m := map[string]any{"name": f.Name, "type": f.Type, "required": f.Required}
		if len(f.Enum) > 0 {
			m["enum"] = f.Enum
		}
		if f.Default != nil {
			m["default"] = f.Default
		}
		if f.Doc != "" {
			m["doc"] = f.Doc
		}
		fields = append(fields, m)
	}
	return map[string]any{"kind": k.Name, "plural": k.Plural, "pattern": k.Pattern, "version": k.Version, "doc": k.Doc, "fields": fields}
}
