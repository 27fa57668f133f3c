package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/tuples"
)

func newGuardCommand() *cli.Command {
	return &cli.Command{
		Name:  "guard",
		Usage: "refuse a commit that touches paths reserved by another agent (git pre-commit hook)",
		Description: `Reads the staged paths (git diff --cached --name-only) of the git work tree
in the working directory and checks them against live reservations of agents
other than the committer (--as, else $TAVERN_AGENT, else you: "user").
Conflicts are listed on stderr and the exit status is 4, which makes git
abort the commit. A reservation file that cannot be read guards nothing: the
commit is decided on the others, and a warning on stderr (--json: "skipped")
names the file with path:line:col. --install writes .git/hooks/pre-commit to run this
binary's guard (an existing foreign hook is kept unless --force), with
--dir when the store is in a subdirectory of the work tree (git runs the
hook at its top).
git commit --no-verify skips the hook.

Instances: the committer's instance is --instance (default $TAVERN_INSTANCE,
set by tavern spawn). A commit by a dead instance — its spawn wrapper is
gone, or a newer spawn of its agent replaced it: an orphan of a killed
wrapper — is refused whatever it touches (exit 4, "fenced"), and a
reservation made by another instance of the same agent counts as another
holder's.

Examples:
   tavern guard --install
   TAVERN_AGENT=alice git commit -m "parser: rewrite"
   tavern guard --as alice --json`,
		Flags: []cli.Flag{
			asFlag(),
			instanceFlag(),
			&cli.BoolFlag{Name: "install", Usage: "install as the pre-commit hook of the git repository here"},
			&cli.BoolFlag{Name: "force", Usage: "with --install: replace an existing pre-commit hook"},
			jsonFlag(),
		},
		Action: runGuard,
	}
}

func runGuard(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("guard takes no arguments")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if c.Bool("install") {
		return installGuard(c, wd)
	}
	sp, err := openSpace(c)
	if errors.Is(err, docstore.ErrNoStore) {
		// No store, no reservations: a hook must not block every
		// commit of a checkout that has no .tavern/.
		if c.Bool("json") { // the answer of a store with nothing reserved
			return printJSON(c, map[string]any{"ok": true, "conflicts": []any{}, "skipped": []any{}})
		}
		errf(c, "tavern guard: no .tavern store found; nothing is reserved\n")
		return nil
	}
	if err != nil {
		return err
	}
	as, err := actorOf(c, sp.Store())
	if err != nil {
		return err
	}
	conflicts, err := sp.Guard(c.Context, wd, as.Name, c.String("instance"))
	if err != nil && !errors.Is(err, tuples.ErrReserved) && !errors.Is(err, tuples.ErrSkipped) {
		return err
	}
	// Reservation files that could not be read guarded nothing: the
	// commit went by them (a broken file must not block every commit),
	// but never silently.
	var skipped []string
	var se *tuples.SkippedError
	if errors.As(err, &se) {
		for _, e := range se.Errs {
			skipped = append(skipped, e.Error())
		}
	}
	if c.Bool("json") {
		if perr := printJSON(c, map[string]any{"ok": len(conflicts) == 0, "conflicts": orEmpty(conflicts), "skipped": orEmpty(skipped)}); perr != nil {
			return perr
		}
		if len(conflicts) > 0 {
			return withCode(exitConflict, errSilent)
		}
		return nil
	}
	for _, s := range skipped {
		errf(c, "tavern guard: warning: reservation file not read, it guards nothing until fixed: %s\n", s)
	}
	if len(conflicts) == 0 {
		return nil
	}
	errf(c, "tavern guard: commit refused, staged paths are reserved by other agents:\n")
	for _, cf := range conflicts {
		errf(c, "  %s\n", cf)
	}
	errf(c, "Ask the holder, wait for the reservation to lapse, or unstage the paths.\n")
	return withCode(exitConflict, errSilent)
}

// installGuard writes the pre-commit hook that runs this binary's guard.
func installGuard(c *cli.Context, wd string) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return err
	}
	// The store the hook guards, when there is one: the hook names it
	// unless guard finds it from the top of the work tree by itself.
	store, err := storeDir(c)
	if errors.Is(err, docstore.ErrNoStore) {
		store, err = "", nil
	}
	if err != nil {
		return err
	}
	path, err := tuples.InstallHook(c.Context, wd, bin, store, c.Bool("force"))
	if err != nil {
		return err
	}
	outf(c, "%s\n", path)
	return nil
}
