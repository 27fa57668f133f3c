package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	register(&cli.Command{
		Name:  "migrate",
		Usage: "rewrite documents written by older schema versions",
		Description: `Documents from older schema versions are migrated in memory whenever they are
read. migrate writes the migrated form back (only the changed lines), so the
files match the current schema. --dry-run prints the diff and writes nothing.
A document that would be invalid after migration is left untouched and
reported; the others are still migrated, and the exit code is then 5.
Documents that do not parse are reported and skipped.

Examples:
   tavern migrate --dry-run
   tavern migrate`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "show the changes as a diff; write nothing"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			s, err := openStore(c)
			if err != nil {
				return err
			}
			var changed []map[string]string
			invalid := 0
			for _, k := range schema.Kinds() {
				docs, errs := s.List(k)
				for _, e := range errs {
					errf(c, "tavern: skipped: %v\n", e)
				}
				for _, d := range docs {
					from, _ := schema.DocVersion(d)
					if from >= k.Version {
						continue
					}
					m := d.Clone()
					if _, err := k.Migrate(m); err != nil {
						errf(c, "tavern: %s: %v\n", d.Path, err)
						continue
					}
					diff := unifiedDiff(d.Path, d.Bytes(), m.Bytes())
					changed = append(changed, map[string]string{"path": d.Path, "diff": diff})
					if c.Bool("dry-run") {
						if !c.Bool("json") {
							outf(c, "%s", diff)
						}
						continue
					}
					if _, err := s.UpdateIf(d.Path, d.Rev, func(cur *docstore.Doc) error {
						_, err := k.Migrate(cur)
						return err
					}); err != nil {
						if errors.Is(err, schema.ErrInvalid) {
							// Invalid after migration: leave it as it is,
							// report it, migrate the rest.
							warn(c, err)
							invalid++
							continue
						}
						return err
					}
					if !c.Bool("json") {
						outf(c, "migrated %s\n", d.Path)
					}
				}
			}
			if c.Bool("json") {
				if changed == nil {
					changed = []map[string]string{}
				}
				if err := printJSON(c, changed); err != nil {
					return err
				}
			} else if len(changed) == 0 {
				outf(c, "all documents are at the current schema version\n")
			}
			if invalid > 0 {
				errf(c, "tavern: %d document(s) not migrated: invalid after migration (fix them, then run migrate again)\n", invalid)
				return withCode(exitInvalid, errSilent)
			}
			return nil
		},
	})
}
