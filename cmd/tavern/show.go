package main

import (
	"bytes"
	"errors"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"

	"github.com/tavernhq/tavern/agents/messages"
)

func newShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a document",
		ArgsUsage: "REF",
		Description: `REF is kind/name (agents/alice, agent/alice, items/ID, commitments/alice/ID),
a path to the file, a path in the store with or without .md
(queues/build/pending/ID: an item's path names the item wherever it has
moved since, as for set, edit, rm and the item commands), or an item's
bare id as queue add prints it. Text
output is the file as it is on disk; --body prints only its body, after
the frontmatter and the blank line the store writes after it, as its
writer gave it (the text of a constitution, say, to put into a prompt);
--json's "body" is the bytes after the frontmatter, that line included. A
file whose frontmatter does not parse exits 5 with its path:line:col on
stderr, and its text is still printed as it is (not with --json or --body,
nor a file that is not text), to see what is broken. A note or message of another agent's
direct channel is refused to an agent ($TAVERN_AGENT, exit 4), as notes and
recv refuse it.

Examples:
   tavern show agents/alice
   tavern show .tavern/queues/build/pending/p00-0193....md --json
   tavern show "$TAVERN_CONSTITUTION" --body`,
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.BoolFlag{Name: "body", Usage: "print only the body, without the frontmatter and the blank line after it"},
		},
		Action: runShow,
	}
}

func runShow(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("show takes one REF")
	}
	if c.Bool("body") && c.Bool("json") {
		return usageErr("show --body prints the body as text; with --json it is the object's body")
	}
	s, err := openStoreAnyConfig(c) // a read: show config shows what check refuses
	if err != nil {
		return err
	}
	rel, err := resolveRef(s, c.Args().First())
	if err != nil {
		return err
	}
	if err := messages.CheckRead(s, "show", envAgent(), rel); err != nil {
		return err
	}
	d, err := s.Get(rel)
	if err != nil {
		printUnparsed(c, s, rel, err)
		return s.NotFound("show", rel, err)
	}
	if c.Bool("json") {
		b, err := appendDoc(nil, docJSON(s, d, true), "")
		if err != nil {
			return err
		}
		_, err = c.App.Writer.Write(append(b, '\n'))
		return err
	}
	out := d.Bytes()
	if c.Bool("body") {
		out = d.Text()
	}
	_, err = c.App.Writer.Write(out)
	for _, e := range d.Validate(false) {
		errf(c, "tavern: warning: %v\n", e)
	}
	return err
}

// printUnparsed prints a document whose frontmatter does not parse as it
// is on disk, so that show still lets its reader see what is broken (the
// error on stderr says where, and show still exits 5). Not with --json,
// whose stdout is one object of a parsed document, nor with --body, which
// has no body to give without the frontmatter's end; nor a file too large
// to read, nor one that is not text (a NUL byte, not UTF-8), which would
// only garble the terminal.
func printUnparsed(c *cli.Context, s *docstore.Store, rel string, err error) {
	if c.Bool("json") || c.Bool("body") || !errors.Is(err, docstore.ErrParse) || errors.Is(err, docstore.ErrTooLarge) {
		return
	}
	if raw, rerr := s.ReadFile(rel); rerr == nil && utf8.Valid(raw) && bytes.IndexByte(raw, 0) < 0 {
		_, _ = c.App.Writer.Write(raw)
	}
}
