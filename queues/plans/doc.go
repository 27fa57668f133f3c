// Package plans makes a markdown checklist a queue: every unchecked box
// of plans/<name>.md is an item, and the file and the items follow each
// other both ways.
//
// # Basics
//
// Import reads a checklist ("- [ ] task", "* [ ]", "1. [ ]"; nested by
// indentation) into plans/<name>.md — the body byte for byte, any
// frontmatter of the file kept, plus queue:, source: and tasks:, the map
// from item ids to the text of their boxes — and adds an item for every
// unchecked box, in dependency order:
//
//   - A box nested under another is a dependency of its parent: the
//     children are done first, the parent last (its item depends_on
//     theirs).
//   - "(after: Title, Other title)" in a box makes it depend on those
//     tasks too (by title, case-insensitive, or a unique prefix of one).
//   - "(gate: human)" makes its item wait for a person's approval before
//     it is done (package queues, gates).
//   - The item's title is the box's text without markers; its body is
//     the text under the box (the lines indented below it, up to the next
//     box), dedented.
//   - Ticked boxes ([x]) are done already: no item.
//
// Sync reconciles a plan and its items (see Sync): an item that is done
// gets its box ticked — one byte of one line, nothing else in the file
// changes; a box ticked by hand completes its item, "[-]" or a
// struck-through ticked box ("- [x] ~~text~~") cancels it, and opening
// it again ("[ ]") brings a cancelled item back to pending; a new
// unchecked box becomes an item; a removed box cancels its item, and so
// does a box removed together with its tasks: entry (by hand, or a git
// checkout of a plan older than the task): the item still names the
// plan in its plan: field, no box or entry names it, and a pending one
// is cancelled (a claimed one is a conflict until it ends, a done one
// stays done). Hand
// edits that contradict the engine (ticked while claimed, ticked while a
// gate waits) are Conflicts: reported by every sync that sees them,
// journaled (plan.conflict) once while they persist (the plan's last
// journaled conflicts are kept in .tavern/.plans/<name>.conflicts), never
// acted on. GetStatus syncs and reports progress box by box, each box
// counted by the state it lists (its item's, when it has one).
//
// A cancelled task is "won't do", so nothing in the plan waits for it:
// waiting would block its dependents for ever (dead dependencies are never
// done). Sync takes a cancelled item of the plan — box marked [-] or
// struck through, box removed, orphan cancelled — out of the depends_on of
// the plan's pending items (journaled plan.dependency_dropped). When the
// box is open again and its item back to pending, the plan says again
// that its parent and the boxes whose (after:) names it wait for it, and
// they do (plan.dependency_added; so does an open box for a new box
// nested under it). A task that is done needs no waiting, and one marked
// [-] while someone holds it is a conflict, not cancelled: it is still
// waited for. Only the plan's own items change: an item outside the plan
// (or of another plan) that a person made wait for the task keeps its
// dependency and is blocked (`tavern queue ls`) until that person decides.
// Sync reports both (Report.DepsDropped, DepsAdded), and GetStatus lists
// what each pending item still waits for.
//
// Between its own items the plan is the one that says who waits for whom.
// A box moved out from under its parent, or an (after:) taken out of a
// box, is no longer waited for: the pending item of the box stops waiting
// for that item of the plan (plan.dependency_dropped, reason "moved"), so
// it neither waits for a task the plan put elsewhere (for ever, were that
// task to fail) nor keeps an order two swapped boxes no longer have. A
// box moved under another is waited for by it (plan.dependency_added).
// A dependency between two items of the plan that a person wrote into an
// item's depends_on by hand is dropped the same way: the plan says the
// order of its tasks ((after:) in the box).
//
// The file stays a plain checklist: it renders on any git host, and the
// engine's only additions are three frontmatter fields.
//
// # Caveats
//
//   - A box is identified by its text (and, for repeated texts, its
//     rank: "Write tests (2)"). Editing a box's text is removing it and
//     adding another: the old item is cancelled, a new one made.
//   - Sync runs when asked (`tavern plan sync`, `plan status`), after a
//     spawn finishes an item of a plan, and on a pool's tick: a hand edit
//     is acted on at the next of these, not at once.
//   - A done item whose box is unticked by hand is ticked again: to redo
//     a task, add a new box.
//   - Import refuses an existing plan, and a file a plan was imported
//     from already (ImportedError: a plan file is imported once; source:
//     is the file relative to the project root). A crash while it adds items leaves
//     a plan whose next Sync adopts the items already made (by plan and
//     title) instead of adding them twice.
package plans
