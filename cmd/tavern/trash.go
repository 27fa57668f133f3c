package main

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
)

func newTrashCommand() *cli.Command {
	return &cli.Command{
		Name:  "trash",
		Usage: "list what rm moved to .tavern/.trash/, and bring it back",
		Description: `tavern rm never unlinks a document: it moves it to .tavern/.trash/ (consumed
tuples are archived there too). trash ls lists the entries, newest first;
trash restore puts an entry back where it was.

Examples:
   tavern trash ls
   tavern trash restore agents/old-bot.md
   tavern trash restore 20260124T100000.000000000-agents__old-bot.md`,
		Subcommands: []*cli.Command{
			{
				Name:  "ls",
				Usage: "list the trash, newest first",
				Description: `List the trash, newest first: when each entry was removed and the path it had.

Examples:
   tavern trash ls
   tavern trash ls --json`,
				Action: withStore(runTrashLs),
			},
			{
				Name:      "restore",
				Usage:     "move entries back to the paths they had",
				ArgsUsage: "NAME|PATH...",
				Description: `Moves each entry (its name in .tavern/.trash/, or the document path it had:
then the newest entry of that path) back into place. A document that exists
again at that path is left alone (exit 4). Every entry is checked first: one
that is not in the trash (exit 3) or whose path is taken again restores none.
Journaled as a creation. An item comes back with the gates rm removed with it.

Examples:
   tavern rm agents/old-bot && tavern trash restore agents/old-bot.md`,
				Action: withStore(runTrashRestore),
			},
		},
	}
}

func runTrashLs(c *cli.Context, s *docstore.Store) error {
	if c.NArg() != 0 {
		return usageErr("trash ls takes no arguments")
	}
	entries, err := s.Trash()
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(entries))
	}
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REMOVED\tPATH\tNAME")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Deleted.Local().Format("2006-01-02 15:04:05"), dash(e.Path), e.Name)
	}
	return tw.Flush()
}

func runTrashRestore(c *cli.Context, s *docstore.Store) error {
	if c.NArg() == 0 {
		return usageErr("trash restore takes NAME|PATH...")
	}
	// Every REF is checked before any is restored: one that names no
	// entry, or whose path is taken again, leaves the others in .trash/.
	for _, ref := range c.Args().Slice() {
		if err := s.CheckRestore(ref); err != nil {
			return err
		}
	}
	restored := []string{}
	for _, ref := range c.Args().Slice() {
		if slices.Contains(restored, ref) || slices.Contains(restored, ref+".md") {
			continue // an earlier REF's: an item's gate, restored with it
		}
		got, err := s.RestoreTrashAll(ref)
		if !c.Bool("json") {
			for _, rel := range got {
				outf(c, "restored %s\n", rel)
			}
		}
		restored = append(restored, got...)
		if err != nil {
			if c.Bool("json") && len(restored) > 0 {
				printJSON(c, map[string]any{"restored": restored})
			}
			return err
		}
	}
	if c.Bool("json") {
		return printJSON(c, map[string]any{"restored": restored})
	}
	return nil
}
