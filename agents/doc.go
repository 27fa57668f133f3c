// Package agents runs agents and lets them talk and remember.
//
// # Channels and messages
//
// A channel is channels/<name>.md (topic, created, archived); its messages
// live in messages/<name>/<chunk>.md. Each chunk holds up to chunk_size
// messages (tavern.md, default 100), covers at most ChunkSpan (one hour)
// and is named by the UUIDv7 id of its first message, so `ls` lists chunks
// in time order. Each message is a section
//
//	### 2026-01-24T10:00:00.123Z — alice
//	<!-- id: 0194a7c2-5b1e-7c3d-8e9f-0123456789ab -->
//
//	text
//
// Direct messages to an agent use the channel "@<agent>".
//
// The API the spawn wrapper uses to capture a child's output:
//
//	func SendMessage(s *docstore.Store, channel, sender, text string) (id string, err error)
//	func SendMessages(s *docstore.Store, channel, sender string, texts []string) (ids []string, err error)
//
// Appends take the channel's lock, read the latest chunk, add the sections
// and write the whole chunk back through docstore's durable write path (a
// new chunk is created when the latest is full, an hour old, or 4 MiB).
// Message ids strictly increase within a channel even across processes:
// under the lock, an id that would not sort after the last one is replaced
// by the last id's successor. SendMessages writes a batch with one durable
// write per chunk touched; prefer it for captured output.
//
// Caveats:
//   - Appending rewrites the whole chunk, so the cost of one send grows with
//     the chunk (up to chunk_size messages). Batching amortises it.
//   - Message texts lose trailing newlines; empty texts are refused. A text
//     line starting with "###" is stored with a leading backslash (markdown
//     renders it as a literal #) and read back without it.
//   - A person may edit chunks by hand (fix a typo, add a title line before
//     the first message), but a section header that does not parse is an
//     error with its line, never skipped: skipping would lose a message.
//
// # Bookmarks, recv, inbox, notes
//
// bookmarks/<agent>.md maps channel → the id of the last message the agent
// read. Recv returns what is newer and advances the bookmark under the
// bookmark document's lock, so concurrent Recvs of one agent never return a
// message twice. RecvWait blocks until a message arrives: WaitChannel
// watches messages/<channel>/ with fsnotify (the watch is added before the
// first check) and re-checks every WaitSafetyInterval (30 s) for what
// inotify cannot see (network filesystems). It does not use the watcher's
// Projection.WaitFor: opening a projection scans the whole store, while
// one channel directory is all a recv needs. Inbox counts unread messages
// per channel from the chunks' message_count, parsing only the chunk that
// holds the bookmark. Notes (notes/<channel>/<id>.md) are reflections
// outside the timeline.
//
// # Memory and knowledge
//
// memory/<agent>/<id>.md is private to its agent by construction: every
// function takes the acting agent and reads only its directory (files stay
// readable to anyone with access to .tavern/; privacy is not secrecy).
// knowledge/<domain>/<id>.md is shared, with a contributor. Archiving sets
// archived: true; archived entries are hidden from lists, search, inspect
// and wake but never deleted. Ids may be given as a unique prefix.
//
// Search and inspect use a BM25 index (recall/search.go) built per call
// from the entries in scope (one agent's memory, or all knowledge): words
// reduced to their Snowball English stems ("databases" is "database"),
// query words of four letters or more also matching the words they begin
// ("postgres" finds "PostgreSQL"), the title weighted twice, the domain or
// topic half; inspect leaves the domain and topic out, so entries are not
// related merely by sharing one. At the scale the design assumes (<1000
// memories per agent, <10k knowledge entries) building the index costs
// less than reading the files, which every call does anyway to see hand
// edits; there is no stored index.
//
// # Wake, sleep, context
//
// Wake returns a Briefing: every core memory (the sleep summaries among
// them only the newest 3: one is written per sleep and they must not push
// the agent's own core memories out), memories of the last 7 days (20
// max), unread counts with the channel to read first, decision/architecture
// knowledge of the last 24 h, the agent's claimed queue items and open
// questions. It counts the session in agents/<agent>.md's spawns, unless a
// process holds the agent's liveness lock: the spawn wrapper (or a hook
// session keeper) then started the session and counted it. Briefing.Text
// is short on purpose: it is pasted into an LLM prompt. Sleep stores a
// core memory of topic "summary" and sets last_sleep. Context searches the
// journal (package watcher), memory (only the acting agent's), knowledge,
// messages, notes, questions and queue items for every word of a query
// (matched as recall's index matches: by stem or prefix), and returns the
// last 10 matches as a timeline and the newest 5 per subsystem.
//
// # Backup and restore
//
// Backup copies .tavern/ minus engine-private dot directories into
// DEST/tavern-<time>.partial and renames it into place when complete. Each
// document is read whole (documents are replaced by rename); each channel
// is copied under its lock; journal files are cut at the last complete
// line. Restore assembles the copy beside the target and renames it in,
// keeping a replaced store as <target>.before-restore-<time>; it refuses a
// store holding documents unless forced.
//
// More caveats:
//   - A queue item that moves between state directories while Backup walks
//     queues/ may be copied in both states or, if it moves from a directory
//     not yet copied into one already copied, in neither; queue backups are
//     file-consistent, not a snapshot of the whole queue.
//   - The chunk, bookmark and memory writes go through docstore (Create,
//     UpdateHeld, Update), so docstore's mutation observer journals them;
//     no typed "message.sent" event is written yet.
//
// # Agents and their state machine
//
// An agent is agents/<name>.md (names: [a-z0-9._-], so "@user" and
// "name:stderr" can never be agents). Manager is the entry point; every
// state change it makes is journaled ("agent.state", with from, to, by,
// reason). The body has three sections located with a markdown parser
// (goldmark), so a "## Notes" inside a code block is not a heading:
// "## Assignment", "## Notes" (verification failures are appended here) and
// "## Recent Messages" (the last lines the spawn wrapper captured; the full
// output is in the @<name> channel).
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
// Staying in a state is not a transition. Moving to done with commitments
// that have not all passed is refused (ErrUnverified): only the verifier
// gets an agent with commitments to done.
//
// Hand edits. The document keeps state (what a person sees and edits) and
// applied_state (what the engine last applied and journaled). When they
// differ, a legal applied_state -> state move is accepted: the next engine
// touch (Transition, Audit, `tavern agent audit`) journals it "by": "hand"
// and applied_state catches up. An illegal one is reported as invalid
// (TransitionError wrapping ErrIllegalEdit; `tavern check` and `tavern agent
// audit` exit 5) and never acted on: the engine keeps using applied_state
// and refuses transitions until someone restores the state or forces one
// (`tavern agent state NAME STATE --force`, journaled as forced). Caveat: a
// person who edits both fields forges the record; the journal still has
// the true history.
//
// Constitutions are constitutions/<role>.md. An agent records the sha256 of
// the whole file when created (or at its first spawn); a spawn under a
// changed file fails with ErrConstitutionChanged unless AcceptConstitution
// records the new sha256 (journaled with the spawn). Unnamed agents get a
// themed name ("amber-tankard"); the document is created exclusively and a
// collision draws again, so concurrent creators never share a name.
//
// # The spawn wrapper
//
// Spawn runs any command as an agent. It takes the agent's liveness lock
// (schema.AgentLockKey: "agents/<name>") and
// holds it for the child's whole life; with queues it then claims one item
// as an AgentLock claim, so the item lives exactly as long as the wrapper.
// The agent goes to working (spawns+1, host) before the child starts, so
// the child may ask a question at once; pid is recorded right after. The
// child runs in the project directory, in its own process group, with the
// item body on stdin and TAVERN_DIR, TAVERN_AGENT, TAVERN_PARENT,
// TAVERN_ITEM, TAVERN_ITEM_PATH, TAVERN_QUEUE, TAVERN_ATTEMPT, TAVERN_RESULT,
// TAVERN_ROLE, TAVERN_CONSTITUTION and TAVERN_MODEL. The lease is renewed
// every third of the queue's lease. Output lines are batched (every 200 ms
// or 256 lines) into SendMessages on the @<name> channel, sender <name> or
// <name>:stderr. On exit: 0 completes the item (result: the TAVERN_RESULT
// file, else the last 5 stdout lines) and moves the agent to verifying (it
// has commitments) or done; non-zero fails the item with the exit status
// and the stderr tail and moves the agent to failed; a forwarded signal
// releases the item and moves the agent to idle. pid and host are cleared
// before the lock is released.
//
// Refusals. A spawn is refused — agent busy (its liveness lock is held),
// in verifying, hand-edited into an illegal state, or under a changed
// constitution not accepted — before anything changes: no state moves, no
// item is claimed. Each refusal is journaled as "agent.spawn_refused" with
// its reason.
//
// Liveness. If the wrapper dies (SIGKILL), the kernel drops its lock: the
// queue's reaper returns the item at once, and ReapAgents (the verifier
// daemon, pools, `tavern agent reap`, the next spawn of the agent) marks
// failed every agent in working or waiting whose document names this host
// but whose lock is free. Caveats: a liveness lock proves nothing across
// hosts, so agents of other hosts are left alone; the child is in its own
// process group, so an orphaned child of a SIGKILLed wrapper keeps running
// until someone kills it (its item is already back in the queue, and its
// completion would be refused by the claim's fencing token).
//
// # Pools
//
// RunPool keeps Min..Max drones, each a separate spawn wrapper process
// (`tavern spawn --json` of the same binary) that claims one item and
// exits. Each pass reads the queues' stats and starts drones up to
// min(claimable items, Max); it wakes on drone exits and on watcher events
// under queues/, plus a 1 s tick that also writes pools/<name>.md (drones,
// peak, spawned, crashed, items done/failed/released, steals, throughput
// per minute, utilization = busy drone-time / (Max x elapsed),
// amplification = average concurrent drones). Empty behaviour: idle keeps
// Min drones blocked in a take with a wait; hibernate runs none until items
// appear; terminate returns when the queues are drained and nothing is
// claimed. The first interrupt drains (no new drones), the second forwards
// SIGTERM (items released). Drone counts come from the drones' own JSON
// results; a drone that dies without one counts as crashed and its item
// comes back by liveness.
//
// # Commitments and the verifier
//
// commitments/<agent>/<id>.md holds a description and a shell assertion.
// Verify runs each with `sh -c` in the project directory under its timeout
// (the whole process group is SIGKILLed on timeout) and writes status,
// exit_code, output (last 2 KiB), verified_at, verified_by and duration.
// An agent cannot verify itself (ErrSelfVerify), and CheckCommitmentWrite
// refuses an agent's write of its own commitments' status fields (used by
// `tavern set`). RunVerifier watches agents/ and verifies every agent that
// enters verifying: done if all passed, else back to working with the
// failures in its Notes and verify_attempts+1, or failed after MaxAttempts.
// Concurrent verifiers exclude each other per agent ("verify/<name>" lock).
//
// # Questions
//
// questions/<id>.md: from, to, asked_to, priority, status, answer. Ask
// sends to "parent" (the asker's parent, or "@user" without one), "user" or
// an agent, and moves a working asker to waiting. Answer records the answer
// and moves the asker back to working when it has no other open question;
// WaitAnswer blocks on a watch of questions/. Bubble moves questions open
// longer than bubble_after (tavern.md, default 10m) at their recipient to
// the recipient's parent, up to "@user"; the verifier daemon bubbles on
// each pass and sleeps until the next question is due.
package agents
