// Package workspace gives each drone its own git worktree and serves the
// merge queue that brings finished branches onto the base.
//
// # Basics
//
// Workspaces (Open) manage one repository and base branch. Prepare makes
// an item's worktree — <git common dir>/tavern/worktrees/<item-id>, on a
// branch named after the item ("tavern/<title-slug>-<id-end>") created
// from the base — or hands back the one an earlier attempt left, and
// records worktree:, branch: and base: in the item. Hooks plug this into
// the spawn wrapper (`tavern spawn --worktree`, `tavern pool run
// --worktree`): the drone runs there with TAVERN_WORKTREE, TAVERN_BRANCH,
// TAVERN_BASE and TAVERN_REPO set.
//
// When a drone succeeds (and its item passed its gates), Merge takes the
// merge slot — a resource token with one slot per repository and base
// (package queues/tuples), so merges of one base happen one at a time, in
// the order waiters get the slot — commits what the drone left
// uncommitted, rebases the branch onto the base (or, in "merge" mode,
// merges the base into it) in the worktree, runs the check command there,
// and moves the base to the result by compare-and-swap (git update-ref
// NEW OLD; git merge --ff-only when the base is checked out, in a clean
// checkout). A conflict or a failing check is a *MergeError with the
// output: the item fails with it and goes back through its retries (the
// branch is kept, so the next attempt can fix it, e.g. by rebasing) and
// the dead letter, like any failure. A merged worktree is removed with its
// branch; a dead item's worktree is removed and its branch kept.
//
// Each merge writes a record, merges/<id>.md, before each step (started,
// rebased, checked, landing, then landed, failed or rolled_back). The base
// is never left half-merged: it only moves by the compare-and-swap. When
// a merger dies (SIGKILL), the slot comes back with its process's lock;
// the next merger, holding the slot, settles the unfinished records: a
// base already at the record's head is marked landed (resumed — the item's
// next claim completes without running its drone again), a base still at
// the old commit is rolled back (a half-done rebase aborted, a lock file
// left by a killed git removed, a half-updated checkout reset). Until
// then Doctor reports such a record (unfinished-merge) and its repair
// settles it the same way, under the slot.
//
// List, Prune and DiskUsage keep the disk bounded: worktrees whose item is
// done, dead or gone are orphans, removed by Prune (`tavern workspace
// prune`) and before a new worktree when MaxWorktrees (64) or MaxDisk
// (DefaultMaxDisk, 20 GiB; `--max-disk`) is reached (ErrLimit if that is
// not enough: the spawn fails and its item goes back to pending). Doctor
// finds the orphans for `tavern doctor` (orphan-worktree; --fix removes
// them), also those recorded by done or dead items under another root.
//
// # Caveats
//
//   - While a merge queue runs, do not edit the base's checkout (if the
//     base is checked out anywhere): the merger refuses to move a base
//     whose checkout has changes (ErrBaseBusy, the item fails and
//     retries), and a fast-forward killed half-way is undone with git
//     reset --hard. A committed store (.tavern/ in the checkout) is the
//     exception: its changes are Tavern's own writes, so they neither
//     stop a merge nor are undone by that reset.
//   - Recovery waits up to 5s for a git lock file to go away (a git the
//     dead merger started may be finishing) before it removes it.
//   - Merge records are listed on every merge: a store with very many of
//     them pays for a directory scan.
//   - Needs git 2.31 or later (rev-parse --path-format).
package workspace
