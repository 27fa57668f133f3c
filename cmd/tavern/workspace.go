package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/workspace"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
)

func newWorkspaceCommand() *cli.Command {
	flags := func() []cli.Flag {
		return []cli.Flag{
			&cli.StringFlag{Name: "base", Usage: "check that the base `BRANCH` exists (ls and prune look at every worktree, whatever its base)"},
			&cli.StringFlag{Name: "repo", Usage: "a `DIR` in the git repository (default: the project directory)"},
			&cli.StringFlag{Name: "worktree-root", Usage: "where the worktrees are (default <git dir>/tavern/worktrees)"},
			jsonFlag(),
		}
	}
	return &cli.Command{
		Name:  "workspace",
		Usage: "the drones' git worktrees: list, prune orphans",
		Description: `` + "`spawn --worktree`" + ` and ` + "`pool run --worktree`" + ` give each item its own git worktree
(<git dir>/tavern/worktrees/<item>) on a branch named after it. A merged item's
worktree and branch are removed, a dead item's worktree is removed and its
branch kept. ls shows every worktree with its item's state and size; an orphan
is one whose item is done, dead or gone. prune removes the orphans.

Examples:
   tavern workspace ls
   tavern workspace prune --base main`,
		Subcommands: []*cli.Command{
			{Name: "ls", Usage: "list worktrees and their items", Flags: flags(), Action: runWorkspaceLs,
				Description: "Examples:\n   tavern workspace ls\n   tavern workspace ls --json"},
			{Name: "prune", Usage: "remove orphan worktrees", Flags: flags(), Action: runWorkspacePrune,
				Description: "Removes the worktrees of done, dead or missing items (and the merged branches of done ones).\n\nExamples:\n   tavern workspace prune\n   tavern workspace prune --json"},
		},
	}
}

func runWorkspaceLs(c *cli.Context) error {
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	ws, err := openExistingWorkspaces(c, s, b)
	if err != nil {
		return err
	}
	list, err := ws.List(c.Context)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if list == nil {
			list = []workspace.Entry{}
		}
		return printJSON(c, list)
	}
	w := newTable(c.App.Writer, 0, 2, 2, ' ', 0)
	fmt.Fprintln(w, "ITEM\tSTATE\tBRANCH\tBYTES\tORPHAN\tPATH")
	var total int64
	for _, e := range list {
		total += e.Bytes
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%v\t%s\n", e.Item, e.ItemState, e.Branch, e.Bytes, e.Orphan, e.Path)
	}
	w.Flush()
	outf(c, "%s, %s under %s\n", counted(len(list), "worktree"), counted(int(total), "byte"), ws.Root())
	return nil
}

func runWorkspacePrune(c *cli.Context) error {
	s, b, err := openBroker(c)
	if err != nil {
		return err
	}
	defer b.Close()
	ws, err := openExistingWorkspaces(c, s, b)
	if err != nil {
		return err
	}
	removed, err := ws.Prune(c.Context)
	if c.Bool("json") {
		if removed == nil {
			removed = []workspace.Entry{}
		}
		if perr := printJSON(c, removed); perr != nil {
			return perr
		}
		return err
	}
	for _, e := range removed {
		outf(c, "removed %s (item %s %s)\n", e.Path, e.Item, e.ItemState)
	}
	return err
}

// openExistingWorkspaces opens the repository for ls and prune, which
// need no base branch: a repository on master, or with no commit yet,
// has worktrees to list too.
func openExistingWorkspaces(c *cli.Context, s *docstore.Store, b *queues.Broker) (*workspace.Workspaces, error) {
	sp, err := tuples.NewSpace(s, tuples.SpaceOptions{Journal: b.Journal()})
	if err != nil {
		return nil, err
	}
	return workspace.OpenExisting(c.Context, workspace.Options{Repo: c.String("repo"), Base: c.String("base"), Root: c.String("worktree-root"), Broker: b, Space: sp})
}
