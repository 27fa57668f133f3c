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
files match the current schema. --dry-run prints the diff and writes nothing; it
reports (and exits) as the real run would, a result the schema refuses included.
A document that would be invalid after migration is left untouched and
reported; the others are still migrated, and the exit code is then 5.
Documents that do not parse are reported and skipped, the others still
migrated, and the exit code is then 5 (as check's for them).
--json prints one element per document and per skipped file (path, diff,
written, skipped, error, line, col); each problem is also a JSON error
object on stderr, and nothing else is printed.

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
	asJSON := c.Bool("json")
	changed := []map[string]any{}
	// invalid: left as they are for the schema; skipped: could not be
	// read or migrated. Either leaves a document behind: exit 5.
	invalid, skipped, found := 0, 0, 0
	err = s.MigrateWith(docstore.MigrateOptions{DryRun: c.Bool("dry-run"), Progress: progress(c, "migrate", "documents")}, func(m docstore.Migration) error {
		clearProgress(c)
		if asJSON {
			// The diff only where it is shown: a written migration's
			// text output names the file.
			diff := ""
			if m.Before != nil && m.After != nil {
				diff = unifiedDiff(m.Path, m.Before, m.After)
			}
			changed = append(changed, migrationJSON(m, diff))
		}
		switch {
		case m.Before == nil: // could not be read
			skipped++
			if asJSON {
				warn(c, m.Err)
			} else {
				errf(c, "tavern: skipped: %v\n", m.Err)
			}
			return nil
		case m.After == nil: // a migration step failed
			skipped++
			if asJSON {
				warn(c, m.Err)
			} else {
				errf(c, "tavern: %s: %v\n", m.Path, m.Err)
			}
			return nil
		}
		found++
		switch {
		case m.Err != nil: // invalid after migration: left as it is
			warn(c, m.Err)
			invalid++
		case asJSON:
		case m.Written:
			outf(c, "migrated %s\n", m.Path)
		default:
			outf(c, "%s", unifiedDiff(m.Path, m.Before, m.After))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(c, changed); err != nil {
			return err
		}
	} else if found == 0 && skipped == 0 {
		outf(c, "all documents are at the current schema version\n")
	} else if found == 0 {
		// Not "all": the skipped ones were not looked at.
		outf(c, "the documents read are at the current schema version; %s skipped (above)\n", counted(skipped, "file"))
	}
	if invalid > 0 {
		if !asJSON { // with --json each is in the output and on stderr already
			errf(c, "tavern: %s not migrated: invalid after migration (fix them, then run migrate again)\n", counted(invalid, "document"))
		}
	}
	if invalid+skipped > 0 {
		return withCode(exitInvalid, errSilent)
	}
	return nil
}

// migrationJSON is one element of `migrate --json`. Every key is always
// there, as in the error object: error, line and col are null for a
// document migrated (or, with --dry-run, to be migrated).
func migrationJSON(m docstore.Migration, diff string) map[string]any {
	obj := map[string]any{"path": m.Path, "diff": diff, "written": m.Written, "skipped": m.Before == nil,
		"error": nil, "line": nil, "col": nil}
	if m.Err != nil {
		obj["error"] = m.Err.Error()
		if _, line, col := docstore.Position(m.Err); line > 0 {
			obj["line"] = line
			if col > 0 {
				obj["col"] = col
			}
		}
	}
	return obj
}
