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
// Take walks pending/ in name order and, for each candidate, TryLocks the
// item lock (ItemLockKey, items/<q>/<stripe>: a function of the item id
// only, whatever its state; striped 256 ways so lock files are reused
// instead of created per item; a busy lock means another taker is on it
// or on a neighbour, so it moves on), reads
// the file, skips it if not_before is in the future or a dependency is not
// in done/, and otherwise writes the claimed copy claimed/<id>.md (a
// no-replace create: O_TMPFILE, fsync, link, fsync dir) with claimed_by,
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
// # Costs and performance notes
//
// A take+done cycle makes two document writes, each a no-replace create
// plus the retirement of the old copy. The old copy is not unlinked: its
// file is renamed into .tmp/ as a spare (docstore.Store.Retire), and the
// next create rewrites a spare in place (pwrite from offset 0, ftruncate
// to the new length, fsync) and renames it into place with
// RENAME_NOREPLACE, then fsyncs the target directory. So no block is ever
// freed in the cycle and no inode allocated: on this disk (ext4, no
// journal, mounted `discard`) every freed block costs a synchronous
// discard of ~0.2 ms, and that was most of the cycle. A spare is reused
// only once an fsync of the directory it left has finished after it left
// (done in the background once 16 spares wait), so a crash can never bring the
// old name back onto rewritten content. When no spare is ready a create
// is an O_TMPFILE in the target directory, fsync, link(2) into place.
// The old copy's directory is otherwise not fsynced after the retire:
// after a crash the old copy may come back next to the new one, and every
// reader resolves such pairs (a pending copy whose done/ copy exists, or
// whose claimed/ copy is newer by `updated`, is moved to .trash/; a
// claimed copy whose done/ or dead/ copy exists is stale for reapers and
// fenced calls; lookups prefer the later state). A claim or completion is
// durable before Take or Complete returns. With `durability: relaxed` in
// tavern.md no file is fsynced (still atomic); the only fsyncs are the
// batched background directory fsyncs that make spares reusable (about
// 0.25 per cycle). Spares belong to their process (at most 256); ones left by a
// dead process are stale temp files, removed by a later Open after 15
// minutes. Lock files are reused (256 item-lock stripes per queue, one
// holder lock per process).
//
// Per cycle, counted with strace on BenchmarkQueueTakeDone (1000 cycles):
//
//	                          before (main 9d22aae)       round 1
//	fsync (durable, 1 worker) 4                           4
//	fsync (durable, 8)        4                           3.6 under strace (directory fsyncs shared; 2 + 2/k at best)
//	rename                    2 (.tmp/ -> claimed, done)  0 (2 linkat)
//	rename over existing      0                           0
//	unlink                    2 (pending, claimed copy)   2
//	syscalls, all             ~165 (1 worker), ~205 (8)   ~100, ~113
//	YAML decodes              6                           2 (Doc.Edit patches the tree)
//	ReadDir of pending/       1 per take (whole dir)      0 (inotify-fed index)
//
// What was slow, in order (profiles of BenchmarkQueueTakeDone*):
//
//   - Every take listed pending/ (getdents, sort, name check of every
//     entry): O(queue length) per take, O(n²) to drain a queue; with 8
//     workers all racing for the same head item and losing on its lock.
//     The Broker now keeps an inotify-fed index of each pending/ it takes
//     from (pending.go; events are queued inside the syscall that made the
//     change, so draining them before choosing sees every finished change,
//     like a ReadDir would; overflow, an unavailable inotify or a Take that
//     finds nothing relist the directory) and an in-flight set so its own
//     takers spread over the queue instead of racing for the head.
//     Each Broker that takes holds one inotify instance (the per-user
//     limit is often 128) until Close; without one it lists as before.
//   - Renames from .tmp/ across directories waited on the filesystem-wide
//     rename lock behind other processes' replacing renames (their
//     synchronous discards): p50 30 µs, but stalls up to 2.8 s, which is
//     why relaxed ran slower than durable on a loaded machine.
//   - CPU: YAML. Set/SetMany ran the YAML encoder per field; plain scalars
//     now skip it (docstore fastNode, checked against the encoder), a
//     state change sets and deletes fields with one re-parse, or none
//     when the tree can be patched (Doc.Edit), and Complete through a Claim neither searches every queue for the
//     id nor re-reads the item it just read under the lock.
//
// Same-run medians of 3 (2s each; cycles/s; the baselines ran in the
// same loop). The 2 vCPUs were shared with other work (load average
// 4-10) and rates moved 3-5x within minutes, so only the ratios of one
// run mean much. Run A (before Doc.Edit patched the tree), then run B:
//
//	                     before A/B   now A/B     baseline A/B
//	durable, 1 worker     231/266     601/440     SQLite FULL 3324/2988, raw rename 4179/4747
//	durable, 8 workers    229/522     891/957     SQLite FULL 2665/3627, raw rename 10960/15583
//	relaxed, 1 worker     336/307    1049/634     SQLite NORMAL 6923/9846
//	relaxed, 8 workers    398/460    1468/1529    SQLite NORMAL 5546/7782
//
// At 8 workers, durable vs SQLite FULL: 0.09x/0.14x before, 0.33x/0.26x
// now (goal 1.0x); durable vs the raw durable rename rate: 0.02x/0.03x
// before, 0.08x/0.06x now (goal 0.33x); relaxed vs SQLite NORMAL:
// 0.07x/0.06x before, 0.26x/0.20x now (goal 1.0x). The goals are not met.
//
// Round 2 (branch qperf2). A fresh profile showed the cycle's syscalls
// dominated by the two O_TMPFILE creates and the two unlinks (each unlink
// frees a block: a synchronous discard on this disk), and the CPU by YAML.
// Changes: superseded copies are retired as spares and rewritten by the
// next create (above): no inode allocated, no block freed; Doc.Edit sets
// and deletes fields in one line edit and one re-parse (Complete re-parsed
// twice); Claim.Complete reuses the document parsed at claim time when
// the claimed file is byte for byte what the claim wrote (one read, no
// parse; a hand edit or another claim since makes it parse the file as
// before); string values skip the YAML encoder when plain-safe.
//
// Per cycle now (strace -c -f, 2001 cycles minus 1, less the setup Adds'
// linkat and the temp dir cleanup's unlink per item):
//
//	                          round 1      round 2
//	fsync (durable, 1 worker) 4            4.0 (2 file + 2 directory + the spare batch)
//	fsync (durable, 8)        3.6          3.5 (directory fsyncs shared)
//	fsync (relaxed)           0            0.1 (spare batch only)
//	rename (no-replace)       0            4 (2 retires into .tmp/, 2 spares into place)
//	linkat (O_TMPFILE)        2            0 (only while no spare is ready)
//	unlink                    2            0
//	blocks freed (discards)   2            0 (sizes stay within the spare's block)
//	pwrite+ftruncate          0            2+2
//	YAML parses               5            3 (round 1: Get + edit at claim; Get,
//	                                       set, delete at Complete; now the
//	                                       claim's 2 and Complete's edit)
//
// Same-run figures (cycles/s, 2s each, one run per side, back to back:
// pair 1 ran main 0d03028 first, pair 2 this branch first; load average
// 2-4; SQLite and the raw rename ran in each run):
//
//	                     pair 1: main / qperf2    pair 2: qperf2 / main
//	durable, 1 worker     726 / 1137               1101 / 637
//	durable, 8 workers   1236 / 1676               1898 / 1207
//	relaxed, 1 worker    1203 / 1710               2426 / 1193
//	relaxed, 8 workers   1822 / 2344               3079 / 1802
//	SQLite FULL, 8       3583 / 4177               3615 / 3698
//	SQLite NORMAL, 8     7825 / 7260               7691 / 9651
//	raw rename, 8       15105 / 14954             15074 / 14613
//
// At 8 workers, durable vs SQLite FULL: 0.34x/0.33x on main, 0.40x/0.53x
// now (goal 1.0x); durable vs the raw durable rename rate: 0.08x/0.08x on
// main, 0.11x/0.13x now (goal 0.33x); relaxed vs SQLite NORMAL:
// 0.23x/0.19x on main, 0.32x/0.40x now (goal 1.0x).
//
// Round 3 (branch qperf3), CPU per cycle. The profile (relaxed, 8
// workers) put 42% of the workers' CPU in Doc.Edit: every timestamp
// (lease_until, started, updated, completed) fell off the encoder-free
// path because of its colons, so each edit ran yaml.Encoder per
// timestamp, then re-parsed the edited text and compared Fields before
// and after. strace showed every os.Open/OpenFile of a regular file
// costing 4 fcntl and a failing epoll_ctl (Go's netpoller probe) on top
// of the open, and every lock acquisition a mkdir check, open, flock,
// fstat, stat and close. Changes (all in docstore):
//   - RFC 3339 timestamps are written without the encoder.
//   - Single-line edits of a frontmatter without comments or anchors
//     patch the node tree (replaced scalars keep line and column, deleted
//     entries' later nodes move up, added keys go on new last lines,
//     shifted subtrees are copied, never changed in place) instead of
//     re-parsing; only values whose plain text reads back as the same
//     node qualify (plain-safe strings, canonical ints, booleans,
//     timestamps). A test compares the patched tree with a parse of the
//     text after every step of edit chains. The claim's Get remains the
//     one YAML parse per cycle.
//   - Documents are read (ReadFile, ReadFileAbs) and spares rewritten
//     with plain syscalls; ReadFile opens O_NONBLOCK and checks the type
//     on the descriptor instead of a stat before the open.
//   - A Store keeps one open descriptor per lock file (up to 1024): a
//     lock is a slot mutex (goroutines of this process) plus flock on the
//     shared descriptor (other processes, other Stores, uncached
//     acquisitions) plus the inode re-check stat; Remove closes the
//     descriptor, and an acquisition that finds the path on another inode
//     reopens it. LockContext with a cancellable context stays uncached.
//
// Whole-run syscalls (strace -c -f, relaxed, 8 workers, 2000 items,
// setup Adds included): fcntl 52597 -> 3092, epoll_ctl 12630 -> 254,
// openat 14726 -> 10618, close 14719 -> 10362, read 17621 -> 12403,
// fstat 8042 -> 4283, newfstatat 72919 -> 66648; all syscalls 282k ->
// 182k. Workers' CPU per cycle in the profile: about 0.84 ms -> 0.37 ms.
//
// Same-run figures (cycles/s, 2s each, one run per side back to back:
// pair 1 main ea463a1 first (load average 8 falling to 5), pair 2 this
// branch first (load 3 falling to 2)):
//
//	                     pair 1: main / qperf3    pair 2: qperf3 / main
//	durable, 1 worker     732 / 1305               1353 / 1010
//	durable, 8 workers   1137 / 2472               2369 / 1932
//	relaxed, 1 worker    1712 / 3359               3539 / 1969
//	relaxed, 8 workers   1643 / 4853               4109 / 2563
//	SQLite FULL, 8       2245 / 3650               4279 / 3357
//	SQLite NORMAL, 8     9661 / 8072               8405 / 9657
//	raw rename, 8       14739 / 14286             14953 / 14001
//
// At 8 workers, durable vs SQLite FULL: 0.51x/0.58x on main, 0.68x/0.55x
// now (goal 1.0x); durable vs the raw durable rename: 0.08x/0.14x on
// main, 0.17x/0.16x now (goal 0.33x); relaxed vs SQLite NORMAL:
// 0.17x/0.27x on main, 0.60x/0.49x now (goal 1.0x).
//
// Round 4, path walks, parses and stalls. A profile of round 3's code
// (relaxed, 8 workers) put a third of the workers' CPU in system calls,
// most of it the kernel walking the store's absolute path (ten or more
// components in the benchmark) for every read, create, rename and stat,
// plus docstore's lstat of each component before each of them; YAML
// parsing was next. The block profile showed the workers waiting on each
// other: on the journal's mutex (held across flock, write, unlock) and on
// the spare directory fsync that whoever found no spare forced on all.
// Changes:
//   - The Broker keeps queues/<q>/{pending,claimed,done,dead} open as
//     docstore.Dir handles (move.go): every file operation of the cycle
//     names one component relative to a descriptor. A handle is checked
//     against its path at most every 100ms and after any failure, and a
//     queue's handles are dropped when queue.md changes; Queue's cache
//     hit is one short lstat of queue.md through the queue directory.
//     Spares are named relative to one .tmp/ descriptor.
//   - Frontmatter Tavern wrote is parsed by docstore's scanner instead of
//     yaml.v3 (same node tree; 47 -> 8 µs for a claimed item).
//   - Journal appends of concurrent callers share one flock and one
//     write, the event is encoded without reflection, ids come from a
//     local UUIDv7 source (watcher).
//   - Spare directories are fsynced by a background goroutine; a create
//     never waits for it.
//   - fdatasync for spare and O_TMPFILE data; a completion whose claimed
//     file is byte for byte the claim's skips the done/dead lookups;
//     schema.Kind.Match stopped splitting the path and allocating per
//     kind tried.
//
// Per cycle now (strace, relaxed, 1 worker, steady state): 42 system
// calls: 4 renameat2 between directory descriptors, 5 fstatat of one
// component (queue.md, the claim's done/ and dead/ lookups, two lock
// re-checks), 4 openat (2 reads, 2 spare rewrites), 2 pwrite and 2
// ftruncate, 8 flock (item lock twice, journal twice), 2 journal writes,
// 2 inotify reads, closes; plus about 0.25 background directory fsyncs.
// Durable adds 2 fdatasync and the claimed/ and done/ directory fsyncs
// (shared between concurrent writers).
//
// One `make bench` (3 runs of 1s each, medians; load average 2-3 from
// the session's other work), cycles/s and CPU per cycle (user+system):
//
//	                     round 4      baseline (same run)
//	durable, 1 worker     1343        SQLite FULL 3273 (0.41x), raw durable rename 5198 (0.26x)
//	durable, 8 workers    2491        SQLite FULL 2793 (0.89x), raw durable rename 12766 (0.20x)
//	relaxed, 8 workers    5123        SQLite NORMAL 5613 (0.91x)
//	CPU, durable, 8       529 µs      SQLite FULL 225 µs (2.35x)
//	CPU, relaxed, 8       336 µs      SQLite NORMAL 186 µs (1.80x)
//
// A second `make bench` on the final code (load average 4.6 falling to
// 1.4): durable 8 workers 2560 against SQLite FULL 2558 (1.00x) and the
// raw durable rename 12162 (0.21x); relaxed 5590 against SQLite NORMAL
// 6235 (0.90x); CPU per cycle 509 and 306 µs against 246 and 175.
//
// Round 3's code in the same session, interleaved runs with this one:
// relaxed 8 workers 290-430 µs of CPU per cycle against 200-340 now.
// The goals (1.0x SQLite FULL and 0.33x the raw durable rename at 8
// workers, 1.0x SQLite NORMAL relaxed): the first is at the line (0.89x
// and 1.00x in two runs), the last close (0.91x, 0.90x), the middle one
// far (0.20x, 0.21x).
//
// What remains is mostly the kernel. All four renames of a cycle cross
// directories (.tmp/ and a state directory), so each takes the
// filesystem-wide rename mutex (s_vfs_rename_mutex) and both directories'
// locks: with 8 workers on 2 CPUs a rename costs about 17 µs of CPU
// instead of 8, the kernel spinning on contended locks. A protocol with
// one cross-directory rename per state change would halve that: rename
// pending/X to claimed/X (the arbiter, as DESIGN.md words the claim),
// then RENAME_EXCHANGE the new content in from a spare kept in the same
// directory, so each state directory's spare pool refills itself. It
// needs dot-named spares inside the state directories (hidden from every
// listing, the watcher and check) and crash handling for a claimed copy
// without claim fields; not done. SQLite spends less CPU per cycle but
// runs one writer at a time; Tavern's workers run on both CPUs, which is
// why cycles/s come closer than CPU does. Durable mode adds about 190 µs
// of CPU per cycle over relaxed (fsync work in the kernel and the Go
// scheduler handing off threads blocked in fsync).
//
// Round 5, allocations, and what the disk is asked to do. Profiles of
// round 4's code (relaxed, 8 workers) put the user-space half of a cycle
// mostly in allocation and the garbage collector (about 35 KB and 200
// objects per cycle), the single-edit path of Doc.Edit, time.Parse and
// capture maps. Changes:
//   - Doc.Edit's single-edit path keeps its bookkeeping in slices, builds
//     the new frontmatter in one buffer and takes the value nodes it made
//     into the patched tree instead of copying them; nodes moved by a
//     deleted line are copied into one slab.
//   - schema matches paths without capture maps (Captures, NameOfPath),
//     finds duplicate keys without a map, and reads the engine's own
//     timestamps without time.Parse (checked against it by a table test
//     and FuzzParseStamp).
//   - The completion compares the claimed file with the claim's document
//     without rendering it (Doc.EqualBytes); spare rewrites fstat instead
//     of always truncating; cached locks re-check their file's link count
//     with fstat instead of a stat of its absolute path; the directory
//     syncer lookup stopped allocating a syncer per call.
//
// A cycle now allocates about 21 KB in about 140 objects. In one process
// on tmpfs (no disk, so the CPU figure is the code's), relaxed take+done
// at 8 workers went from 290 to 196 µs of CPU per cycle (medians of 5-7
// interleaved runs of each build).
//
// Two experiments did not pay and were not kept:
//   - Claims tied to a live process (HoldLock, AgentLock) need not be
//     durable: a crash ends their holder, and a reaper would return the
//     item anyway. A docstore Dir.Move that returned before the claimed/
//     directory fsync (run in the background, and ordered before any
//     later fsync of pending/ by this process so the item is never
//     durably in neither directory) took one of the four flush waits out
//     of a durable cycle. Alternating 1,000-cycle rounds of both in one
//     process, on the disk: faster in 4 of 8 rounds (5 of 8 without the
//     ordering), within the noise. The fsyncs of pending/ that must then
//     wait for claimed/ stall the takers about as much as they gained.
//   - Reading the pending index's inotify queue at most every 200 µs
//     instead of in every Take (the index's mutex is the one lock the
//     workers of a Broker wait on): no difference on tmpfs or on disk.
//
// What a durable cycle asks of the disk (block-layer tracepoints, 8
// workers, 4,000 cycles): about 8 write requests from the workers' own
// fsyncs and 3.3 cache flushes per cycle. Each state change is a spare
// rewrite and its fdatasync (the data block, the inode for the new size,
// a flush), the rename, and the fsync of the new directory (its block,
// its inode, a flush; shared by concurrent writers). The raw durable
// rename baseline, measured the same way: 2.9 write requests and 1.1
// flushes per operation (it writes no data, and its 8 workers' flushes
// merge in the block layer). Every request is a VM exit on this machine:
// durable mode costs about 150 µs of CPU per cycle more than relaxed,
// and a cycle waits for four flushes in sequence. A take+done is two
// content changes, each of which must reach the disk before its rename
// (or a crash leaves a name on stale content), so by request count alone
// it is held to about 4.0/11.3 = 0.35x the baseline's rate, before any CPU
// of its own; measured: 0.19-0.24x.
//
// The round-4 note above blamed the filesystem-wide rename mutex for the
// cost of renames. perf says otherwise: mutex spinning is about 2% of a
// relaxed cycle's CPU, while ext4_rename's own work (looking up and
// inserting entries in the large pending/ and done/ directories) is
// about 12%. A protocol of same-directory exchanges would keep those
// lookups, so it was not built.
//
// Two `make bench` runs on round 5's code, ratios at 8 workers (goal):
//
//	                            run 1 (slow disk)   run 2 (fast disk)
//	durable vs SQLite FULL      0.97x (2700/2785)   1.11x (3465/3128)   (>= 1.0)
//	durable vs raw rename       0.19x (13868)       0.24x (14614)       (>= 0.33)
//	relaxed vs SQLite NORMAL    1.17x (6971/5951)   0.86x (8143/9486)   (>= 1.0)
//	CPU per cycle, durable      467 µs (2.14x)      352 µs (1.71x)
//	CPU per cycle, relaxed      241 µs (1.36x)      199 µs (1.85x)
//
// SQLite's NORMAL figure moved from 5.9k to 9.5k cycles/s between the
// two runs and ours from 7.0k to 8.1k: the relaxed goal is met in one
// run and missed in the other. `make bench` now repeats the suite in
// rounds (each benchmark once per round) so that each figure and its
// baseline run seconds apart, not minutes. Two such runs, the second on
// the final code (two system calls fewer per cycle: short reads end a
// read, a drain that left room ends the drain): durable 1.19x and 1.04x
// SQLite FULL, 0.19x and 0.21x the raw rename, relaxed 0.76x and 1.02x
// SQLite NORMAL (per round within the last run: 1.43x, 0.92x, 0.82x).
//
// # Several machines
//
// With `coordination: etcd` or `coordination: git` in tavern.md, a
// Broker arbitrates claims through a Coordinator (coord.go; engines in
// queues/etcd and queues/gitsync register themselves, and an engine that
// is named but not linked is an error, never a fallback to local
// claims). The files still move through pending/, claimed/ and done/ on
// each machine; the engine is consulted under the item lock at each
// step: Take claims the item's key before writing claimed/ (a key held
// or finished elsewhere is skipped and counted as Diagnostics.Elsewhere;
// an unreachable engine fails the Take), and its fence (etcd: the claim
// key's revision) becomes claim_attempt, with claim_machine and
// claim_lease; Complete, Fail, Release and Renew end or extend the
// engine's claim first and refuse with ErrStale when it is no longer
// theirs; the reaper returns a claimed copy whose engine claim is gone
// (the holder's lease ran out) instead of looking at flocks and
// lease_until, which say nothing about other machines; Retry reopens the
// key. An item the engine says is finished by a machine whose done/ copy
// never arrived is recovered from the engine's record after 3 ×
// sync.every. Attempts are counted by the engine across machines. Local
// coordination (the default) takes none of these paths. The documents
// travel with the git sync (queues/gitsync); its package doc says what is
// guaranteed across machines.
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
