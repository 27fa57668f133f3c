// Package gitsync carries a Tavern store between machines through a git
// remote, and arbitrates claims by compare-and-swap on refs of that
// remote when no other engine is configured (`coordination: git`).
//
// It lives under queues because its merge knows the item lifecycle
// (pending/, claimed/, done/, dead/ and the claim fence) and takes the
// queue broker's item locks; kind-specific merges of higher packages
// (message chunks) are passed in as Options.Mergers (agents.OpenSyncer).
//
// # Where the state lives
//
// Tavern's state is not on the project's branches: it is the ref
// refs/tavern/state (sync: ref:) of the remote (sync: remote:,
// $TAVERN_SYNC_REMOTE, or the project repository's origin), so code
// history, pull requests and `git log` of the project never show a queue
// item. Each clone keeps a private bare repository in .tavern/.sync/git
// and never touches the project's repository, index or hooks. A project
// that also commits .tavern/ on its branches gets two copies that drift;
// add `.tavern/` to the project's .gitignore when syncing.
//
// # A round (Syncer.Sync, `tavern sync`)
//
//  1. Snapshot the store (every file but engine-private ones: dot names
//     such as .tmp/, .locks/, .trash/, .index, .sync/, .machine and
//     tuples' .taken/, and editor swap files) and commit it on top of the
//     last state this clone reflects, if anything changed.
//  2. Fetch the remote ref. If both sides moved, merge three-way from
//     their merge base, by the rules below, into a merge commit.
//  3. Push it (a plain push: the remote refuses a non-fast-forward, so
//     two machines pushing at once cannot both win; the loser fetches,
//     merges and pushes again, up to 8 times, after a random pause that
//     grows with each try so colliding machines fall out of step). A
//     push the remote declines for any other reason (a hook, a protected
//     ref) is not retried: the round reports it (Report.Offline).
//  4. Write into the store what the merge has and the store lacks. Each
//     file is written (durable write: temp, fsync, rename) under the lock
//     the engine's writers of it take (an item's claim lock for the item
//     and its gates, a gate's document lock too; a channel's lock for its
//     document, chunks and notes; the document lock), and only if it
//     still holds the version the round started from; the files of one
//     lock are written all or nothing, so an item or a channel removed on
//     another machine goes in one step, as a local rm takes it. A
//     file changed here meanwhile is left alone and merged next round
//     against that version, with the others of its lock
//     (Report.Deferred).
//     Every changed document is journaled as `external` with the machine
//     that made the change (Data.machine, Data.via = "sync"), so a
//     watcher on this machine shows it once, naming its origin.
//
// Rounds of one clone exclude each other (lock .locks/sync.lock), and the
// claim fetches of coordination: git take .locks/gitclaims; holding it, a
// round removes the ref lock files a git killed mid-update left in the
// clone's repository (otherwise every later round would fail on them). An
// unreachable remote is not an error for the round: the local commit
// waits, Report.Offline says why, and the next round pushes it.
// A round killed midway (SIGKILL, a crash) is resumed by the next: the
// state (.sync/state.json) names its local commit and its merge, with the
// values the merge dropped, before it journals or pushes them, so the
// next round builds on that merge rather than merging the same two sides
// again, and journals each dropped value that is not in the journal yet:
// once, naming the machine each side came from.
//
// # Merge rules (no conflict markers, no silent loss)
//
//   - New documents have time-ordered unique ids: two machines never
//     create the same path, except by name (agents, queues, channels).
//   - The journal is per writer: this machine's events/<day>.jsonl is
//     committed as events/<machine>/<day>.jsonl and every other machine's
//     arrives under events/<that machine>/. One writer per file: never a
//     conflict. One clone per machine name keeps it so: a clone, a store
//     init made joining on its first round, or a rename, under a name the
//     remote has a journal of (that the clone never synced as) is refused
//     (ErrMachineTaken) unless taken over (CloneOptions.TakeOver,
//     Syncer.AllowTakeOver). A store init made that joins (adopts) the
//     remote's keeps its journal so far in .sync/adopted/: no other
//     machine knew that store.
//   - Message chunks both machines appended to merge as the union of
//     their messages in id order (messages.MergeChunk); a reader's
//     bookmark changed on both as the furthest read message of each
//     channel (messages.MergeBookmark).
//   - An item (its copies in pending/, claimed/, done/, dead/ taken
//     together) changed on both sides keeps one copy: the later claim
//     (claim_attempt, the fence), then the later state for the same
//     claim (done > dead > pending > claimed), then the later updated.
//     With etcd or git coordination the fences are totally ordered, so
//     this is the truth; without, both machines may have run the item and
//     the other copy is journaled. A copy of the same claim and state
//     that holds nothing the kept one does not (one a machine recovered
//     from the engine's record before the finisher's copy arrived) is
//     the same outcome, and is not journaled.
//   - Any other document changed on both sides merges field by field: a
//     field changed on one side takes that change; a field changed on
//     both to different values takes the last writer's (the later
//     `updated`; on a tie, the greater machine name, so every machine
//     decides alike); `updated` takes the later. A map field (a plan's
//     tasks:) changed on both merges key by key by the same rule. Each
//     field (each key of a merged map) keeps the lines of the side it
//     comes from, byte for byte (docstore.Doc.SetFieldText): a value is
//     rendered anew only where those lines cannot be moved as they are
//     (a flow mapping, anchors, different indentation). The
//     body merges line by line (git merge-file); lines both sides added
//     at one place (boxes appended to one plan) are all kept, ours
//     first; other overlapping edits take the last writer's hunks. A document deleted on one side and edited on the other is
//     kept. A side that does not parse (a broken hand edit) makes the
//     whole document the last writer's.
//   - Every value a rule drops is journaled as sync.conflict (path,
//     field, kept and lost values, both machines, the rule, the merge
//     commit that dropped it) on the machine
//     that merged, whose journal reaches every clone with its next
//     round: `tavern log --machines --type sync.conflict` on any clone
//     (journal.ReadOthers).
//   - Other files changed on both sides keep the lines of both.
//
// # coordination: git
//
// RefEngine keeps one ref per key in the remote,
// refs/tavern/claims/<key>, pointing at a chain of commits whose messages
// are the key's claim records (state, fence, attempts, holder, machine,
// lease_until, result). Every change is a push with
// --force-with-lease=<ref>:<the record it read> ("" = must not exist): the
// remote accepts one of racing pushes, the others are rejected and read
// again. The fence is the record's counter. Records are read by fetching
// a queue's claim refs at once (at most every second per process), so a
// scan decides most candidates without a round trip. A Live claim is
// renewed by its process every sync: claim_ttl / 3 (default 30s / 3). A
// claim is a fetch and a push (two round trips, ~0.3 s to a git daemon on
// loopback); a completion a push.
//
// # What is guaranteed across machines, and what is not
//
//   - With coordination etcd or git: an item, token slot or reservation
//     is held by at most one claim at a time, and a completion, failure,
//     release or renewal by any other claim is refused (the fence). Every
//     item is finished at most once; each finished item's done/ copy
//     reaches every clone (written by the finishing machine, or recovered
//     from the engine's record by any clone 3 × sync.every after the
//     finish if the finisher died before syncing it).
//   - Without coordination (local, the default), claims are per machine:
//     two machines may take the same item; the sync keeps one record and
//     journals the other.
//   - Partitions: a machine cut from its engine takes no new work (a
//     take fails after etcd's op_timeout, or the git remote's error,
//     naming the engine: never a claim without arbitration). Its claims
//     come back after their lease (etcd lease_ttl; git claim_ttl, or the
//     queue's lease for one-shot claims). Work a partitioned holder
//     finishes after that is refused, not committed: at-most-once
//     commits, at-least-once execution across a partition, as with any
//     lease. Cut from the git remote only (etcd still reachable), a
//     machine keeps working and its documents wait in .sync/ for the next
//     push; the others see its completions through the engine's records.
//     Documents edited on both sides of a partition merge by the rules
//     above when it heals.
//   - Clock skew: etcd leases and fences use etcd's clock and revisions
//     only. The git engine's leases compare lease_until, written by the
//     holder's clock, with the reader's clock: keep machines in NTP sync
//     or a skewed machine may take a claim early (its fence still orders
//     completions) or late. `updated` decides the last writer of a field:
//     a skewed clock wins or loses those ties wrongly (and the loser is
//     journaled, never lost).
//   - A remote that rejects pushes (permissions, protected refs, a hook,
//     a full disk): rounds fail to push (Report.Offline with the remote's
//     reason, `tavern sync` exits 1), other machines see none of this
//     machine's changes, and local changes stay committed in .sync/ until
//     a push succeeds, then go out whole. With coordination: git no claim
//     can be made at all: a take fails with queues.ErrUnavailable and the
//     remote's reason (it never passes items over as held elsewhere).
//     Pushes that lose races to other machines are retried (8 tries a
//     round); a round that loses them all says so and the next retries.
//   - Latency: another machine sees a change after this machine's round
//     and then its own: the first round it starts after the push (within
//     sync.every, 10s by default; a round also follows local changes
//     within a quarter interval) writes it, journals it as `external`
//     naming the machine, and projections and `tavern watch` show it.
//     There is no push notification: the wait for the other machine's
//     next round is the bulk of it. `make bench` measures both rounds
//     back to back (BenchmarkSyncLatency) and, with background sync,
//     the edit to the other machine's projection and watch stream
//     (BenchmarkSyncToWatch).
//   - Per-item settings a machine decides alone travel with the sync, not
//     the engine: a failed item's backoff (not_before) holds on the
//     machine that failed it, while another machine whose copy is not
//     synced yet may claim it again at once (attempts are still counted
//     by the engine, so max_attempts holds).
//   - Agent documents (pid, host, state) are shared like any document.
//     A machine judges the liveness of the agents whose host is its own
//     hostname only (package agents): two clones on one host (a test, two
//     checkouts) would judge each other's agents, so give such clones
//     separate hosts or run one supervisor.
package gitsync
