package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/workspace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
)

func newDoctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "find (and with --fix repair) what a crash left behind",
		Description: `Finds what a crash can leave in the store, one line per finding
("KIND PATH: DETAIL"):

   dead-wrapper    an agent working for a spawn wrapper (of this host) that died
   orphan-process  processes of a dead wrapper's child still run (and hold its item)
   dead-pool       a pool running for a 'pool run' (of this host) that died
                   (--fix sets it stopped, journaled as pool.reaped)
   duplicate-copy  an item in two state directories
   dead-claim      a claim whose holder is dead, not yet reaped
   journal-gap     an item done or dead whose event the journal lacks
   stale-lock      a lock file nobody will take again; those of documents
                   that no longer exist are one note ("note": true in
                   --json), "N lock files of documents that no longer
                   exist (a few paths)": harmless, --fix removes each
                   nobody holds
   dangling-gate   an item to do whose gates: names a gate with no document
                   (a crash inside gate add): never passed, so the item is
                   never done (--fix takes the name out of the list, as it
                   was before that gate add, journaled as gate.dropped)
   temp-file       a temp file or spare in .tmp/ nobody will reuse
   stale-index     an index cache saved with entries of files already gone
                   (one merely behind the files is normal, not reported)
   stray-messages  a message directory with no channel document: no channel
                   (--fix removes it when empty, else creates the document)
   orphan-worktree a drone's git worktree whose item is done, dead or gone
                   (--fix removes it; a merged item's branch too, others'
                   branches stay)
   unfinished-merge a merge record (merges/ID.md) left at started, rebased,
                   checked or landing by a merger of this host that died;
                   DETAIL says what the next merge of its base does (mark
                   it landed if the base reached its head, else roll it
                   back); --fix does that now, under the merge slot
   clone-leftover  a copy of the store a killed tavern sync --clone left next
                   to it (../.tavern.clone-PID, its process gone; --fix
                   removes it, and so does the next --clone there)
   restore-leftover the new store a killed tavern restore was assembling
                   next to the store (../.tavern.restore-TIME-PID, its
                   process gone; the store was not replaced; --fix
                   removes it)
   machine-name    this clone's .tavern/.machine holds a name every sync
                   and claims engine refuses (written by an older tavern or
                   by hand; found first, as the claims engine opens under
                   the name); --fix names the clone again when it never
                   synced under that name (the name it last synced as, else
                   a new default name), else DETAIL says what to do
   invalid-document an agent file that does not parse or validate, so the
                   rest could not be judged for it (DETAIL is LINE:COL:
                   the error; --fix leaves it: fix it by hand, e.g.
                   tavern edit); tavern.md too, for what tavern check
                   finds in it although the store opens (coordination: git
                   with no sync remote: DETAIL says what to set)

Nothing found is said on stderr (stdout stays empty). Without --fix it
changes nothing and exits 5 if it found anything but notes (what normal
use leaves, no crash: printed, exit 0). With
--fix it repairs each finding (missing journal events are appended marked
"recovered": true; losing copies go to .trash/) and exits 0, or 1 if a
repair failed, or 5 if invalid documents remain (it never rewrites them)
or a machine name it could not repair. Liveness (locks, pids) is judged on this host: run it where
the store's processes run.

Examples:
   tavern doctor
   tavern doctor --fix --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "fix", Usage: "repair what is found"},
			jsonFlag(),
		},
		Action: runDoctor,
	}
}

func runDoctor(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("doctor takes no arguments")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	fix := c.Bool("fix")
	// The machine name first: the broker opens the claims engine under it.
	findings, derr := m.DoctorMachine(fix)
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	var mn *queues.MachineNameError
	switch {
	case err != nil && errors.As(err, &mn) && mn.Path != "" && len(findings) > 0:
		// Left as it is: the other checks wait for a name (the finding
		// says what to do).
	case err != nil:
		return err
	default:
		defer b.Close()
		more, err := m.Doctor(b, fix)
		findings, derr = append(findings, more...), errors.Join(derr, err)
		// The drones' git worktrees are the workspace package's (above agents).
		if sp, err := tuples.NewSpace(m.Store, tuples.SpaceOptions{Journal: m.Journal}); err != nil {
			derr = errors.Join(derr, err)
		} else {
			wf, err := workspace.Doctor(c.Context, workspace.Options{Broker: b, Space: sp})
			derr = errors.Join(derr, err)
			for i := range wf {
				if fix && wf[i].Repair != nil {
					if err := wf[i].Repair(); err != nil {
						wf[i].Error = err.Error()
					} else {
						wf[i].Fixed = true
					}
				}
			}
			findings = append(findings, wf...)
			sp.Close()
		}
	}
	failed, invalid, faults := 0, 0, 0
	for _, f := range findings {
		if !f.Note {
			faults++
		}
		switch {
		case f.Error != "":
			failed++
		case f.Kind == docstore.FindingInvalid, f.Kind == docstore.FindingMachineName && !f.Fixed:
			invalid++
		}
	}
	if c.Bool("json") {
		if findings == nil {
			findings = []docstore.Finding{}
		}
		if err := printJSON(c, map[string]any{"findings": findings, "fix": fix, "failed": failed}); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			line := f.Kind + " " + f.Path + ": " + f.Detail
			switch {
			case f.Error != "":
				line += " (repair failed: " + f.Error + ")"
			case f.Fixed:
				line += " (fixed)"
			case fix && f.Kind == docstore.FindingInvalid:
				line += " (left as it is: fix it by hand, e.g. tavern edit " + f.Path + ")"
			}
			outf(c, "%s\n", line)
		}
		if len(findings) == 0 {
			// On stderr, as reap and agent audit say it: stdout is the
			// findings, empty for a script when there are none.
			errf(c, "tavern: nothing found (no crash left anything behind)\n")
		}
	}
	if derr != nil {
		return derr
	}
	switch {
	case failed > 0:
		return withCode(exitError, errSilent)
	case !fix && faults > 0, invalid > 0:
		return withCode(exitInvalid, errSilent)
	}
	return nil
}
