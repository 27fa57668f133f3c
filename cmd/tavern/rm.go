package main

import (
	"github.com/urfave/cli/v2"
)

func newRmCommand() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove a document (it moves to .tavern/.trash/)",
		ArgsUsage: "REF...",
		Description: `Documents are never unlinked: rm moves them into .tavern/.trash/, from where
they can be copied back by hand.

Example:
   tavern rm agents/old-bot`,
		Action: runRm,
	}
}

func runRm(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("rm takes REF...")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	for _, ref := range c.Args().Slice() {
		rel, err := resolveRef(s, ref)
		if err != nil {
			return err
		}
		if err := s.Delete(rel); err != nil {
			return err
		}
		outf(c, "removed %s (kept in .trash/)\n", rel)
	}
	return nil
}
