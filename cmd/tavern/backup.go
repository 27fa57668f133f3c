package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
)

func newBackupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "copy the store consistently into a timestamped directory",
		ArgsUsage: "[DEST]",
		Description: `Copies .tavern/ (without .tmp, .locks, .trash, .index) to
DEST/tavern-<UTC time>/, default DEST: .tavern-backups next to .tavern, which
ignores itself in git (its own .gitignore). Safe while agents run: every file
is a whole version, and every message sent before the backup started is in
it. The copy is made durable with one syncfs, not a sync per file. Prints the
backup directory; progress goes to stderr when it is a terminal.

A backup holds regular files and directories only. A symlink inside .tavern/
is never followed (nothing outside .tavern/ is read) nor recorded as a link,
and a FIFO, socket or device is no document: each is left out and reported
as a warning on stderr with its path and what it is ("skipped" with --json,
each {path, reason}); the backup is made all the same and exits 0.

Example:
   tavern backup /mnt/backups`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: withStore(runBackup),
	}
}

func runBackup(c *cli.Context, s *docstore.Store) error {
	dest := c.Args().First()
	if dest == "" {
		var err error
		if dest, err = agents.BackupsDir(s.Root()); err != nil {
			return err
		}
	}
	res, err := agents.BackupWith(s, dest, agents.BackupOptions{Progress: progress(c, "backup", "files")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, res)
	}
	warnSkippedFiles(c, "backup", res.Skipped)
	outf(c, "%s\n", res.Dir)
	return nil
}

// warnSkippedFiles reports, one warning line each, the entries a backup
// or restore did not copy.
func warnSkippedFiles(c *cli.Context, op string, skipped []agents.SkippedFile) {
	for _, f := range skipped {
		errf(c, "tavern: warning: %s skipped %s\n", op, f)
	}
}
