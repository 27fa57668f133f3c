// Package tuples is the Linda tuple space of a Tavern store and the two
// coordination primitives built on it: resource tokens (N-slot
// semaphores such as a merge slot) and path reservations (an agent's
// exclusive claim on the files a glob matches), with the git pre-commit
// guard that enforces reservations.
//
// # Tuples
//
// A tuple is a document tuples/<type>/<id>.md whose frontmatter fields,
// apart from schema_version, id, created and expires, are its values. Ids
// are UUIDv7, so directory order is age order and Rd/In take the oldest
// match. Out writes one durably. Rdp/Inp answer at once; Rd/In block until
// a match appears or the context ends. Patterns (ParsePattern) are
// docstore --where conditions plus the formal field=?, which matches any
// non-null value and returns it in Tuple.Captures.
//
// In is the docstore claim: lock tuples/<type>/<id>, rename the file into
// tuples/<type>/.taken/ (one racer wins, the others see ErrLost and try
// the next match), re-read and re-match it there (a hand edit may have
// changed it), archive it to .trash/ and remove its lock file. So each
// tuple is taken exactly once, and an acknowledged In survives a crash. A
// consumer that dies between the two renames leaves the tuple in .taken/
// with its lock free; the next Inp that finds nothing, or GC, puts it
// back (redelivered, never lost, in that window). The staging directory
// starts with a dot: listings, `tavern check` and the watcher never see a
// taken tuple.
//
// Expired tuples (OutOptions.TTL) are invisible to Rd, In and List at
// once, and archived to .trash/ by the next In of their type that finds
// nothing, or by GC, under the claim lock.
//
// # Waiting
//
// Every blocking call (Rd, In, Acquire, ReserveWait) is watcher.WaitDir
// on its type's directory: the inotify watch is in place before the first
// look, the write or release that can satisfy the caller wakes it, and a
// burst of events costs one look. What makes no filesystem event is
// looked at on a timer: a holder's death (a dropped flock) every
// SpaceOptions.LivenessPoll (1s) while a live holder is in the way, a
// lease or TTL when it runs out, and everything every Recheck (10s, the
// safety net). Without inotify a wait polls every 200ms. With
// SpaceOptions.Projection, Rd/In wait on the projection instead.
//
// # Resource tokens
//
// A token NAME with count N is N tuples of type "token" with token: NAME,
// slot: i and epoch: k. Acquire takes a free slot with the tuple claim; a
// held slot stays in tuples/token/.taken/ with hold, held_by,
// liveness_lock, lease_until, acquired, instance, and epoch incremented.
// Guarantees:
//
//   - Never more holders than the count at any instant: a slot moves only
//     by rename under its lock.
//   - The handle ID:EPOCH fences: a holder whose slot was reclaimed and
//     taken again cannot free the new holding (ErrNotHolder).
//   - ErrUnknownToken only for a token with no slot at all: a slot that
//     changed hands while the free and the held slots were read is looked
//     up exactly (tokenExists), and the answer is "busy", never "unknown".
//   - Acquire with a deadline succeeds if a slot frees before it.
//
// What keeps a slot held, and what brings it back without a release:
//
//   - HoldProcess (library, no As, no TTL): the acquiring process keeps the
//     slot's flock; its death drops it.
//   - HoldAgent (As: an agent whose liveness lock agents/<name> is held by
//     its spawn wrapper): held while that lock is held and the agent's
//     document names the same instance; back when the process dies or a
//     newer instance replaces it (or an optional lease runs out).
//     Acquiring for an agent with no live lock and no TTL is refused
//     (ErrHolderNotAlive).
//   - HoldLease (TTL, nothing alive standing for it): until lease_until.
//
// Reaping happens inside every acquire, TokenSlots and GC.
//
// # Path reservations
//
// A reservation is a tuple of type "reservation" with agent, glob,
// reason, expires (TTL) and, when a live holder stands for it, hold,
// liveness_lock and instance. Reserve checks every requested glob against
// every other agent's live reservation and writes all or nothing, under
// one store-wide lock, so two agents never hold overlapping globs at
// once. Overlap is decided exactly, both ways: globs compile to automata
// and two globs overlap when their product accepts some path.
//
// A reservation made for a live agent (its liveness lock held) is tied to
// that agent instance's life like a token; with ReserveOptions.Process,
// to the calling process (a holder lock released by Space.Close or
// death); otherwise it lasts until its TTL or an unreserve. Expired
// reservations and those whose holder is gone are released by the next
// look (Reserve, Reservations, CheckPaths, Guard), journaled as
// reservation.expired / reservation.reclaimed; a Reserve they stood in
// the way of hears of each through ReserveOptions.Released.
//
// ReserveWait waits until the paths are free: woken by an unreserve, by
// the first conflicting TTL, and each LivenessPoll while a live holder is
// in the way. It journals one reservation.waiting and, if it gives up, one
// reservation.conflict, not every refusal.
//
// Guard (`tavern guard`, the pre-commit hook `tavern guard --install`
// writes) reads `git diff --cached --name-only` and refuses paths
// reserved by another agent. Globs and staged paths are relative to the
// project root, the directory that holds .tavern/.
//
// # Identity and fencing
//
// Every holder name goes through schema.ValidAgentName. Each spawn of an
// agent is an instance (TAVERN_INSTANCE, recorded as instance in the
// agent document). Slots and reservations record the instance that took
// them. A release or unreserve by name (or by a bare slot id) from
// another instance changes nothing and returns a *FencedError
// (ErrFenced); an acquire or reserve by an instance the agent document
// no longer names is refused the same way. A release by full handle
// (ID:EPOCH) or an unreserve by id works from anywhere: those name one
// holding exactly.
//
// # Journal
//
// tuple.out, tuple.in, tuple.expired, tuple.returned, token.init,
// token.acquired, token.waiting, token.released, token.reclaimed,
// reservation.made, reservation.renewed, reservation.released,
// reservation.reclaimed, reservation.expired, reservation.waiting,
// reservation.conflict and wait.polling go to the store's journal. A
// failed append does not fail the mutation, which has happened.
//
// # Caveats
//
//   - Liveness is flock: local filesystems only; on NFS rely on TTLs.
//   - A death is noticed at the next look, not as an event: within one
//     LivenessPoll for a waiter, at the next call otherwise.
//   - Probing an agent's liveness takes its lock for an instant when it
//     is free; a spawn wrapper must retry its own lock, not fail on it.
//   - Until the agent document records instances, a respawn under the
//     same name looks like its predecessor: what the dead instance held
//     stays until the successor exits.
//   - Matching scans and parses the type's directory (no index).
package tuples
