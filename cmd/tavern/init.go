package main

import (
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create .tavern/ with tavern.md and the kind directories",
		Description: `Creates .tavern/ in the working directory. --dir names the store (.tavern)
directory itself, except a git repository's root holding no store: that is
the project, and init makes its .tavern/.
Running it again on an existing store only adds missing directories. Inside
a project that already has a store in a parent directory, init refuses
(exit 4: commands there would use the outer store) unless --nested; so it
does in a linked git worktree of a project that has a store (commands there
use the main worktree's), even over a copy of it checked out there. Inside
another store's .tavern/ directory it refuses even with --nested (exit 2).

Examples:
   tavern init
   tavern --dir /srv/project/.tavern init --name project`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "project name recorded in tavern.md"},
			&cli.BoolFlag{Name: "nested", Usage: "create a store inside the project of another one"},
		},
		Action: runInit,
	}
}

func runInit(c *cli.Context) error {
	dir := dirOption(c)
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = filepath.Join(wd, docstore.DirName)
	} else if filepath.Base(filepath.Clean(dir)) != docstore.DirName && !lexists(filepath.Join(dir, docstore.ConfigFile)) {
		// A git repository's root that is no store is a project, as every
		// other command takes --dir: its .tavern/, not tavern.md and the
		// kind directories among the project's files. Any other directory
		// is the store, as README's --dir says: an empty one made by
		// mktemp -d for TAVERN_DIR stays the store itself.
		if lexists(filepath.Join(dir, ".git")) {
			dir = filepath.Join(dir, docstore.DirName)
		}
	}
	if !c.Bool("nested") {
		if err := docstore.CheckNested(dir); err != nil {
			return err
		}
	}
	name := c.String("name")
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		name = filepath.Base(filepath.Dir(abs))
	}
	machine, err := queues.EnvMachine() // checked before anything is made
	if err != nil {
		return err // as every command that uses the name says it
	}
	s, created, err := docstore.Init(dir, name)
	if err != nil {
		return err
	}
	if created {
		journalInit(c, s)
		if machine != "" {
			// The store's name on other machines once it syncs.
			if err := queues.SaveMachineName(s, machine); err != nil {
				return err
			}
		}
	}
	switch {
	case c.Bool("json"):
		return printJSON(c, map[string]any{"path": s.Root(), "created": created})
	case created:
		outf(c, "Initialized tavern store in %s\n", s.Root())
	default:
		outf(c, "Store already exists in %s (missing directories added)\n", s.Root())
	}
	return nil
}

// journalInit records the creation of tavern.md, which docstore.Init
// writes before any journal exists: every document the engine writes is
// journaled, or a watcher would report it as an external creation.
func journalInit(c *cli.Context, s *docstore.Store) {
	d, err := s.Get(docstore.ConfigFile)
	if err == nil {
		var j *journal.Journal
		if j, err = journal.Open(s.Root(), journal.Options{}); err == nil {
			_, err = j.Append(journal.MutationEvent(docstore.Mutation{Op: "create", Path: docstore.ConfigFile, Doc: d}))
			j.Close()
		}
	}
	if err != nil {
		errf(c, "tavern: journal: %v\n", err)
	}
}
