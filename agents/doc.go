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
// Search and inspect use a TF-IDF index (search.go) built per call from the
// entries in scope (one agent's memory, or all knowledge): sublinear tf,
// smoothed idf, cosine similarity, English stopwords removed, no stemming.
// At the scale the design assumes (<1000 memories per agent, <10k
// knowledge entries) building it costs less than reading the files, which
// every call does anyway to see hand edits; there is no stored index.
//
// # Wake, sleep, context
//
// Wake increments agents/<agent>.md's spawns and returns a Briefing: core
// memories, memories of the last 7 days (20 max), unread counts with the
// channel to read first, decision/architecture knowledge of the last 24 h,
// the agent's claimed queue items and open questions. Briefing.Text is
// short on purpose: it is pasted into an LLM prompt. Sleep stores a core
// memory of topic "summary" and sets last_sleep. Context searches the
// journal (package watcher), memory (only the acting agent's), knowledge,
// messages and queue items for every word of a query, and returns the last
// 10 matches as a timeline and the newest 5 per subsystem.
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
package agents
