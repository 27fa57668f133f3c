// Package agents runs agents: their documents and state machine, the
// spawn wrapper that runs any command as an agent, pools of drones,
// commitments and the verifier, questions, the wake/sleep/context
// briefings, and backup. Messaging is package agents/messages; memory and
// knowledge are package agents/recall.
//
// # Basics
//
// An Agent is agents/<name>.md (names: [a-z0-9._-], schema.ValidAgentName,
// so "@user" and "name:stderr" can never be agents). A Manager
// (NewManager) is the entry point; every state change it makes is
// journaled ("agent.state", with from, to, by, reason). The body has three
// sections found with a markdown parser, so a heading inside a code block
// is not one: "## Assignment", "## Notes" (verification failures are
// appended here) and "## Recent Messages" (the last lines the spawn
// wrapper captured; the full output is in the @<name> channel).
//
// The transition table (Transitions):
//
//	idle      -> working (spawned)            | failed
//	working   -> waiting (asked a question)   | verifying (exit 0, has commitments)
//	          |  done (exit 0, no commitments) | idle (interrupted: item released) | failed
//	waiting   -> working (answered)           | idle (interrupted) | failed
//	verifying -> done (all commitments passed) | working (a verification failed) | failed (too many)
//	done      -> idle (respawn)               | failed
//	failed    -> idle (respawn)
//
// Only the verifier gets an agent with commitments to done (ErrUnverified
// otherwise). The document keeps state (what a person sees and edits) and
// applied_state (what the engine last applied). A write through the store
// that changes state (`tavern set`, `tavern edit`) is a transition:
// applied_state follows and it is journaled as agent.state. A legal edit
// of the file behind the store's back is journaled "by": "hand" at the
// next engine touch; an illegal one is reported (ErrIllegalEdit; `tavern
// check` and `tavern agent audit` exit 5) and never acted on until
// someone restores it or forces a transition.
//
// Constitutions are constitutions/<role>.md. An agent records the sha256
// of its role's file; spawning under a changed file fails with
// ErrConstitutionChanged unless the new one is accepted (journaled).
// Unnamed agents get a themed name ("amber-tankard"), created exclusively,
// so concurrent creators never share one.
//
// RunPool keeps Min..Max drones (`tavern spawn --json` processes of the
// same binary, each claiming one item) busy on some queues, wakes on drone
// exits and on changes under queues/, and writes its metrics to
// pools/<name>.md. On empty queues it keeps Min drones waiting (idle),
// runs none until items appear (hibernate), or returns (terminate).
//
// A Commitment (commitments/<agent>/<id>.md) is a description and a shell
// assertion. AddCommitment journals the sha256 of the assertion
// (commitment.added); Verify runs each assertion that still has it with
// `sh -c` under its timeout and records the result (a changed one is
// never run: TamperedError); an agent cannot verify itself
// (ErrSelfVerify). RunVerifier
// watches for agents entering verifying and moves them to done, back to
// working with the failures in their Notes, or to failed after
// MaxAttempts. Questions (questions/<id>.md) go to the asker's parent,
// "@user" or an agent; Ask moves the asker to waiting, Answer back to
// working, and Bubble passes questions open longer than bubble_after
// (tavern.md, default 10m) up the parent chain to "@user"; the verifier
// daemon bubbles on each pass.
//
// InstallRules puts the state machine and the commitment rules on a
// docstore.Store (NewManager does, for a person; the CLI does, for
// TAVERN_AGENT), so every write obeys them, raw writes as Transition: a
// state that cannot follow the applied one, done with unpassed
// commitments, an agent writing its own commitment's assertion or result
// or removing its own commitment (ErrOwnCommitment), an agent name that
// is not its file name or an id another agent has (*IdentityError) fail
// with a *docstore.RefusedError. It also installs the checks of
// `tavern check` (illegal hand edits, tampered assertions, copied agent
// files).
//
// Wake returns a Briefing (every core memory — of the sleep summaries
// only the newest 3, so summaries never push the agent's own core
// memories out — recent memories, unread counts, recent decisions,
// claimed items, open questions), short on purpose: it is pasted into an
// LLM prompt. It counts the session in spawns unless a process holds the
// agent's liveness lock (the spawn wrapper, or a hooked session's keeper,
// counted it already). Sleep stores a summary memory. Context searches the
// journal, memory, knowledge, messages, notes, questions and queue items
// for a query, matching words as recall's index does (stem or prefix),
// and renders no empty section. Backup copies .tavern/ to
// DEST/tavern-<time> (renamed into place when complete); Restore puts one
// back, keeping the replaced store.
//
// # The spawn wrapper
//
// Spawn runs any command as an agent, in steps (spawn.go: ensure the
// agent, lock, prepare, claim, start the child, supervise, exit status,
// settle; a failing step calls the one abort sequence). It takes the
// agent's lock (schema.AgentLockKey; held: ErrBusy) and starts an
// instance: a new id (docstore.NewID) recorded in the agent's instance
// field and given to the child as TAVERN_INSTANCE. With queues it claims
// one item for the instance. The agent goes to working (spawns+1, host,
// instance) before the child starts, so the child may ask a question at
// once; pid is recorded right after. The child runs in the project
// directory, in its own process group, with the item body on stdin and
// TAVERN_DIR, TAVERN_AGENT, TAVERN_INSTANCE, TAVERN_PARENT, TAVERN_ITEM,
// TAVERN_ITEM_PATH, TAVERN_QUEUE, TAVERN_ATTEMPT, TAVERN_RESULT,
// TAVERN_ROLE, TAVERN_CONSTITUTION and TAVERN_MODEL. The lease is renewed
// every third of the queue's lease. Output lines are batched (every 200
// ms or 256 lines) into messages.SendMessages on the @<name> channel,
// sender <name> or <name>:stderr. On exit: 0 completes the item (result:
// the TAVERN_RESULT file, else the last 5 stdout lines) and moves the
// agent to verifying (it has commitments) or done; non-zero fails the item
// with the exit status ("killed by SIGKILL") and the stderr tail and moves
// the agent to failed; a forwarded signal, or one that comes while the
// wrapper waits at the item's gate after its child succeeded, releases
// the item (no attempt spent) and moves the agent to idle. A forwarded
// signal is followed by SIGCONT (a stopped child), and the child's group
// is SIGKILLed if it has not exited KillGrace after the first. A child
// that settled its own item is taken at its word (done: ownDone, and
// doneByRun makes the run done whatever its exit status or a forwarded
// signal; failed or released: spawnRun.ownEnd). pid and host are cleared
// before the locks are released.
//
// A spawn is refused — the agent busy (its lock held), in verifying,
// hand-edited into an illegal state, or under a changed constitution not
// accepted — before anything changes (no state moves, no item is
// claimed), and the refusal is journaled as "agent.spawn_refused".
//
// Around that run (hooks.go): SpawnHooks.Prepare runs once the item is
// claimed (a workspace: another working directory, more environment;
// AlreadyDone completes the item without a child), SpawnHooks.Finish
// after a child that exited 0 (the merge queue: an error fails the item
// with its text), SpawnHooks.Exit once the item is settled (cleanup,
// plans). Before Finish, an item with a complete-stage gate (package
// queues) holds the wrapper: the agent goes to waiting until a person
// approves (then on) or rejects (the item is dead, the run failed); the
// lease is renewed meanwhile. Before it waits, the item records work_done
// (queues.Claim.MarkWorkDone): a wait that ends undecided gives the item
// back with its work done, and a spawn that claims such an item starts no
// child, waits at the gate and finishes (spawnRun.resume); a draining
// pool interrupts its drones that wait so (leaveGates), since they run
// nothing. Every run whose command starts appends a usage record
// (usage/<agent>/<id>.md: wall and CPU time, exit status, and the tokens
// and cost the child reported in Claude Code, Codex or Gemini CLI JSON
// output; see usage.go and ParseUsage), and a failed run whose item went
// to dead/ is escalated as its queue's on_dead says (EscalateDead: a
// question to the holder's parent or the user, or a channel message,
// once per item). Pools take an Admit hook (a spent budget pauses them;
// package agents/usage) and an OnTick hook. Their drones, admitted by
// the pool, skip the spawn's own budget check only by proving they are
// the live run's children with its token (CheckPoolAdmission).
//
// # Supervision
//
// The guarantee: an item claimed through the spawn wrapper is never handed
// out again while a process of its execution can still be running, and a
// dead instance's late actions are refused.
//
//   - The instance's liveness lock (schema.InstanceLockKey) is taken on a
//     descriptor the child inherits as descriptor 3 (docstore.
//     TryLockInheritable): the flock stays held while the wrapper or any
//     process of the child's tree that keeps it lives, and the item's
//     claim (liveness_lock: instances/<id>) with it.
//   - The child is in its own process group and gets SIGKILL when the
//     wrapper dies (Linux Pdeathsig; it is started from a goroutine locked
//     to its OS thread until reaped: the signal follows the forking
//     thread). When the child exits, the wrapper kills the rest of its
//     group and any other holder of the instance's lock before it settles
//     the item (the zombie keeps the group id from being reused).
//   - A dead wrapper's tree that outlived it is killed by whoever finds
//     the wrapper dead (agent lock free): the next spawn of the agent,
//     ReapAgents (run by pools, the verifier, `tavern watch`, `tavern
//     reap`), `tavern doctor --fix`. The tree's processes are found by the
//     locked descriptor they hold (/proc: docstore.LockHolders), SIGKILLed
//     with their groups, and waited for; the item then goes back.
//   - A late done/fail/renew/release of another instance is refused
//     (queues.ErrStale; tokens and reservations: tuples.ErrFenced).
//   - A hung instance (alive, but its lease and lease_grace ran out: a
//     stopped wrapper) has its tree SIGKILLed by the queue reaper before
//     its item goes back (docstore.KillLockHolders), so the stopped
//     wrapper's running child never overlaps the next execution.
//   - Long-running processes reap every second (RunReaper), since a
//     holder's death drops a flock, which is no file event. Pools fill
//     every free slot (busy drones do not count against claimable items)
//     and skip drone names a live wrapper of another process holds. A
//     spawned agent whose verification fails after its child exited goes
//     to failed, not to working with no process (Agent.Attention; `agent
//     ls` shows it as needing attention).
//
// Limits: Pdeathsig and the /proc search are Linux only (elsewhere only
// the child's process group is killed); a process that closes descriptor
// 3 and leaves the child's group (a daemon that closes every descriptor
// and calls setsid) escapes the lock and the kill; a process in
// uninterruptible sleep cannot be killed (the reaper gives up after 30 s
// and reports it); liveness proves nothing across hosts.
//
// # Caveats
//
//   - A liveness lock proves nothing across hosts: ReapAgents marks failed
//     only agents of this host in working or waiting whose lock is free.
//   - A person who edits both state and applied_state forges the record;
//     the journal still has the true history. Likewise an assertion's hash
//     is checked against the journal: whoever can append to the journal
//     can forge it (the rules keep agents honest; they are no sandbox).
//   - Concurrent verifiers exclude each other per agent ("verify/<name>"
//     lock); a timed-out assertion's whole process group is SIGKILLed.
//   - A pool's drone that dies without its JSON result counts as crashed;
//     its item comes back by liveness. The first interrupt drains the
//     pool, the second forwards SIGTERM. The runner holds the pool's
//     liveness lock (schema.PoolLockKey): one runner per pool, and a
//     document left running by a dead one is Doctor's dead-pool. A pool
//     that dies interrupts its drones as the second interrupt would: they
//     get SIGTERM from the kernel (Pdeathsig, Linux; started from a locked
//     thread, as spawn's child), and each watches the pool's lock
//     (SpawnOptions.PoolRun) for the other cases. Interrupted, a busy
//     drone releases its item once its child's tree is gone; an idle one
//     claims nothing.
//   - Backup is file-consistent, not a snapshot: a queue item that moves
//     between state directories while Backup walks queues/ may be copied
//     in both states or in neither. Channels are copied under their lock
//     and journal files cut at the last complete line. Restore refuses a
//     store holding documents unless forced.
package agents
