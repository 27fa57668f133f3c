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
//   - New builds a document of a kind from a []Field list and a body;
//     CreateEntry creates one under a fresh id (NewID: UUIDv7, time
//     ordered). Observe registers a hook that sees every Mutation (package
//     watcher/journal turns them into events).
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
// A Dir (Store.OpenDir) is an open directory for callers that make many
// changes in a few directories (the queue broker's state directories): it
// is reached component by component with O_NOFOLLOW, and its ReadFile,
// Get, Create, Retire, Exists and Lstat name files relative to the
// descriptor (openat, renameat2, linkat, fstatat), never following the
// last component either. The kernel then resolves one name per call
// instead of the whole absolute path, and no per-call symlink walk is
// needed. A Dir keeps naming the directory it opened even if its path is
// later given to another one; Stale tells, and callers recheck (the
// broker does at most every 100ms and after any failure).
//
// Parsing: frontmatter in the shapes Tavern itself writes is read by a
// small scanner (fastfront.go, which says why) that builds the same
// yaml.Node tree yaml.v3 would, node for node; anything else goes to
// yaml.v3. A differential test and FuzzParseFrontFast compare the two on
// every input the scanner accepts.
//
// # Round-trip fidelity
//
// A Doc keeps the bytes it was parsed from. Set, SetYAML, Delete and
// Rename rewrite only the lines of the field they touch; comments, key
// order, quoting style, unknown keys, CRLF line endings and the body are
// untouched, so `git diff` after an engine write shows exactly the change.
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
//   - A Store keeps the lock files it has used open (up to 1024
//     descriptors, released when the Store is garbage): goroutines of one
//     Store exclude each other with a mutex per lock file, and the flock
//     on the shared descriptor excludes everyone else. A blocking Lock
//     holds that mutex while it waits; LockContext with a cancellable
//     context opens its own descriptor as before.
//   - `durability: relaxed` in tavern.md skips every file fsync: writes are still
//     atomic but the last ones may be lost on power failure. (Its only fsyncs are
//     the batched directory fsyncs that make spare files reusable.)
//   - Retire (used by queue state changes for the superseded copy) does
//     not unlink: it renames the file into .tmp/ as a spare, and a later
//     create in this process rewrites it in place and renames it to the
//     new name (no replace). On a disk mounted `discard` without a journal
//     freeing blocks waits for a synchronous discard; a spare frees none
//     while the new content fits its blocks. A spare is reused only after
//     an fsync of the directory it left finished after it left (a
//     background goroutine fsyncs those directories once 16 wait; a
//     create never waits for it), so a crash cannot bring its old name
//     back onto new content. A process keeps at most 256; leftovers of a dead process
//     are stale temp files. A spare older than StaleTemp (by mtime: a
//     long-pending item's) may be swept by another process's Open; the
//     create then falls back to a fresh file.
//   - Documents are limited to MaxDocSize (8 MiB) and must be valid UTF-8
//     without NUL bytes; larger or binary files are reported, never read
//     whole.
//   - Symlinks are followed only if they resolve inside the store (never,
//     through a Dir).
//   - A process killed mid-write leaves a temp file in .tmp/ (never a torn
//     document). Open removes temp files older than StaleTemp (15 min);
//     younger ones may belong to a live writer, possibly on another host.
//   - Line edits are verified (same keys, no other value changed). An
//     unusual layout that defeats them is re-encoded instead (comments kept,
//     exact layout not); exotic YAML that yaml.v3 cannot write back (custom
//     tags, duplicate keys) gives ErrUneditable and is left unchanged.
//   - Frontmatter may not contain a lone CR, NEL, LS or PS: YAML treats
//     them as line breaks that line-exact editing cannot see.
//   - Fields expands YAML aliases, but cuts cycles (`a: &x [*x]`) and stops
//     after 65536 values reached through aliases ("billion laughs"); the
//     cut-off values read as null.
package docstore
