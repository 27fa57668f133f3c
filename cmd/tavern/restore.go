package main

import (
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
)

func newRestoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "replace the store with a backup",
		ArgsUsage: "SRC",
		Description: `Restores the backup directory SRC as the store (--dir, or ./.tavern when no
store is found). Refuses (exit 4) if the store holds documents, unless
--force; a replaced store is kept in .tavern-backups/before-restore-<time>
(next to .tavern/, ignored by git). As backup, restore copies regular files
and directories only: a symlink or special file in SRC is left out and
reported as a warning ("skipped" with --json); the exit code stays 0. A
backup that was interrupted (tavern-<time>.partial: any part of the store)
is no backup: refused (exit 3), also with --force.

Example:
   tavern restore .tavern-backups/tavern-20260124T100000.000Z --force`,
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "replace a non-empty store"}, jsonFlag()},
		Action: runRestore,
	}
}

func runRestore(c *cli.Context) error {
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
	res, err := agents.RestoreWith(c.Args().First(), target, agents.RestoreOptions{Force: c.Bool("force"), Progress: progress(c, "restore", "files")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, res)
	}
	warnSkippedFiles(c, "restore", res.Skipped)
	outf(c, "%s\n", res.Dir)
	if res.Previous != "" {
		outf(c, "previous store kept at %s\n", res.Previous)
	}
	return nil
}
