// Package queues holds the work queues of a Tavern store: items that
// move through pending/, claimed/, done/ and dead/, are claimed exactly
// once, are kept alive by a lease or by a live process, and are retried
// with backoff. The tuple space, resource tokens and path reservations,
// built on the same claim primitive, are in package queues/tuples.
//
// # Basics
//
// A queue is queues/<q>/queue.md (priority, max_attempts, lease,
// lease_grace, backoff, backoff_max, on_empty, steal) plus one file per
// item in pending/, claimed/, done/ and dead/: the directory is the state,
// so `ls` shows a queue and `grep` finds an item. Item ids are "p" +
// two-digit priority + "-" + UUIDv7 (p05-019a8c8e-...), the file's stem in
// every state, so `ls pending/` is the take order (priority 0 first, then
// age).
//
// A Broker (Open) is the engine over one store; any number of Brokers in
// any number of processes share it through the files and their flocks
// only. Add creates an Item; Take returns a Claim, whose Complete, Fail,
// Renew, Release and KeepAlive change the item (Broker's Complete, Fail,
// Renew and Release do the same by id and claim attempt). Reap returns
// items whose holder died or whose lease ran out, Retry brings dead items
// back, Stats counts.
//
// # Claims
//
// Take walks pending/ in name order and TryLocks each candidate's item
// lock (ItemLockKey: a function of the id only, striped 256 ways so lock
// files are reused; a busy lock means another taker is there, so it moves
// on). It skips items whose not_before is in the future or whose
// depends_on ids are not all in done/, writes claimed/<id>.md with a
// no-replace create and removes the pending copy. Every state change of an
// item happens under its item lock, which makes the claim exactly-once.
//
// claim_attempt is the fencing token: it only grows, and Complete, Fail,
// Renew and Release refuse with ErrStale (changing nothing) if it is not
// the item's current claim. attempts counts against max_attempts: it grows
// at each claim, Release gives the attempt back, Retry resets it.
//
// What keeps a claim alive is recorded in the item (claim_kind):
//
//   - lease: only lease_until. One-shot processes (`tavern queue take`)
//     make these; the holder renews, and once lease_until passes the next
//     reaper returns the item.
//   - liveness with a holder lock (HolderLockKey, HoldLock): the claiming
//     process holds one lock from its first claim until Close or death.
//   - liveness with an agent's lock (schema.AgentLockKey, AgentLock; the
//     name passes schema.ValidAgentName): the agent's spawn wrapper holds
//     it. If it is free when the claim is made, the agent is not running
//     and the claim is lease-only.
//   - liveness with an instance's lock (schema.InstanceLockKey): an
//     AgentLock claim made for a spawn instance (TakeOptions.Instance or
//     Options.Instance, the CLI's $TAVERN_INSTANCE). The wrapper holds it
//     on a descriptor its child inherits, so the claim lives while any
//     process of the child's tree does (package agents, Supervision).
//
// A claim records the instance that made it (instance). Complete, Fail,
// Renew and Release of a Broker opened with an Instance, and every method
// of a Claim, refuse with ErrStale a claim recorded with another instance
// (or none): a late action of a dead instance never touches its
// successor's claim, whatever the agent name. A Broker without an
// Instance (a person at a shell) is fenced by the attempt only.
//
// A reaper (Reap, `tavern reap`, and Take itself, once per ReapInterval
// and before reporting a queue empty) TryLocks a liveness claim's lock: if
// it gets it the holder is dead and the item goes back to pending/ at once
// (or to dead/ on its last attempt). A live holder past lease_until is
// hung: hung_since is set, and after lease_grace the item is returned
// anyway; the late done is refused by the fence.
//
// Fail returns the item with not_before = now + backoff·2^(attempts-1),
// capped at backoff_max, or moves it to dead/ at max_attempts. With
// TakeOptions.Steal, Take also takes from other queues marked steal: true,
// by stride scheduling (shares proportional to 1/(1+priority); no
// stealable queue starves). With Wait, Take blocks (watcher.WaitDir) on
// inotify watches of pending/ and done/ (a finished dependency makes items
// claimable), a timer for the next not_before or lease expiry, and a
// recheck every Options.Recheck (2s) for what inotify cannot see (a
// holder's death drops a flock, which is no file event). Out of inotify
// watches, it polls and says so (watch.degraded, a warning).
//
// An item file that does not parse or validate stays where it is: Take
// skips it and reports it with path:line:col (Claim.Notes,
// EmptyError.Diag), as do Stats and Reap; it never blocks the queue. So
// is a path named like an item that is not a document file (a FIFO,
// never opened; a directory; a symlink, even inside the store; an
// unreadable file: docstore.ErrOddFile). A move that fails after writing
// the new copy removes it again, so a failed take leaves no claim. A
// dependency cycle made by hand is named in Take's empty report
// (Diagnostics.Cycles) and by `tavern check` (FindCycles).
//
// Gates (gate.go) are decisions an item waits for: gates/<id>.md names
// the item, a stage (claim: Take skips the item; complete: Complete
// refuses with ErrGated) and a type (human, or timer: "not before").
// `gate: human` in an item stands for the gate whose id is the item's
// own. A human gate passes only with an approval record
// (approvals/<id>.md, written by Approve or Reject before the gate points
// at it); a hand edit to approved without one is ignored (CheckGate
// reports it), and Approve and Reject refuse callers that are agents or
// run inside one (Caller: TAVERN_AGENT / TAVERN_INSTANCE in the
// environment, a spawn wrapper or agent among the parent processes).
// Reject moves the item to dead/; Retry re-opens its rejected gates.
// Resolve completes or cancels (cancelled: true, in dead/) an item nobody
// holds, by hand; Annotate records workflow fields (worktree, branch,
// merged, escalated); AddDependency adds a dependency to a pending item;
// a queue's on_dead names where its dead letters are escalated
// (ParseOnDead; package agents acts on it).
//
// Every state change appends an event to the store's journal (package
// watcher/journal): item.added, item.claimed, item.completed, item.failed,
// item.dead, item.released, item.reaped, item.lease_expired, item.retried,
// item.cancelled, item.annotated, queue.created, gate.added, gate.approved,
// gate.rejected, gate.reopened, gate.refused, gate.dropped. The files are
// the truth; a journal write failure does not undo a state change. The move comes first
// and the event after: a process killed in between leaves a gap (an item
// in done/ without its item.completed), which Findings reports and `tavern
// doctor --fix` fills with the event marked "recovered": true. (Journaling
// the intent first would record completions that never happened.)
// Stats.DeadOwners counts claims whose holder is dead and not yet reaped
// (`queue ls`: NAME(N, D dead)).
//
// # Several machines
//
// With `coordination: etcd` or `git` in tavern.md a Broker arbitrates
// claims through a Coordinator (coord.go; the engines in queues/etcd and
// queues/gitsync register themselves; a named engine that is not linked
// is an error, never a fallback). Under the item lock, Take claims the
// item's key on the engine before writing claimed/ (a key held or
// finished elsewhere is skipped, Diagnostics.Elsewhere; an unreachable
// engine fails the Take), and the engine's fence becomes claim_attempt;
// Complete, Fail, Release and Renew go to the engine first and refuse
// with ErrStale when the claim is no longer theirs; the reaper asks the
// engine, not flocks or lease_until; attempts are counted by the engine.
// An item finished on the engine whose done/ copy never arrives is
// recovered from the engine's record after 3 × sync.every. Local
// coordination takes none of these paths. queues/gitsync's doc says what
// holds across machines.
//
// # Costs
//
// A take+done cycle makes two document writes, each a no-replace create
// plus the retirement of the old copy into .tmp/ as a spare that a later
// create rewrites in place (docstore.Store.Retire): no inode allocated, no
// block freed. A claim or completion is durable before Take or Complete
// returns (four fsyncs per cycle, the directory ones shared by concurrent
// writers); `durability: relaxed` leaves only batched background directory
// fsyncs. PERFORMANCE.md in this directory has the per-cycle accounting
// (system calls, fsyncs, disk requests), five rounds of measurement
// against SQLite and the raw durable rename, and the experiments that did
// not pay.
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
//   - The reaper holds an agent's liveness lock for a moment while it
//     checks it: a spawn wrapper must take its lock with a blocking Lock,
//     not TryLock.
//   - After a crash the retired copy of an item may reappear next to the
//     new one (its directory is not fsynced after the retire). Readers
//     resolve such pairs: the later state wins, a stale pending copy goes
//     to .trash/.
//   - Each Broker that takes holds one inotify instance for its pending
//     index (the per-user limit is often 128) until Close; without one it
//     lists pending/ on every take.
//   - The file name keeps the priority given at Add: editing an item's
//     priority field by hand does not reorder the queue.
//   - Add refuses unknown dependencies and cycles, but a dependency in
//     dead/ (or missing after a hand edit) blocks its dependents until it
//     is retried; Take's EmptyError, Claim.Notes and Stats name it.
package queues
