// Package queues holds the claim-based coordination of a Tavern store:
// work queues and items, and the Linda tuple space with the resource
// tokens and path reservations built on it.
//
// # Queues and items
//
// A queue is queues/<q>/queue.md (priority, max_attempts, lease,
// lease_grace, backoff, backoff_max, on_empty, steal) plus one file per
// item in pending/, claimed/, done/ and dead/: the directory is the state,
// so `ls` shows a queue and `grep` finds an item. A Broker (Open) is the
// engine over one store; any number of Brokers in any number of processes
// share it through the files and their flocks only.
//
// Item ids are "p" + two-digit priority + "-" + UUIDv7, e.g.
// p05-019a8c8e-5f1c-7b7e-9a43-3f0b2a7c1d10, and the id is the file's stem
// in every state. So `ls pending/` is the take order (priority 0 first,
// then age), and `tavern show items/ID` / `tavern item show ID` find the
// item wherever it is. Priorities are 0 (highest) .. 99; the file name
// keeps the priority given at Add (editing the priority field by hand does
// not reorder the queue).
//
// # Claims
//
// Take lists pending/ in name order and, for each candidate, TryLocks the
// item lock (ItemLockKey, items/<q>/<stripe>: a function of the item id
// only, whatever its state; striped 256 ways so lock files are reused
// instead of created per item; a busy lock means another taker is on it
// or on a neighbour, so it moves on), reads
// the file, skips it if not_before is in the future or a dependency is not
// in done/, and otherwise writes the claimed copy claimed/<id>.md (a
// no-replace create: temp, fsync, rename, fsync dir) with claimed_by,
// claim_attempt, attempts+1, lease_until, started, claim_kind and
// liveness_lock, then removes the pending copy. Every state change of an
// item (claim, done, fail, renew, release, reap, retry) happens under its
// item lock, which makes the claim exactly-once: the loser of a race finds
// the lock busy or the pending file gone.
//
// claim_attempt is the fencing token. It only grows (release and retry do
// not reset it); Complete, Fail, Renew and Release take it and refuse with
// ErrStale (exit 4) if it is not the item's current claim, changing
// nothing. attempts is what counts against max_attempts: it grows at each
// claim, Release gives the attempt back, Retry resets it.
//
// # Liveness
//
// What keeps a claim alive is recorded in the item:
//
//   - claim_kind: lease: only lease_until. One-shot processes (`tavern
//     queue take`) make these: their flock would die with them at once.
//     The holder renews (Renew, `tavern item renew`); once lease_until
//     passes, the next reaper returns the item.
//   - claim_kind: liveness, liveness_lock: holders/<host>-<pid>-<nonce>
//     (HolderLockKey): the claiming process (HoldLock, e.g. a pool worker
//     using the library) holds its Broker's holder lock from its first
//     claim until Close or death. One lock per process, so no lock file
//     is created per claim, and a hung holder reaped after its lease
//     cannot keep the item from being claimed again (claims never wait for
//     liveness locks, only reapers look at them).
//   - claim_kind: liveness, liveness_lock: agents/<name> (AgentLockKey):
//     `take --as NAME` (AgentLock) while some process holds NAME's
//     liveness lock (the agent's spawn wrapper in package agents). If that
//     lock is free when the claim is made, the agent is not running and
//     the claim is lease-only.
//
// A reaper (Reap, `tavern reap`, and Take itself: once per ReapInterval per
// queue and always before reporting a queue empty) takes each claimed
// item's lock and, for a liveness claim, TryLocks its liveness_lock. If it
// gets it, the kernel has dropped the holder's flock: the holder is dead,
// and the item goes back to pending/ at once (its attempt stays counted; on
// its last attempt it goes to dead/). If the holder is alive but
// lease_until has passed, the item is hung: hung_since is set and
// item.lease_expired journaled once, and after lease_grace the item is
// returned anyway; the hung holder's late done is refused by the fence.
// Note that the reaper holds an agent's lock for a moment while it checks
// it: a spawn wrapper must take its lock with a blocking Lock, not
// TryLock.
//
// # Failure, backoff, dead letters, dependencies
//
// Fail records last_error and returns the item to pending/ with not_before
// = now + backoff·2^(attempts-1), capped at backoff_max; once attempts
// reaches max_attempts (the item's own, else the queue's) it moves to
// dead/ with dead_reason. Retry moves dead items back with attempts reset.
// An item is claimable only when every depends_on id is in done/ (in any
// queue); a dependency in dead/ (or missing) is reported as blocking by
// Take's *EmptyError, Claim.Notes and Stats. Add refuses unknown
// dependencies and dependency graphs with a cycle (possible only through
// hand edits, since ids are fresh).
//
// # Several queues, stealing, waiting
//
// Take tries its own queues in queue priority order. With Steal, when they
// have nothing, it takes from the other queues with steal: true by stride
// scheduling: each queue has a pass value advanced by 1+priority when it
// yields an item, and the queue with the lowest pass goes first, so queue
// shares are proportional to 1/(1+priority) and no stealable queue
// starves. A queue that was empty rejoins at the current pass. Within one
// Broker this is exact; separate one-shot processes start from random
// passes, which gives the same shares on average.
//
// Wait makes Take block, event-driven: an inotify watch on the pending/ and
// done/ directories of the queues involved (done/ because a finished
// dependency makes items claimable), a timer for the earliest not_before
// or lease expiry it saw, and a recheck every Options.Recheck (2s) for
// what inotify cannot see (a holder's death drops a flock, which is no file
// event; writes from other machines). The watch is set up before the
// second scan, so nothing that arrives in between is missed. (This uses
// fsnotify directly in wait.go; it is the one place to switch to the
// watcher package's WaitFor.)
//
// # Bad input
//
// An item file that does not parse or validate stays where it is. Take
// skips it and reports it (Claim.Notes.Invalid, EmptyError.Diag.Invalid:
// *docstore.ParseError / *docstore.ValidationError with path:line:col), as
// do Stats and Reap; it never blocks the rest of the queue.
//
// # Costs (durable store)
//
// A take+done cycle makes two document writes, each a no-replace create
// (fsync of the temp file, fsync of the target directory) plus an unlink
// of the old copy: 4 fsyncs per cycle. The old copy's directory is not
// fsynced after the unlink: after a crash the old copy may come back next
// to the new one, and every reader resolves such pairs (a pending copy
// whose done/ copy exists, or whose claimed/ copy is newer by `updated`, is
// moved to .trash/; a claimed copy whose done/ or dead/ copy exists is
// stale for reapers and fenced calls; lookups prefer the later state).
// With `durability: relaxed` in tavern.md there is no fsync at all (still
// atomic). Lock files are reused (256 item-lock stripes per queue, one
// holder lock per process): a cycle creates two inodes (the claimed and
// the done copy) and frees two (the pending and the claimed copy). On a
// disk without a journal and with `discard`, inode allocation after
// frees and synchronous discards are the main cost besides fsync (see
// research/physical-limits.md).
//
// # Journal
//
// Every state change appends an event to the store's journal
// (watcher.Journal): item.added, item.claimed, item.completed,
// item.failed, item.dead, item.released, item.reaped, item.lease_expired,
// item.retried, queue.created, with the item id, queue, path and the claim
// attempt. The files are the truth; a journal write failure does not undo
// a state change.
//
// # Caveats
//
//   - Liveness needs flock semantics: on NFS flocks are emulated and may
//     be lost on a partition, so rely on leases (and the fence) there.
//   - Clocks: leases and backoffs compare wall clocks of the processes
//     involved; keep machines sharing a store in NTP sync.
//   - A liveness claim must still be renewed (Claim.KeepAlive) if its
//     work can outlast the lease, or a reaper will call it hung and
//     return it after lease_grace.
package queues
