// Package journal is a Tavern store's event journal: an append-only log of
// every change, .tavern/events/<yyyy-mm-dd>.jsonl (UTC days), one JSON
// object per line, greppable.
//
// # Basics
//
// An Event has a type (a dotted name: "doc.updated", "item.claimed",
// "agent.state"), a path, kind, revision, agent and free-form Data. A
// Journal (Open) appends them: Append stamps an event with a UUIDv7 id
// (docstore.NewID), the time, the writer's identity (host/pid/random) and
// a per-writer sequence number without gaps, and writes the line with one
// write(2) on an O_APPEND descriptor while holding an exclusive flock on
// the day file, so lines from any number of processes never tear or
// interleave. Concurrent Appends in one process share one flock and one
// write. The day file stays open between appends; one replaced or
// removed since (git checkout or stash of a committed journal, rsync) is
// seen by its link count once locked, and the name opened again.
//
// Heads (LoadHeads) is the journal's per-path state, derived from the
// journal alone: for every document path, what its last record says
// (revision, removed, valid, the last valid revision), ordered by when
// each state was current, plus the recent records. A checkpoint,
// events/.heads, saves re-reading the whole journal; it holds a digest of
// the bytes before its position and is ignored if the journal no longer
// matches. AppendIf appends the events a callback keeps, deciding under
// the day file's lock with the heads caught up with every process's
// appends: the watcher journals each external change once this way,
// however many processes watch, and from the path's own history rather
// than a window of recent lines.
//
// Read calls a function for every event that matches a Filter and returns
// a Cursor; Follow continues from a Cursor as lines are appended (End is
// the Cursor of "only new events"). A cursor knows the line it ends
// after, so a day file rewritten rather than appended to under a reader
// (a sync adopting the remote's store, renaming the machine or taking a
// name over rewrites a clone's day files) is never read on from the old
// offset: the reader goes on after that line if the new content still
// holds it, and otherwise is passed a *RewriteError (ErrRewritten) and
// reads the new content from its start. Heads caught up so are rebuilt
// from the whole journal.
//
// Engine mutations are journaled through docstore's observer hook:
//
//	j, _ := journal.Open(store.Root(), journal.Options{})
//	journal.RecordMutations(store, j, agentName, onErr)
//
// turns every Create/Update/Delete/Move (and WriteFile, Retire, Claim,
// Rename) of the store into a doc.created / doc.updated / doc.removed /
// doc.moved event with the new revision and the changed fields
// (MutationEvent, ChangedFields): every file the engine writes is
// journaled by its writer, which is how a watcher in any process tells
// the engine's changes from hand edits. Domain events
// (item.claimed, agent.spawned, ...) are appended by their packages with
// j.Append(journal.Event{Type: ..., ...}). Edits no engine call made are
// journaled as TypeExternal by package watcher.
//
// The encoder (eventjson.go) writes the bytes json.Marshal would, without
// reflection for the common Data values; TestEventJSON and FuzzEventJSON
// hold the two byte-identical.
//
// # Caveats
//
//   - Append does not fsync by default (Options.Sync): the documents are
//     the truth, the journal their history. A torn last line after a
//     crash or a full disk is passed to readers as a *LineError and
//     skipped; one bad line never hides the rest. A writer killed inside
//     write(2) can leave a line without its newline (Linux stops a write
//     at a page boundary on SIGKILL): the next append, under the day
//     file's lock, ends that fragment first, so it does not swallow the
//     next event.
//   - A journal append that fails does not undo the change it records:
//     callers report it and go on.
//   - File order is append order. Ids increase within a process, but
//     across processes and machines they follow the clocks: when the
//     order of different writers matters, use the file position.
//   - Follow waits on fsnotify events for the journal directory; on a
//     network filesystem other machines' appends produce none, so pass a
//     poll interval there. Without inotify (out of watches) it polls and
//     tells its callback why.
//   - Heads order records by time (an external record by the time its
//     content was read, Data["seen"]): the writers' clocks must agree, as
//     on one machine.
package journal
