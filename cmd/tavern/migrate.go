package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
)

func newMigrateCommand() *cli.Command {
	return &cli.Command{
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
			jsonFlag(),
		},
		Action: runMigrate,
	}
}

func runMigrate(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	changed := []map[string]string{}
	invalid, found := 0, 0
	err = s.MigrateWith(docstore.MigrateOptions{DryRun: c.Bool("dry-run"), Progress: progress(c, "migrate", "documents")}, func(m docstore.Migration) error {
		clearProgress(c)
		switch {
		case m.Before == nil:
			errf(c, "tavern: skipped: %v\n", m.Err)
			return nil
		case m.After == nil:
			errf(c, "tavern: %s: %v\n", m.Path, m.Err)
			return nil
		}
		found++
		// The diff only where it is shown: a written migration's text
		// output names the file.
		switch {
		case c.Bool("json"):
			changed = append(changed, map[string]string{"path": m.Path, "diff": unifiedDiff(m.Path, m.Before, m.After)})
		case m.Written:
			outf(c, "migrated %s\n", m.Path)
		case m.Err == nil:
			outf(c, "%s", unifiedDiff(m.Path, m.Before, m.After))
		}
		if m.Err != nil { // invalid after migration: left as it is
			warn(c, m.Err)
			invalid++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, changed); err != nil {
			return err
		}
	} else if found == 0 {
		outf(c, "all documents are at the current schema version\n")
	}
	if invalid > 0 {
		errf(c, "tavern: %s not migrated: invalid after migration (fix them, then run migrate again)\n", counted(invalid, "document"))
		return withCode(exitInvalid, errSilent)
	}
	return nil
}
