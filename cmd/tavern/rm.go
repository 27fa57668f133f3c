package main

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/urfave/cli/v2"
)

func newRmCommand() *cli.Command {
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove a document (it moves to .tavern/.trash/)",
		ArgsUsage: "REF...",
		Description: `Documents are never unlinked: rm moves them into .tavern/.trash/, from where
` + "`tavern trash restore`" + ` brings them back. Engine files (tavern.md, the journal,
dot names) are refused (exit 2): every later command needs them. An agent
(TAVERN_AGENT) may not remove its own commitments (exit 4); a person or
another agent may. A queue's queue.md is not removed while items are pending
or claimed in it, nor a claimed item under its holder, nor a gate alone while
its item (pending or claimed) waits on it: the item could never be finished
(exit 4; approve or reject the gate, or rm the item, which takes its gates). A REF that names no document (exit 3, did you mean) or is
refused stops rm before it removes any (remove a queue's items in one rm,
its queue.md in the next). Removing an item removes its gates with it (a gate
means nothing without its item); restoring the item brings them back.
Removing a channel (a direct @AGENT one too) removes its messages and notes
with it (messages/NAME/, notes/NAME/); restoring the channel brings back
those removed with it. Read positions are kept: reading resumes where it
was after a restore. An item claimed since rm checked it is refused (exit 4).

Examples:
   tavern rm agents/old-bot
   tavern trash restore agents/old-bot.md`,
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
	// A REF another REF owns (rm items/X gates/G) goes with its owner:
	// it is neither checked nor removed on its own (its item, still
	// there, would refuse it).
	var rels []string
	for _, ref := range c.Args().Slice() {
		if rel, err := resolveRef(s, ref); err == nil {
			rels = append(rels, rel)
		}
	}
	withOwner := map[string]bool{}
	for _, rel := range rels {
		for _, p := range s.Owned(rel) {
			if slices.Contains(rels, p) {
				withOwner[p] = true
			}
		}
	}
	// Every REF is found before any is removed, as git rm does: a typo
	// in the last one leaves the others where they are.
	for _, ref := range c.Args().Slice() {
		rel, err := resolveRef(s, ref)
		if err == nil {
			var pe *fs.PathError
			if _, err = s.Stat(rel); errors.As(err, &pe) {
				err = &fs.PathError{Op: "delete", Path: rel, Err: pe.Err} // as Delete says it
			}
			err = s.NotFound("rm", rel, err)
		}
		if err == nil && !withOwner[rel] {
			// Refused (a queue with work left, a claimed item): before
			// any REF is removed, so none is.
			err = s.CheckDelete(rel)
		}
		if err != nil {
			return err
		}
	}
	removed := []string{}
	for _, ref := range c.Args().Slice() {
		rel, err := resolveRef(s, ref)
		if err == nil && (slices.Contains(removed, rel) || withOwner[rel]) {
			continue // an owner's, removed with it: rm items/X gates/G
		}
		var got []string
		if err == nil {
			got, err = s.DeleteAll(rel)
			err = s.NotFound("rm", rel, err)
		}
		for i, p := range got {
			if !c.Bool("json") {
				if i == 0 {
					outf(c, "removed %s (`tavern trash restore %s` brings it back)\n", p, p)
				} else {
					outf(c, "removed %s (it belongs to %s: restoring that brings it back)\n", p, rel)
				}
			}
		}
		removed = append(removed, got...)
		if err != nil {
			if c.Bool("json") && len(removed) > 0 {
				printJSON(c, map[string]any{"removed": removed})
			}
			return err
		}
	}
	if c.Bool("json") {
		return printJSON(c, map[string]any{"removed": removed})
	}
	return nil
}
