package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync" // tavern sync; coordination: git
	"github.com/tavernhq/tavern/watcher/journal"
)

// errOffline: the remote could not be reached or kept rejecting the push
// (exit 1, like any error not in the exit table).
var errOffline = errors.New("sync remote unreachable")

func newSyncCommand() *cli.Command {
	return &cli.Command{
		Name:  "sync",
		Usage: "exchange the store with other machines through a git remote",
		Description: `One round: commit this machine's changes to .tavern/, fetch the state the other
machines pushed, merge, write their changes here, push. Tavern's state lives on
its own ref (refs/tavern/state by default) in the remote, apart from the
project's branches; this clone keeps it in .tavern/.sync/ (never synced, like
.locks/ and .tmp/).

The remote is, in order: $TAVERN_SYNC_REMOTE, the one given to --clone, sync:
remote: in tavern.md, the project repository's origin.

Merging never writes conflict markers. Items keep the copy of the later claim;
other documents merge field by field: a field changed on one machine takes
that change, a field changed on both takes the later 'updated' (ties: the
greater machine name), and the other value is journaled as sync.conflict
('tavern log --machines --type sync.conflict' on any clone); message
chunks keep every message of both. Changes written here are journaled as
'external' with the machine that made them. A file changed here while the
round ran is merged next round.

--every runs rounds until interrupted, every DUR and soon after local
changes (the long-running commands 'pool run', 'verifier' and 'serve' do
this on their own when the store syncs). --clone creates .tavern/ here (or
--dir) from the remote's state: how a new machine joins. A store made by
'tavern init' whose first round finds another store on the remote joins
that store if it holds nothing but what init made (JSON: adopted, the
store's name), and is refused otherwise (exit 4; nothing changes here or on
the remote): clone, then move its documents in. The journal of the store
init made is not sent to the others (it is kept in .tavern/.sync/adopted/).

One clone writes under each machine name ($TAVERN_MACHINE, .tavern/.machine).
A clone or a first sync that joins under a name the remote has a journal of,
or a round that renames the clone to such a name (not one it synced as
before), is refused (exit 4, with a free name to use; nothing is made or
changed): another clone syncs, or synced, under it. --takeover joins or
renames anyway, taking that journal as this clone's: only for a machine
re-made whose old clone will never sync again.

Exit 1 if the remote cannot be reached or keeps rejecting the push (local
changes are committed in .tavern/.sync/ and go out with the next round).

Examples:
   tavern sync
   tavern sync --every 10s
   tavern sync --clone git@host:team/project.git
   TAVERN_MACHINE=laptop tavern sync --clone git@host:team/project.git --takeover
   tavern sync --json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "clone", Usage: "create .tavern/ from the state on `REMOTE`"},
			&cli.StringFlag{Name: "ref", Usage: "with --clone: the remote `REF` (default refs/tavern/state)"},
			&cli.DurationFlag{Name: "every", Usage: "keep syncing every `DUR` (and on local changes) until interrupted",
				Action: positiveDur("every", "rounds without a pause would keep the remote busy")},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only conflicts and errors"},
			&cli.BoolFlag{Name: "takeover", Usage: "join or rename under a machine name another clone synced as (that clone never syncs again)"},
			jsonFlag(),
		},
		Action: runSync,
	}
}

func runSync(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("sync takes no arguments")
	}
	if url := c.String("clone"); url != "" {
		if c.IsSet("every") {
			return usageErr("--every does not go with --clone: clone first, then run `tavern sync --every DUR`")
		}
		return runSyncClone(c, url)
	}
	if c.IsSet("ref") {
		// Rounds sync the ref tavern.md names (sync: ref:); --ref is only
		// where a new clone starts from, and would be ignored here.
		return usageErr("--ref goes with --clone (a round syncs the ref in tavern.md's sync: ref:, default %s)", gitsync.DefaultRef)
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	sy, err := agents.OpenSyncer(s, nil)
	if err != nil {
		return err
	}
	defer sy.Close()
	if c.Bool("takeover") {
		sy.AllowTakeOver()
	}
	if every := c.Duration("every"); every > 0 {
		if !c.Bool("json") { // under --json stderr carries JSON error objects only
			errf(c, "tavern: syncing %s with %s every %s as %s\n", s.Root(), sy.Remote(), every, sy.Machine())
		}
		sy.Run(c.Context, every, func(rep *gitsync.Report, err error) {
			if err != nil {
				reportErr(c, "sync", err)
				return
			}
			printGitSyncReport(c, sy, rep, true)
		})
		return nil
	}
	rep, err := sy.Sync(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, rep); err != nil {
			return err
		}
	} else {
		printGitSyncReport(c, sy, rep, false)
	}
	if rep.Offline != "" {
		return fmt.Errorf("%w: %s (local changes are committed and go out with the next round)", errOffline, rep.Offline)
	}
	return nil
}

func runSyncClone(c *cli.Context, url string) error {
	dir := c.String("dir")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = filepath.Join(wd, docstore.DirName)
	}
	s, err := gitsync.CloneWith(dir, url, c.String("ref"), gitsync.CloneOptions{TakeOver: c.Bool("takeover")})
	if err != nil {
		return err
	}
	m, err := queues.MachineName(s)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"dir": s.Root(), "remote": url, "machine": m})
	}
	outf(c, "cloned %s into %s (this machine: %s)\n", url, s.Root(), m)
	return nil
}

// printGitSyncReport prints what a round did: one summary line (none in a
// loop when nothing happened, or with --quiet), then every conflict and
// deferred path.
func printGitSyncReport(c *cli.Context, sy *gitsync.Syncer, rep *gitsync.Report, loop bool) {
	quiet := c.Bool("quiet")
	if c.Bool("json") && loop {
		jsonLine(c, rep) // a stream: one object per line, as watch --json
		if rep.Offline != "" {
			// A failed round is an error object on stderr too (README),
			// as the text form says "offline: ..." there.
			reportErr(c, "sync", fmt.Errorf("%w: %s (local changes are committed and go out with the next round)", errOffline, rep.Offline))
		}
		return
	}
	// Pushed alone is news too: the commits an outage held back went out.
	busy := rep.Committed || rep.Merged || len(rep.Applied) > 0 || rep.Pushed || rep.Offline != "" || rep.Adopted != ""
	if !quiet && (busy || !loop) {
		var parts []string
		if rep.Adopted != "" {
			parts = append(parts, fmt.Sprintf("joined the remote's store %q (this one, made by init, held no documents)", rep.Adopted))
		}
		if rep.Committed {
			parts = append(parts, "committed local changes")
		}
		if n := len(rep.Applied); n > 0 {
			from := map[string]int{}
			journals := 0
			for _, a := range rep.Applied {
				if strings.HasPrefix(a.Path, "events/") {
					journals++ // other machines' journals: counted apart
					continue
				}
				from[a.Machine]++
			}
			var fs []string
			for m, k := range from {
				fs = append(fs, fmt.Sprintf("%d from %s", k, m))
			}
			sort.Strings(fs)
			if journals > 0 {
				fs = append(fs, counted(journals, "journal file"))
			}
			parts = append(parts, "applied "+strings.Join(fs, ", "))
		}
		if rep.Merged {
			parts = append(parts, "merged")
		}
		if rep.Pushed {
			parts = append(parts, "pushed")
		}
		if len(parts) == 0 && rep.Offline != "" {
			parts = append(parts, "offline") // not "up to date": the remote was not reached
		}
		if len(parts) == 0 {
			parts = append(parts, "up to date")
		}
		head := rep.Head
		if len(head) > 12 {
			head = head[:12]
		}
		outf(c, "%s %s: %s (%s, %s)\n", sy.Machine(), sy.Remote(), strings.Join(parts, ", "), head, rep.Duration.Round(time.Millisecond))
	}
	for _, l := range rep.Conflicts {
		errf(c, "conflict %s %s: kept %q (%s), lost %q (%s): %s\n", l.Path, l.Field, firstLine(l.Kept), l.KeptFrom, firstLine(l.Lost), l.LostFrom, l.Rule)
	}
	for _, p := range rep.Deferred {
		errf(c, "deferred %s: changed here during the round, merged next round\n", p)
	}
	for _, p := range rep.Problems {
		errf(c, "not synced: %s\n", p)
	}
	for _, w := range rep.Warnings {
		errf(c, "warning: %s\n", w)
	}
	if rep.Offline != "" && loop {
		errf(c, "offline: %s\n", rep.Offline)
	}
}

func firstLine(s string) string {
	s, _, more := strings.Cut(s, "\n")
	if more {
		s += " …"
	}
	return s
}

// syncConfigured reports whether s syncs with other machines: tavern.md
// has a sync: section or a coordination engine, or this clone was made by
// --clone.
func syncConfigured(s *docstore.Store) bool {
	if _, err := os.Stat(filepath.Join(s.Root(), gitsync.Dir, "remote")); err == nil {
		return true
	}
	cfg, err := s.Get(docstore.ConfigFile)
	if err != nil {
		return false
	}
	if cfg.Has("sync") {
		return true
	}
	c := cfg.String("coordination")
	return c != "" && c != "local"
}

// startBackgroundSync runs the git sync of s in the background (every
// sync.every and on local changes) when the store syncs; the returned
// function stops it after one last round. Long-running commands (pool
// run, verifier, serve) call it. Errors are reported on stderr, never
// fatal: the work goes on while the remote is away.
func startBackgroundSync(c *cli.Context, s *docstore.Store, j *journal.Journal) func() {
	if !syncConfigured(s) {
		return func() {}
	}
	sy, err := agents.OpenSyncer(s, j)
	if err != nil {
		errf(c, "tavern: background sync disabled: %v\n", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sy.Run(ctx, 0, func(rep *gitsync.Report, err error) {
			if err != nil && !errors.Is(err, context.Canceled) {
				errf(c, "\ntavern: sync: %v\n", err)
			}
		})
	}()
	return func() {
		cancel()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := sy.Sync(ctx); err != nil {
			errf(c, "tavern: final sync: %v\n", err)
		}
		sy.Close()
	}
}
