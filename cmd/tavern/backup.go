package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
)

func init() {
	register(&cli.Command{
		Name:      "backup",
		Usage:     "copy the store consistently into a timestamped directory",
		ArgsUsage: "[DEST]",
		Description: `Copies .tavern/ (without .tmp, .locks, .trash, .index) to
DEST/tavern-<UTC time>/, default DEST: .tavern-backups next to .tavern. Safe
while agents run: every file is a whole version, and every message sent
before the backup started is in it. Prints the backup directory.

Example:
   tavern backup /mnt/backups`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			s, err := openStore(c)
			if err != nil {
				return err
			}
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
		},
	})
	register(&cli.Command{
		Name:      "restore",
		Usage:     "replace the store with a backup",
		ArgsUsage: "SRC",
		Description: `Restores the backup directory SRC as the store (--dir, or ./.tavern when no
store is found). Refuses (exit 4) if the store holds documents, unless
--force; a replaced store is kept as .tavern.before-restore-<time>.

Example:
   tavern restore .tavern-backups/tavern-20260124T100000.000Z --force`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "replace a non-empty store"}, jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("restore takes SRC")
			}
			target, err := storeDir(c)
			if err != nil {
				wd, werr := os.Getwd()
				if werr != nil {
					return werr
				}
				target = filepath.Join(wd, docstore.DirName)
			}
			res, err := agents.Restore(c.Args().First(), target, c.Bool("force"), time.Now())
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, res)
			}
			outf(c, "%s\n", res.Dir)
			if res.Previous != "" {
				outf(c, "previous store kept at %s\n", res.Previous)
			}
			return nil
		},
	})
}
