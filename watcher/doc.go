// Package watcher keeps an in-memory projection of a Tavern store current,
// answers queries from it, wakes callers blocked on a condition, and keeps
// the store's event journal.
//
// # Layers
//
// WatchFS is the filesystem layer. It watches every directory of a tree
// with fsnotify (which does not recurse on Linux), including directories
// created later: each new directory is watched first and listed second, so
// a file created in the gap is in the listing and anything later produces
// an event (mkdir -p a/b/c followed by files in c loses nothing). An event
// is only a hint that a path may have changed: the path is re-stat'ed and
// re-read, its content hashed (SHA-256) and compared with what is known,
// and a Change is emitted only if the content really differs. That is what
// makes a vim rename-save, a VS Code double write and an in-place write
// each one logical update, and it is why the order, duplication or
// coalescing of kernel events does not matter. Events are drained from the
// kernel as fast as they come into a set of dirty paths, so slow processing
// cannot overflow the kernel queue; a batch is processed after a short
// quiet time (FSOptions.Debounce). On fsnotify.ErrEventOverflow, on any
// backend error, and on a timer (FSOptions.Reconcile, 30 s by default) the
// whole tree is reconciled with the disk. Reconciling compares
// (device, inode, size, mtime, ctime) first and re-reads only files whose
// stat changed, or whose mtime is so close to the time they were read that
// a same-tick rewrite could hide behind an equal stat (git's "racy" rule).
//
// Polling (FSOptions.Poll, `--poll`) runs the same reconcile on an
// interval and gives the same changes. It is chosen automatically when
// statfs says the root is on NFS, SMB/CIFS, FUSE, Ceph, 9p, AFS, Lustre and
// the like, where inotify does not see other machines' writes, and when
// no inotify instance can be had.
//
// Open builds the Projection on top: every document's kind, name,
// revision, decoded (migrated) frontmatter, and validity with path:line:col
// problems. The first scan reads in parallel (FSOptions.Workers) and
// parses in parallel (GOMAXPROCS). With Options.Cache the projection is
// saved to .tavern/.index (checksummed, keyed by each file's stat and
// hash, tied to the schema definitions), so a one-shot `tavern ls` only
// reads the documents that changed since the last run. A corrupt, stale
// or foreign cache is detected and rebuilt; it is never the truth.
// Options.Kinds scopes a projection to some kinds: `tavern ls agents`
// lists, stats and caches only agents/, however many items the store has.
//
// # The index cache
//
// .tavern/.index is a directory with one section file per kind (named
// after the kind; _nokind for .md files that match no kind's pattern):
//
//	"tavern-index\0v3\0" body sha256(body)
//	body = schema-fingerprint kind count record*
//
// (cachecodec.go has the byte layout.) A record is a document's path, its
// FileState (device, inode, size, mtime, ctime, content SHA-256, and when
// it was read) and its Entry, with the frontmatter fields in a compact
// tagged encoding behind a length prefix. Loading a section checks the
// magic and version, the checksum, the schema fingerprint (a hash of
// every kind's pattern, version and fields), that every path is of the
// section's kind and that every revision is the one its hash gives; any
// failure discards the section, which is rebuilt from the documents. A
// load keeps the fields encoded, as slices of one string: a query
// decodes only the keys its --where conditions name, and everything
// only for the entries that match. An older single-file .index is
// replaced.
//
// Freshness. A cached entry is used only if its file's lstat still gives
// the same (device, inode, size, mtime, ctime) and the state is not
// "racy" (mtime or ctime within 2 s of the moment it was read, when a
// same-tick rewrite could hide behind an equal stat); otherwise the file
// is read, hashed, and parsed again if the hash differs. The lstats run
// in parallel relative to an open descriptor of each directory (fstatat),
// and the directories are listed (getdents, whose entry types spare an
// lstat per directory), so new, renamed and deleted files are found too.
// A scoped projection walks only the directories the kind's path pattern
// can match and loads and writes only its kind's section. That is enough:
// a file's kind is a function of its path, so no file outside those
// directories can be a document of the kind, and every file inside is
// checked on every run. Sections of other kinds may then be out of date
// on disk; they are checked the same way when their kind is next queried.
// A section is rewritten (temp file, rename; no fsync: a torn one fails
// its checksum) only when something of its kind changed, including a stat
// change without a content change (a touch, a settled racy file), so such
// files are not re-read on every run. Concurrent writers each replace a
// whole section; the last one wins and either is valid.
//
// # Using the projection
//
//	p, err := watcher.Open(store, watcher.Options{Watch: true})
//	defer p.Close()
//	items, err := p.Query(watcher.Query{Kind: "items", Where: conds, Sort: "priority", Limit: 10})
//	e, err := p.WaitFor(ctx, "items", func(e watcher.Entry) bool { return e.Fields["queue"] == "build" })
//	sub := p.Subscribe(watcher.Filter{Types: []string{"doc."}, Kinds: []string{"item"}}, 256)
//	for ev := range sub.C { ... }
//
// WaitFor is woken by the change itself, not by polling. Its predicate runs
// under the projection's lock and sees only valid documents. A caller that
// loses a race for the returned document should call p.Sync before waiting
// again, or it may be handed the same, already-claimed document.
//
// A subscriber that does not keep up is never blocked on: events that do
// not fit its buffer are counted, and as soon as there is room it receives
// a TypeMissed event whose Data["missed"] says how many were dropped, its
// cue to resync (re-query, or re-read the journal).
//
// # The journal
//
// The journal is .tavern/events/<yyyy-mm-dd>.jsonl (UTC days), one JSON
// object per line, greppable. Journal.Append stamps an event with a UUIDv7
// id, the time, the writer's identity (host/pid/random) and a per-writer
// sequence number without gaps, and writes the line with one write(2) on
// an O_APPEND descriptor while holding an exclusive flock on the day file:
// lines from any number of processes never tear or interleave, whatever
// their size. Readers (ReadJournal, FollowJournal) report a malformed line
// as a *LineError and go on.
//
// Engine mutations are journaled through docstore's observer hook:
//
//	j, _ := watcher.OpenJournal(store.Root(), watcher.JournalOptions{})
//	watcher.RecordMutations(store, j, agentName, onErr)
//
// turns every Create/Update/Delete/Move of the store into a doc.created /
// doc.updated / doc.removed / doc.moved event with the new revision and the
// changed fields. Domain events (item.claimed, agent.spawned, ...) are
// appended by their packages with j.Append(watcher.Event{Type: ..., ...}).
//
// A projection opened with Options.Journal decides which changes no engine
// call made: an observed change waits Options.ExternalGrace (2 s) for the
// engine's event with the same path and revision, from this process or,
// with FollowJournal, any other; if none comes it is journaled as
// TypeExternal with the operation and the changed fields. AppendOnce makes
// several watching processes record it once, and skips revisions the
// engine journaled in the recent tail of the day file. `tavern watch` runs such a
// projection; nothing journals hand edits while no projection watches,
// except that a projection opened from a cache reports (and journals) the
// differences it finds at start.
//
// # Caveats
//
//   - Links are never followed: a symbolic link under the root is reported
//     (ErrSymlink) and skipped, which also makes link loops harmless. FIFOs,
//     sockets and devices are reported (ErrNotRegular), never opened in a
//     blocking way.
//   - Dot names (.tmp/, .locks/, .trash/, .index, .git, .#x), editor
//     backups (x~, x.swp, #x#) and vim's all-digit write probe (4913) are
//     never documents. The projection also ignores events/ and every file
//     that does not end in .md.
//   - Debounce trades latency for fewer intermediate states: a batch of
//     Create events only (a rename into place, how the engine writes) is
//     processed as soon as no further event is queued (Debounce/8 when
//     that is 1 ms or more), a batch with writes, removes or renames after
//     the full Debounce (2 ms) of quiet. A program that creates a file and
//     writes it much later, or an editor that pauses longer than that in
//     the middle of a save, may show an intermediate state (an empty file)
//     for a moment; the final state is always right.
//   - Unreadable paths (EACCES) are reported once as OpError and keep their
//     last known state until readable again; they are then re-delivered
//     even if the content did not change, so receivers can clear the error.
//   - Sync (FSWatcher.Sync, Projection.Sync) writes and removes a dot file
//     in the root to put a marker in the kernel's ordered event queue. It
//     needs write access to the root.
//   - Journal.Append does not fsync by default (JournalOptions.Sync): the
//     documents are durable, the journal is their history. A torn last line
//     after a crash or a full disk is reported by readers and skipped.
//   - External-edit detection is a timing decision (ExternalGrace): an
//     engine whose journal append comes later than that is reported as an
//     external edit too. It never affects the projection's content.
//   - One-shot projections (Options.Watch false) do not watch: they scan,
//     answer, and are done.
package watcher
