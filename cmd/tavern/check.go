package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
)

func newCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "validate the store or the given files",
		ArgsUsage: "[PATH...]",
		Description: `Parses and validates every document (or the given files and directories:
a path, or as show and ls name them a REF such as agents/alice or a directory
of the store such as agents or queues/build/) and lists every problem as path:line:col: field: message. Exit 5 if any document is
invalid. Unknown fields are reported only with --strict, except in tavern.md,
where they are errors (every other command refuses an invalid tavern.md; check
lists all of its problems). Beyond the schema it
reports agent states edited by hand to an illegal value, agents whose name is
not their file name or whose id another agent has (a copied file), items
whose id, queue or priority disagree with their path, and commitments whose
assertion changed since they were made, and, under coordination: etcd, what
the etcd engine would refuse of tavern.md on this machine (a tls file
missing or no PEM, an empty password_env variable), without dialling it,
and, under coordination: git, a clone that names no sync remote, and a
machine name in .tavern/.machine that sync refuses.
It reports names that name no document: a gate whose item is in no queue,
an item waiting on a gate with no document, a plan that plan sync refuses
(a dependency cycle, an (after:) naming no task or the task itself);
commitments, bookmarks, reservations and open questions of an agent with
no document, and an agent's queues or a bookmark's channels naming none
(errors when near an existing name and in no journal, a typo; warnings
when near none, as another machine's not synced yet, or removed here or
elsewhere). Warnings (path:line:col: warning:
..., "warning": true in --json) do not make the exit code 5: an etcd:
section of tavern.md that nothing reads (coordination is not etcd), a
password written there, those names, a pool's queues, a plan box whose
item was removed and an approval of a removed gate or item.

Examples:
   tavern check
   tavern check --strict agents
   tavern check --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "also report fields the schema does not know"},
			jsonFlag(),
		},
		// Any tavern.md: check is how one hears all that is wrong with it.
		Action: func(c *cli.Context) error {
			s, err := openStoreAnyConfig(c)
			if err != nil {
				return err
			}
			return runCheck(c, s)
		},
	}
}

func runCheck(c *cli.Context, s *docstore.Store) error {
	var targets []string
	for _, a := range c.Args().Slice() {
		rel, err := checkTarget(s, a)
		if err != nil {
			return err
		}
		targets = append(targets, rel)
	}
	rep, err := s.CheckWith(targets, docstore.CheckOptions{Strict: c.Bool("strict"), Progress: progress(c, "check", "documents")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			errf(c, "%s%s\n", view.Visible(p.Message), hint(p.Err))
		}
		warnings := 0
		for _, p := range rep.Problems {
			if p.Warning {
				warnings++
			}
		}
		switch {
		case len(rep.Problems) == 0:
			outf(c, "%s checked, all valid\n", counted(rep.Checked, "document"))
		case warnings == len(rep.Problems):
			errf(c, "%s checked, all valid, %s\n", counted(rep.Checked, "document"), counted(warnings, "warning"))
		case warnings > 0:
			errf(c, "%s checked, %s, %s\n", counted(rep.Checked, "document"), counted(len(rep.Problems)-warnings, "problem"), counted(warnings, "warning"))
		default:
			errf(c, "%s checked, %s\n", counted(rep.Checked, "document"), counted(len(rep.Problems), "problem"))
		}
	}
	if !rep.Valid(c.Bool("strict")) {
		return withCode(exitInvalid, errSilent)
	}
	return nil
}

// checkTarget turns an argument of check into a store-relative path: a
// file or directory (relative to the working directory), else a REF
// (agents/alice) or a path inside the store (agents/alice.md), as show
// takes, or a directory inside the store (agents, queues/build/).
func checkTarget(s *docstore.Store, arg string) (string, error) {
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", err
	}
	// Lstat: a symlink is checked as what it is (check reports it), not
	// followed to where it points.
	_, err = os.Lstat(abs)
	if err == nil && !filepath.IsAbs(arg) {
		if _, rerr := s.RelLink(abs); rerr != nil {
			// Outside the store a path is no document; the store's own
			// (agents/ of a project that has a directory agents/ too)
			// is the one meant, when it has it.
			if in := filepath.Join(s.Root(), filepath.FromSlash(arg)); lexists(in) {
				abs = in
			}
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if rel, rerr := resolveRef(s, arg); rerr == nil {
			// Not s.Abs: it follows a symlink there, and refuses
			// one that leaves the store; RelLink below checks the
			// place.
			abs = filepath.Join(s.Root(), filepath.FromSlash(rel))
			_, err = os.Lstat(abs)
		} else if !filepath.IsAbs(arg) {
			// A directory of the store as ls names it (agents,
			// queues/build/): show and check take agents/alice, so
			// agents is what a user tries next. RelLink below
			// refuses one that leaves the store (../x).
			abs = filepath.Join(s.Root(), filepath.FromSlash(arg))
			_, err = os.Lstat(abs)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		// The argument as given, not the system call and the absolute
		// path it was last tried as.
		return "", &fs.PathError{Op: "check", Path: arg, Err: fs.ErrNotExist}
	}
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real == s.Root() {
		return "", nil // the whole store
	}
	return s.RelLink(abs)
}

// lexists reports whether path names a file, a directory or a symlink.
func lexists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
