// Package tuples is the Linda tuple space of a Tavern store, and the
// resource tokens and path reservations built on it.
//
// # Basics
//
// A tuple is a document tuples/<type>/<id>.md whose frontmatter fields,
// apart from schema_version, id, created and expires, are its values. A
// Space (NewSpace) is the API: Out writes a tuple durably; Rdp and Inp
// read or take the oldest match at once; Rd and In block until one
// appears or the context ends. Ids are UUIDv7, so directory order is age
// order and each pattern is served first in, first out.
//
// A Pattern (ParsePattern) is a list of docstore --where conditions
// (field=value, !=, <, <=, >, >=, ~substring, field? exists) plus the
// formal field=?, which matches any non-null value and returns it in
// Tuple.Captures. Lists match = and ~ if any element does.
//
// In is docstore's claim: under the tuple's lock, rename it into
// tuples/<type>/.taken/ (one racer wins, the others get ErrLost and move
// on), re-read and re-match it there (a tuple a hand edit changed is put
// back), then archive it into the store's .trash/. Each tuple is taken
// exactly once; consumed tuples are never unlinked; the first rename is
// fsynced, so an acknowledged In survives a crash. The .taken/ directory
// starts with a dot, so listings, `tavern check` and the watcher never
// see a taken tuple. Expired tuples (OutOptions.TTL, or a hand-written
// expires) are invisible at once and archived by the next In of their
// type that finds nothing, or by GC, under the same lock.
//
// A Token NAME with count N is N tuples of type "token", one per slot.
// TryAcquire and Acquire take a free slot with the same claim, so there
// are never more holders than slots; the held slot stays in .taken/ with
// its holder written into it. The handle ID:EPOCH fences releases
// (ErrNotHolder for a holder whose slot was reclaimed). ErrUnknownToken is
// said only of a token with no slot: a slot that changed hands while the
// free and held slots were read is looked up exactly. What keeps a slot
// held: the acquiring process's flock (HoldProcess), an agent's liveness
// lock held by its spawn wrapper (HoldAgent; refused with
// ErrHolderNotAlive if the agent is not running and no TTL is given), or
// a lease (HoldLease). Every acquire, TokenSlots and GC reclaims slots
// whose holder is gone.
//
// A Reservation is a tuple of type "reservation": an agent, a Glob, a
// reason, an expiry and, when a live holder stands for it, what keeps it
// (hold, liveness_lock, instance). Reserve checks every requested glob
// against every other agent's live reservation and writes all or nothing,
// under one store-wide lock, so two agents never hold overlapping globs.
// Overlap is decided exactly: two globs overlap when the product of their
// automata accepts some path ("src/**/*.go" and "src/a/*" overlap;
// "src/*.go" and "src/a/*.go" do not). A reservation made for a running
// agent is tied to its life like a token (ReserveOptions.Process: to the
// calling process, until Space.Close); expired ones and those whose holder
// is gone are released by the next look (ReserveOptions.Released hears of
// those in the way). ReserveWait blocks until the paths are free.
// Reservations are advisory except for commits: Guard (`tavern guard`, a
// git pre-commit hook installed by InstallHook) refuses staged paths
// reserved by another agent. Globs and paths are relative to the
// directory that holds .tavern/.
//
// Identity: every holder name passes schema.ValidAgentName, and slots and
// reservations record the agent instance that took them (each spawn is
// one, $TAVERN_INSTANCE; the agent document names the current one). A
// release or unreserve by name from another instance, or an acquire,
// reserve or Guard by a dead one (replaced, or its spawn wrapper gone: the
// agent's liveness lock free), changes nothing: *FencedError (ErrFenced).
// A full handle, or UnreserveID, names one holding and works from
// anywhere. A hold of a replaced instance is reclaimed like a dead one.
//
// Every change is journaled (tuple.*, token.*, reservation.*; see
// watcher/journal); a blocked Acquire or ReserveWait journals one
// *.waiting, not each refusal. A failed append does not fail the change,
// which has happened.
//
// # Caveats
//
//   - A consumer that dies between the two renames of an In leaves the
//     tuple in .taken/ with its lock free: the next Inp that finds
//     nothing, GC, or a blocked In's re-scan puts it back. That window
//     redelivers (at-least-once); after the archive rename a take is
//     at-most-once, as in any take.
//   - Blocked calls wait with watcher.WaitDir on tuples/<type>/ (Rd/In
//     also on SpaceOptions.Projection's WaitFor): the watch is added before
//     the first scan, a re-scan every SpaceOptions.Recheck (10s) is the
//     safety net, and without inotify they poll every 200ms (journaled as
//     watch.degraded, with a warning). Every waiter
//     re-scans on every event: many waiters on a busy type are a
//     thundering herd, bounded by the directory size.
//   - A holder's death or a lease running out is no filesystem event: a
//     blocked Acquire or ReserveWait re-checks every
//     SpaceOptions.LivenessPoll (1s) while a live holder is in its way, and
//     at the first expiry otherwise. Probing an agent's liveness takes its
//     lock for an instant, so an agent's wrapper must block on its own
//     lock, not TryLock it.
//   - Liveness is flock: on NFS rely on TTLs. Until the agent document
//     records each spawn's instance, a respawn under the same name looks
//     like its predecessor, and what the dead instance held stays held.
//   - Matching scans and parses the type's directory oldest first; there
//     is no index. A file that does not parse is skipped by Rd/In and
//     reported by List (and `tavern check`), never moved.
//   - Lock files of consumed tuples are removed by their consumer; a racer
//     that lost after the winner finished re-creates one, and GC sweeps
//     those (relying on docstore's .locks/<key>.lock layout).
package tuples
