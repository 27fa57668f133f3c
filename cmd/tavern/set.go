package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
)

func newSetCommand() *cli.Command {
	return &cli.Command{
		Name:      "set",
		Usage:     "set frontmatter fields of a document",
		ArgsUsage: "REF field=value...",
		Description: `Each value is written as a YAML scalar or flow value: n=3 is an integer,
tags=[a,b] a list, name='"007"' a string. Text that is not a one-line YAML
scalar or flow value stays text exactly as typed: title=Fix #12 is "Fix #12"
(not "Fix" and a comment), note=a: b is "a: b". Only the lines of the named
fields change, and updated (the time of the write, as on every write path;
sync takes the later updated as the last writer) unless it is one of them; a
quoted string keeps the file's quoting style. With --if-rev the update fails with exit 4 unless the document is
still at that revision (from show --json), so read-modify-write loops are safe;
a REV that is no revision at all (not 16 lowercase hex digits) is a usage
error (exit 2): no re-read would ever match it.
The result is validated first; an invalid result is refused (exit 5). A new
field one letter from one of the kind's (stat for state) is written, with a
warning that it is most likely a typo. --unset of a field the document does
not have removes nothing and warns (did you mean a field it has); exit 0,
as removing what is absent is done. A field both given a value and
--unset is a usage error (exit 2), nothing written.
The store's rules apply as on every write path: an agent's state follows the
state machine (exit 4 for an illegal transition, as ` + "`tavern agent state`" + `), and a
legal one is a transition like its: applied_state and state_changed follow
and it is journaled as agent.state. A new role near one that has a
constitution is refused as a typo (exit 2, did you mean), as by ` + "`agent new --role`" + `.

Examples:
   tavern set agents/alice state=working
   tavern set agents/alice spawns=4 --if-rev 3f2a9c0d1e2b4a5c
   tavern set agents/alice --unset pid --unset host`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "if-rev", Usage: "only update if the current revision is `REV`"},
			&cli.StringSliceFlag{Name: "unset", Usage: "remove `FIELD` (repeatable)"},
			jsonFlag(),
		},
		Action: runSet,
	}
}

func runSet(c *cli.Context) error {
	if c.NArg() < 1 || (c.NArg() < 2 && len(c.StringSlice("unset")) == 0) {
		return usageErr("set takes REF field=value...")
	}
	if c.IsSet("if-rev") && c.String("if-rev") == "" {
		// Most likely an unset shell variable: an update without its
		// condition would overwrite what the caller meant to check.
		return usageErr("--if-rev \"\": no revision given (take it from `tavern show REF --json`, field rev)")
	}
	assigns, err := parseAssignments(c.Args().Slice()[1:])
	if err != nil {
		return err
	}
	// Set and unset at once: one of the two would be dropped without a
	// word (the unset ran last), so neither is guessed.
	for _, a := range assigns {
		if slices.Contains(c.StringSlice("unset"), a[0]) {
			return usageErr("%s=%s and --unset %s: a field is either set or removed", a[0], a[1], a[0])
		}
	}
	s, err := openStoreAnyConfig(c)
	if err != nil {
		return err
	}
	rel, err := resolveRef(s, c.Args().First())
	if err != nil {
		return err
	}
	if err := configFor(s, rel); err != nil {
		return err
	}
	// `updated` follows the write (docstore stamps it), unless this set
	// gives it, even as the value it has.
	keep := false
	for _, a := range assigns {
		keep = keep || a[0] == "updated"
	}
	var hints []error
	d, err := s.UpdateWith(rel, docstore.UpdateOptions{IfRev: c.String("if-rev"), KeepUpdated: keep}, func(d *docstore.Doc) error {
		hints = hints[:0]
		for _, a := range assigns {
			// A new field one letter from one of the kind's (stat for
			// state) is most likely a typo: written (documents may carry
			// fields of their own), but said.
			if k := d.Kind; k != nil && !d.Has(a[0]) {
				if err := k.FieldHint(a[0], "", false); err != nil {
					hints = append(hints, err)
				}
			}
			if err := d.SetYAML(a[0], a[1]); err != nil {
				return err
			}
		}
		for _, f := range c.StringSlice("unset") {
			// Absent already: done, but said (a typo is not done).
			if err := d.Unset(f); errors.Is(err, docstore.ErrNoField) {
				hints = append(hints, err)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, docstore.ErrBadRev) {
		return fmt.Errorf("--if-rev: %w", err)
	}
	if err != nil {
		return s.NotFound("set", rel, err)
	}
	for _, h := range hints {
		if errors.Is(h, docstore.ErrNoField) {
			warnf(c, nil, "set %w", h) // it names the path
			continue
		}
		warnf(c, nil, "set %s: %w", rel, h)
	}
	if c.Bool("json") {
		return printJSON(c, docJSON(s, d, false))
	}
	outf(c, "%s %s\n", rel, d.Rev)
	return nil
}
