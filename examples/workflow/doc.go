// Package workflow holds the scenario of `tavern demo workflow` (and
// `make demo-workflow`), embedded so the demo runs from the binary alone:
// from a plan to merged code.
//
// # Basics
//
// Files holds plan.md (a checklist of 12 tasks, nested, one of them behind
// a human gate, two of them editing the same line of banner.txt on
// purpose), drone.sh (a stand-in coding agent: it reads "file:" and
// "text:" from its item, commits the change in its own git worktree, and
// prints a Claude Code-style result line for the usage ledger; on a later
// attempt it rebases onto the base and resolves a conflict by keeping
// both lines) and check.sh (the merge queue's check: no conflict markers,
// scripts parse).
//
// The demo makes a git repository in a temporary directory, imports the
// plan into a queue, runs a pool of drones with --worktree (each in its
// own worktree, merging through the merge queue with check.sh), approves
// the gate as a person when the drone waits at it, and prints the plan
// with its ticked boxes, the base's history, the usage table and the
// trace of the item whose first merge conflicted.
//
// # Caveats
//
//   - The conflict needs the two banner tasks to run at the same time: the
//     drones wait for each other (up to 30 s), so the pool needs at least
//     two drones.
package workflow
