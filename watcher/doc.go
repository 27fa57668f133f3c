// Package watcher keeps an in-memory projection of a Tavern store current,
// answers queries from it, and wakes callers blocked on a condition. The
// event journal it feeds is package watcher/journal.
//
// # Basics
//
// WatchFS (an FSWatcher) is the filesystem layer. It watches every
// directory of a tree with inotify (used directly on Linux, fsnotify
// elsewhere), including directories created later (each new directory is
// watched first and listed second, so nothing created in the gap is
// lost). An event is only a hint: the path is
// re-stat'ed and re-read, its content hashed, and a Change is emitted only
// if the content really differs. That makes a vim rename-save, a VS Code
// double write and an in-place write each one logical update, whatever
// the order, duplication or coalescing of kernel events. On an overflow,
// a backend error, and every FSOptions.Reconcile (30s) the whole tree is
// reconciled with the disk by stat (git's "racy" rule for files rewritten
// within a clock tick). Polling (FSOptions.Poll, `--poll`) runs the same
// reconcile on an interval; it is chosen automatically on NFS, SMB, FUSE,
// Ceph, 9p and the like, where inotify does not see other machines'
// writes, and when inotify runs out of watches or instances (then with a
// warning: FSOptions.OnDegrade, ReportDegraded).
//
// Settling. A save is often several steps, and a change is reported only
// once it is complete (FSOptions.Settle, 1s, bounds the wait): a file
// created or written in place is read when its writer closes it
// (IN_CLOSE_WRITE), so a program writing in two halves is never seen half
// written; a known file or directory that disappears is removed only if
// it stays gone, so vim's rename-to-backup-and-write and git's
// unlink-and-create are one update; a rename within the tree is final at
// once (its cookie says where the file went). Sync and Rescan decide
// what is settling as of now, except files a writer still has open.
//
// Open builds a Projection on top: every document's kind, name, revision,
// decoded (migrated) frontmatter, and validity with path:line:col
// problems, as Entry values. With Options.Cache it is saved to
// .tavern/.index (one checksummed section per kind, keyed by each file's
// stat and hash; cache.go has the layout), so a one-shot `tavern ls` only
// re-reads what changed since the last run; a corrupt, stale or foreign
// cache is rebuilt, never trusted. The cache loads while the first scan
// arms its watches and lists and stats the tree (FSOptions.LoadKnown);
// the scan then compares: on a big store the two take about as long.
// Options.Kinds scopes a projection to some kinds: `tavern ls agents`
// lists, stats and caches only agents/.
//
//	p, err := watcher.Open(store, watcher.Options{Watch: true})
//	defer p.Close()
//	items, err := p.Query(watcher.Query{Kind: "items", Where: conds, Sort: "priority", Limit: 10})
//	e, err := p.WaitFor(ctx, "items", func(e watcher.Entry) bool { return e.Fields["queue"] == "build" })
//	sub := p.Subscribe(journal.Filter{Types: []string{"doc."}, Kinds: []string{"item"}}, 256)
//	for ev := range sub.C { ... }
//
// Fields stay encoded, as the index cache holds them, until a query
// hands them out. A caller that passes entries on rather than reading
// their fields (the query daemon, `ls --json`) sets Query.Encoded and
// writes them with AppendEntries or AppendFieldsJSON, never decoding a
// map to encode it again.
//
// WaitFor is woken by the change itself, not by polling; its predicate
// runs under the projection's lock and sees only valid documents. A
// subscriber that does not keep up is never blocked on: what does not
// fit its buffer is counted and reported as one journal.TypeMissed
// event, its cue to resync.
//
// SubscribeWhere filters on fields (the expressions of `ls --where`) as
// they are after each change, and delivers journal.TypeLeft once when a
// change makes a document stop matching.
//
// # External changes
//
// With Options.Journal (and Watch) the projection journals every change
// no engine call made as journal.TypeExternal, exactly once (external.go).
// It decides from the journal's own per-path state (journal.Heads), never
// from the index cache: at Open, every document that differs from what
// the journal last recorded for its path (and every recorded path now
// gone) is a change made while nobody watched; afterwards, every change
// the watcher sees. A change waits Options.ExternalGrace (2s: the engine
// writes, then journals) and is then decided, in the order seen, under
// the journal's lock with the heads caught up with every process's
// appends: it is external unless the journal's head for the path is that
// state, or a record of that state came after this watcher's previous
// look at the path (the engine wrote it, or another watcher journaled
// it). So a field toggled back and forth is journaled at every save, the
// engine's writes from any process never are, and several watchers
// record a change once. The operation and the changed fields are relative
// to the journal's state when the change was seen; the fields of a
// revision are known if the projection held them, a watcher saw that
// revision before (the heads keep a digest per path), or a projection
// that does not journal and does not watch (a one-shot ls) replaced it
// in the index cache (its SaveCache puts the replaced state's digest in
// the heads, if it is the journal's last valid one); they are left out
// otherwise. The query daemon keeps no replaced states: it would hold
// one per edited path until it stops, so a hand edit it indexed first
// may be journaled by the next watcher without its changed fields.
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
//     backups (x~, x.swp, #x#) and vim's write probe (4913, 5036, ...) are
//     never documents (Ignored). The projection also ignores events/ and
//     every file that does not end in .md.
//   - Debounce trades latency for fewer intermediate states: a batch of
//     complete files (renamed into place, how the engine writes, or
//     closed by their writer) is processed as soon as no further event is
//     queued, a batch with writes, removes or renames after
//     FSOptions.Debounce (2ms) of quiet.
//   - Settle is a bound: a writer that keeps a file open half written
//     longer than FSOptions.Settle is read as it is (and again when it
//     closes it), and a removal is reported Settle late. A file still
//     empty then waits for its close up to ten times Settle: no document
//     is empty, and a writer stalled between its open and its write (git
//     checkout on a loaded machine) would have it reported invalid. Without close
//     events (polling, network filesystems, other OSes) a file is read
//     after the debounce, and a save split by a longer pause may show its
//     intermediate state; the final state is always right.
//   - Unreadable paths (EACCES) are reported once and keep their last
//     known state until readable again; they are then re-delivered even if
//     the content did not change, so receivers can clear the error.
//   - Sync (FSWatcher.Sync, Projection.Sync) writes and removes a dot file
//     in the root to put a marker in the kernel's ordered event queue. It
//     needs write access to the root.
//   - External-edit detection is a timing decision (ExternalGrace): an
//     engine whose journal append comes later than that is reported as an
//     external edit too. It never affects the projection's content.
//     Record times are compared across processes: on several machines
//     (a network filesystem) their clocks must agree to well within the
//     grace.
//   - A revision the engine wrote while no watcher ran, edited by hand
//     before any projection read it, has unknown fields: the external
//     entry of the edit has no changed list.
//   - A projection journals external changes when it stops, only those
//     decided by then; the rest are journaled by the next one to start.
//   - Concurrent writers of the index cache each replace a whole section;
//     the last one wins and either is valid. Sections of kinds a scoped
//     projection did not load may be out of date on disk until their kind
//     is next queried.
//   - One-shot projections (Options.Watch false) do not watch: they scan,
//     answer, and are done.
package watcher
