// Package docstore keeps documents — YAML frontmatter plus a markdown body —
// as files under a .tavern/ directory, and provides the few primitives every
// other Tavern package builds on.
//
// # Basics
//
// There are only a few types: Store (an open .tavern directory), Doc (one
// document, edited in place with line-exact fidelity) and Lock (an flock
// on a file under .tavern/.locks/).
//
//   - Reads: Get, List, Resolve ("agents/alice" → "agents/alice.md").
//   - Writes: Create (fails if the document exists), Update and UpdateIf
//     (a closure under the document's lock; UpdateIf is optimistic and
//     fails with ErrConflict on a stale revision), Delete (moves the file
//     to .trash/), Move.
//   - Claims: Claim(lockKey, from, to) locks, then renames a document from
//     one state directory to another. Exactly one racer wins; the others
//     get ErrLost.
//   - NewDoc builds a new document with the engine's stamps
//     (schema_version, id, name, defaults, created/updated); New builds one
//     from exactly the []Field list given; CreateEntry creates one under a
//     fresh id (NewID: UUIDv7, time ordered). Observe registers a hook that
//     sees every Mutation (package watcher/journal turns them into events);
//     AddRule a rule every write (and delete) must pass (package agents:
//     the state machine), refused writes fail with a *RefusedError;
//     AddAmend a hook that derives fields of a write before it is ruled
//     (package agents: applied_state follows state) and attaches what
//     that means to the Mutation (Mutation.Derived).
//   - Walk is the one rule for which files are documents (.md files outside
//     dot directories and the journal); Check validates documents and runs
//     the installed checks (AddCheck); Migrate writes documents of older
//     schema versions in the current one.
//
// Every document write goes through one path, WriteFile: temp file in
// .tavern/.tmp/, write, fsync, rename into place, fsync of the directory.
// A crash leaves the old or the new version, never a torn or empty file.
// Creates of new names (Create, Move) write an unnamed O_TMPFILE in the
// target directory instead, fsync it and link(2) it into place (EEXIST if
// the name exists): the same guarantee without a rename, whose
// cross-directory form takes a filesystem-wide lock that other processes
// hold while their replaced files are discarded (measured stalls of
// milliseconds to seconds on a shared disk); where O_TMPFILE or linking
// by /proc/self/fd is unavailable it falls back to .tmp/ and a rename.
// Directory fsyncs are shared by concurrent writers to one directory
// (group commit): each waits for an fsync that started after its change.
// The revision of a document (Doc.Rev) is a hash of its bytes, so hand
// edits change it too and UpdateIf notices them.
//
// A Dir (Store.OpenDir) is an open directory whose methods name files
// relative to its descriptor, never following links, for callers that
// make many changes in a few directories (the queue broker). It keeps
// naming the directory it opened even if the path is later given to
// another one: Stale tells, and callers reopen.
//
// Parsing: frontmatter in the shapes Tavern itself writes is read by a
// small scanner (fastfront.go, which says why) that builds the same
// yaml.Node tree yaml.v3 would, node for node; anything else goes to
// yaml.v3. A differential test and FuzzParseFrontFast compare the two on
// every input the scanner accepts.
//
// JSON: AppendJSON writes field values as encoding/json's MarshalIndent
// would (keys sorted, HTML not escaped), without reflection, for `ls
// --json` and `show --json` over thousands of documents. One difference:
// YAML's .nan, .inf and -.inf, which JSON has no number for, come out as
// those spellings, quoted, where encoding/json fails, so that one such
// document never stops a listing.
//
// # Round-trip fidelity
//
// A Doc keeps the bytes it was parsed from. Set, SetYAML, Delete and
// Rename rewrite only the lines of the field they touch; comments, key
// order, quoting style, unknown keys, CRLF line endings and the body are
// untouched, so `git diff` after an engine write shows exactly the change.
//
// # Crashes, modes, odd files
//
// A rewrite keeps the permission bits of the file it replaces (a document
// read from a 0600 file is written back 0600, also when it moves to
// another directory); new documents, directories and lock files get 0666
// (0777) minus the umask, read once per process. A path named like a
// document that is not a regular file, or that this process may not
// read, is an *OddFileError (ErrOddFile), refused from its lstat: a FIFO
// is never opened. Frontmatter whose aliases expand past 65536 values (a
// "billion laughs") or into themselves is a parse error at the alias.
// TryLockInheritable takes a lock on a descriptor a child process can
// inherit (it then stays held while any holder lives); LockHolders lists
// the processes holding it (Linux /proc). Finding is what `tavern doctor`
// reports; TempFindings, DocLockFindings, LockKeys, LockFree and
// RemoveLock serve it.
//
// # Caveats
//
//   - Atomicity relies on rename(2) being atomic within one filesystem.
//     .tmp/ must be on the same filesystem as the documents (it is inside
//     .tavern/). NFS gives atomic renames on the server, but clients cache:
//     use the watcher's polling mode there and treat flock as advisory.
//   - flock locks are dropped by the kernel when their process dies; that
//     is the liveness signal for claims. On NFS, flock is emulated with
//     POSIX locks and may be lost on a network partition (fencing with
//     claim attempts covers that in package queues).
//   - Lock files are never deleted while they might be held: Lock.Remove
//     unlinks only while holding, and every acquirer re-checks that the
//     file it locked is still the one at the path: an inode comparison
//     with the path, or, through a Store's cached descriptor, that the
//     file still has a link. The second assumes lock files are only
//     created and removed, never renamed: do not move files under
//     .tavern/.locks/ by hand while Tavern runs (deleting them is safe).
//   - A document's lock file (DocLockKey) is removed with the document
//     (Delete, under the lock) and when a move leaves its path
//     (DropDocLock: only if nobody holds it; one lstat when there is
//     none). Store.Move leaves the lock its caller holds, even that of
//     from: the caller unlocks it. Files left anyway (a writer that
//     raced the removal, a held lock, an older version) are
//     DocLockFindings, a note for doctor. Directories under .locks/ are
//     never removed: an acquirer between its mkdir and its open would
//     fail.
//   - A Store keeps the lock files it has used open (up to 1024
//     descriptors, released when the Store is garbage): goroutines of one
//     Store exclude each other with a mutex per lock file, and the flock
//     on the shared descriptor excludes everyone else. A blocking Lock
//     holds that mutex while it waits; LockContext with a cancellable
//     context opens its own descriptor as before.
//   - `durability: relaxed` in tavern.md skips every file fsync: writes are still
//     atomic but the last ones may be lost on power failure. (Its only fsyncs are
//     the batched directory fsyncs that make spare files reusable.)
//   - Retire (for superseded copies) does not unlink: the file waits in
//     .tmp/ as a spare that a later create in this process rewrites in
//     place, so no block is freed (spare.go says why and when a spare is
//     safe to reuse). A process keeps at most 256, and none before it has
//     retired 16 files (a short-lived command would leave them for
//     nobody); a dead process's are stale temp files (`tavern doctor`
//     finds them), and one older than StaleTemp may be swept by another
//     process's Open (the create then makes a fresh file).
//   - Documents are limited to MaxDocSize (8 MiB) and must be valid UTF-8
//     without NUL bytes; larger or binary files are reported, never read
//     whole.
//   - Symlinks are followed only if they resolve inside the store (never,
//     through a Dir).
//   - A process killed mid-write leaves a temp file in .tmp/ (never a torn
//     document). Open removes temp files older than StaleTemp (15 min),
//     and beyond MaxTemps (1024) the oldest older than MinTempAge (10 s);
//     younger ones may belong to a live writer, possibly on another host.
//   - Line edits are verified (same keys, no other value changed). An
//     unusual layout that defeats them is re-encoded instead (comments kept,
//     exact layout not); exotic YAML that yaml.v3 cannot write back (custom
//     tags, duplicate keys) gives ErrUneditable and is left unchanged.
//   - Frontmatter may not contain a lone CR, NEL, LS or PS: YAML treats
//     them as line breaks that line-exact editing cannot see.
//   - Fields expands YAML aliases. Parse refuses frontmatter whose aliases
//     would expand past 65536 values ("billion laughs") or into themselves
//     (`a: &x [*x]`), so no reader ever sees a cut-off value as null.
package docstore
