// Package watcher keeps an in-memory projection of a Tavern store current,
// answers queries from it, and wakes callers blocked on a condition. The
// event journal it feeds is package watcher/journal.
//
// # Basics
//
// WatchFS (an FSWatcher) is the filesystem layer. It watches every
// directory of a tree with fsnotify, including directories created later
// (each new directory is watched first and listed second, so nothing
// created in the gap is lost). An event is only a hint: the path is
// re-stat'ed and re-read, its content hashed, and a Change is emitted only
// if the content really differs. That makes a vim rename-save, a VS Code
// double write and an in-place write each one logical update, whatever
// the order, duplication or coalescing of kernel events. On an overflow,
// a backend error, and every FSOptions.Reconcile (30s) the whole tree is
// reconciled with the disk by stat (git's "racy" rule for files rewritten
// within a clock tick). Polling (FSOptions.Poll, `--poll`) runs the same
// reconcile on an interval; it is chosen automatically on NFS, SMB, FUSE,
// Ceph, 9p and the like, where inotify does not see other machines'
// writes, and when no inotify instance can be had.
//
// Open builds a Projection on top: every document's kind, name, revision,
// decoded (migrated) frontmatter, and validity with path:line:col
// problems, as Entry values. With Options.Cache it is saved to
// .tavern/.index (one checksummed section per kind, keyed by each file's
// stat and hash; cache.go has the layout), so a one-shot `tavern ls` only
// re-reads what changed since the last run; a corrupt, stale or foreign
// cache is rebuilt, never trusted. Options.Kinds scopes a projection to
// some kinds: `tavern ls agents` lists, stats and caches only agents/.
//
//	p, err := watcher.Open(store, watcher.Options{Watch: true})
//	defer p.Close()
//	items, err := p.Query(watcher.Query{Kind: "items", Where: conds, Sort: "priority", Limit: 10})
//	e, err := p.WaitFor(ctx, "items", func(e watcher.Entry) bool { return e.Fields["queue"] == "build" })
//	sub := p.Subscribe(journal.Filter{Types: []string{"doc."}, Kinds: []string{"item"}}, 256)
//	for ev := range sub.C { ... }
//
// WaitFor is woken by the change itself, not by polling; its predicate
// runs under the projection's lock and sees only valid documents. A
// subscriber that does not keep up is never blocked on: what does not
// fit its buffer is counted and reported as one journal.TypeMissed
// event, its cue to resync.
//
// With Options.Journal the projection also decides which changes no
// engine call made: an observed change waits Options.ExternalGrace (2s)
// for the engine's journal event with the same path and revision (from
// this process or, with Options.FollowJournal, any other); if none comes
// it is journaled as journal.TypeExternal with the changed fields, once
// however many processes watch. `tavern watch` runs such a projection; nothing
// journals hand edits while no projection watches, except that a
// projection opened from a cache reports the differences it finds at
// start.
//
// # Caveats
//
//   - A caller that loses a race for the document WaitFor returned should
//     call p.Sync before waiting again, or it may be handed the same,
//     already-claimed document.
//   - Links are never followed: a symbolic link under the root is reported
//     (ErrSymlink) and skipped, which also makes link loops harmless.
//     FIFOs, sockets and devices are reported (ErrNotRegular), never
//     opened in a blocking way.
//   - Dot names (.tmp/, .locks/, .trash/, .index, .git, .#x), editor
//     backups (x~, x.swp, #x#) and vim's all-digit write probe (4913) are
//     never documents (Ignored). The projection also ignores events/ and
//     every file that does not end in .md.
//   - Debounce trades latency for fewer intermediate states: a batch of
//     creates only (a rename into place, how the engine writes) is
//     processed as soon as no further event is queued, a batch with
//     writes, removes or renames after FSOptions.Debounce (2ms) of quiet.
//     An editor that pauses longer than that mid-save may show an
//     intermediate state (an empty file) for a moment; the final state is
//     always right.
//   - Unreadable paths (EACCES) are reported once and keep their last
//     known state until readable again; they are then re-delivered even if
//     the content did not change, so receivers can clear the error.
//   - Sync (FSWatcher.Sync, Projection.Sync) writes and removes a dot file
//     in the root to put a marker in the kernel's ordered event queue. It
//     needs write access to the root.
//   - External-edit detection is a timing decision (ExternalGrace): an
//     engine whose journal append comes later than that is reported as an
//     external edit too. It never affects the projection's content.
//   - Concurrent writers of the index cache each replace a whole section;
//     the last one wins and either is valid. Sections of kinds a scoped
//     projection did not load may be out of date on disk until their kind
//     is next queried.
//   - One-shot projections (Options.Watch false) do not watch: they scan,
//     answer, and are done.
package watcher
