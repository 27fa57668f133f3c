// Package queues holds the claim-based coordination of a Tavern store:
// work queues and items, and the Linda tuple space with the resource
// tokens and path reservations built on it.
//
// # Tuple space
//
// A tuple is a document tuples/<type>/<id>.md whose frontmatter fields,
// apart from schema_version, id, created and expires, are its values. Ids
// are UUIDv7, so directory order is age order and Rd/In take the oldest
// match: a FIFO per pattern, not a promise Linda makes but one people
// reading `ls` expect. Space.Out writes one durably (temp, fsync, rename,
// fsync dir). Rdp/Inp answer at once; Rd/In block until a match appears or
// the context ends.
//
// Patterns (ParsePattern) are docstore --where conditions (field=value,
// !=, <, <=, >, >=, ~substring, field? exists) plus the formal field=?,
// which matches any non-null value and returns it in Tuple.Captures.
// Lists match = and ~ if any element does, as in `tavern ls --where`.
//
// In is the docstore claim: lock the tuple's key tuples/<type>/<id>, rename
// the file into tuples/<type>/.taken/ (rename is the arbiter: one racer
// wins, the others see ErrLost and move on to the next match), re-read and
// re-match it there (a hand edit may have changed it since the scan; a
// tuple that no longer matches is put back), rename it into the store's
// .trash/ (named <time>-tuples__<type>__<id>.md, like deleted documents:
// consumed tuples are archived, never unlinked) and remove its lock file.
// The consumed tuple is gone from the space the moment the first rename
// lands; that rename is fsynced, so an acknowledged In survives a crash.
// A consumer that dies between the two renames leaves the tuple in .taken/
// with its lock free: the next Inp that finds nothing, GC, or a blocked
// In's safety-net re-scan puts it back, so a crash there redelivers rather
// than loses (at-least-once for that window; once the archive rename has
// happened, delivery to a process that then dies is lost, as in any
// at-most-once take).
//
// The staging directory starts with a dot, so it is outside the tuple
// kind's path pattern: docstore.List, `tavern ls tuples`, `tavern check`
// and the watcher's projection (which ignores dot names) never see a taken
// tuple, and to the watcher a take is the tuple's removal.
//
// Rd and In are woken by inotify events on tuples/<type>/ (the watch is
// added before the first scan, so a write after the scan cannot be
// missed), with a full re-scan every SpaceOptions.Recheck (10s) as a
// safety net for lost or overflowed events and network filesystems, and a
// 200ms poll if inotify is unavailable. This is a stand-in until the
// watcher package's WaitFor exists; the waits are in tuple_wait.go only.
// Every waiter re-scans on every relevant event: with many waiters on a
// busy type that is a thundering herd, bounded by the directory size.
//
// TTL: OutOptions.TTL writes expires: now+TTL (an expires field written by
// hand works too). Expired tuples are invisible to Rd, In and List at
// once; GC archives them to .trash/ under the same claim lock, so GC
// racing an In cannot archive a tuple the In took.
//
// Caveats: matching scans and parses the type's directory oldest first
// (no index yet; a pattern-less In parses one file); a file that does not
// parse is skipped by Rd/In and reported by List (and `tavern check`),
// never moved. Lock files of consumed tuples are removed by their
// consumer; a racer that lost after the winner finished re-creates one,
// and GC sweeps those (it relies on docstore's .locks/<key>.lock layout).
//
// # Resource tokens
//
// A token NAME with count N is N tuples of type "token" (TokenType) with
// token: NAME, slot: i and epoch: k. TryAcquire/Acquire take a free slot
// with the same claim; a held slot stays in tuples/token/.taken/ with its
// holder written into it: hold (process, agent or lease), held_by,
// liveness_lock, lease_until, acquired, and epoch incremented. The handle
// ID:EPOCH fences releases: a holder whose slot was reclaimed and taken
// again cannot free the new holding (ErrNotHolder).
//
// What keeps a slot held, and what brings it back without a release:
//
//   - HoldProcess (library, no As, no TTL): the acquiring process keeps the
//     slot's flock. The kernel drops it when the process dies, and the next
//     reaper that can take the lock returns the slot.
//   - HoldAgent (As: an agent whose liveness lock agents/<name> is held,
//     by its spawn wrapper): the slot stays held while that lock is held,
//     even after the one-shot CLI that acquired it exits; it comes back
//     when the agent's process dies (or its optional lease runs out).
//     Acquiring for an agent with no live lock and no TTL is refused
//     (ErrHolderNotAlive) rather than silently becoming a lease.
//   - HoldLease (TTL, nothing alive standing for it): held until
//     lease_until. The CLI's plain `token acquire` is this, with the
//     store's default_lease.
//
// Reaping happens inside every acquire, `token ls` and GC; a blocked
// Acquire re-checks every LivenessPoll (1s), because a death or a lease
// running out is not a filesystem event. Probing an agent's liveness takes
// its lock for an instant when it is free; an agent wrapper must therefore
// retry (block on) its own lock rather than fail on a momentary conflict.
//
// # Path reservations
//
// A reservation is a tuple of type "reservation" with agent, glob, reason
// and expires (TTL; the CLI defaults to 1h). Reserve checks every
// requested glob against every other agent's live reservation and writes
// all or nothing, under one store-wide lock ("reservations") so two agents
// cannot both win overlapping globs. Overlap is decided exactly, both
// ways: a Glob is compiled to an automaton and two globs overlap when the
// product automaton accepts some path ("src/**/*.go", "src/a/b.go" and
// "src/a/*" overlap pairwise; "src/*.go" and "src/a/*.go" do not).
// Reservations are advisory for everything but commits: Guard (`tavern
// guard`, installed as a pre-commit hook by `tavern guard --install`) reads
// `git diff --cached --name-only` and refuses paths reserved by another
// agent. Globs and staged paths are relative to the project root, the
// directory that holds .tavern/.
//
// Journal: tuple.out, tuple.in, tuple.expired, tuple.returned,
// token.init, token.acquired, token.released, token.reclaimed,
// reservation.made, reservation.renewed, reservation.released and
// reservation.conflict go to the store's event journal (watcher.Journal).
// A failed journal append does not fail the mutation, which has happened.
package queues
