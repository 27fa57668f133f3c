// Package trace answers "what happened to this item?" and "what did this
// document look like then?" from the journal and the documents.
//
// # Basics
//
// Item gathers an item's whole causal history into one timeline: the
// journal events that name it (added by whom, every claim with its holder,
// attempt and liveness kind, failures, reaps and their reasons, gates
// added and decided, merges, usage, plan ticks and hand edits), what each
// holder did while it held the item (the messages it sent in any channel,
// the commitments it made, their verification, its questions and state
// changes), the gates with their approval records (who decided, from
// which process), the merge records and the usage totals.
//
// At shows a document as it was at a past time: where it was and which
// revision it had (from the journal), its content when a copy of that
// revision survives (the current file unchanged since, a .trash/ copy,
// or the git history when .tavern/ is committed to git), the events before
// and the changes after; for an item, its state replayed from its events
// (state, holder, attempt, last error).
//
// # Caveats
//
//   - The journal records revisions and the names of changed fields, not
//     their values: without git history (or an unchanged or trashed copy)
//     At can say that and how a document changed, not its old content.
//   - Item reads the whole journal from the item's creation on, and every
//     channel's messages: fine for one item at a time, not a bulk API.
//   - Events are ordered by time; across processes and machines that
//     follows their clocks.
package trace
