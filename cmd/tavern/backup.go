package main

import (
	"path/filepath"
	"time"

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
DEST/tavern-<UTC time>/, default DEST: .tavern-backups next to .tavern. Safe
while agents run: every file is a whole version, and every message sent
before the backup started is in it. Prints the backup directory.

Example:
   tavern backup /mnt/backups`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: withStore(runBackup),
	}
}

func runBackup(c *cli.Context, s *docstore.Store) error {
	dest := c.Args().First()
	if dest == "" {
		dest = filepath.Join(filepath.Dir(s.Root()), ".tavern-backups")
	}
	res, err := agents.Backup(s, dest, time.Now())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, res)
	}
	outf(c, "%s\n", res.Dir)
	return nil
}
