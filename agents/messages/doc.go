// Package messages is the messaging of a Tavern store: channels, the
// chunk files that hold their messages, per-agent bookmarks, the inbox,
// and notes.
//
// # Basics
//
// A Channel is channels/<name>.md (topic, created, archived); its
// messages live in messages/<name>/<chunk>.md. Each chunk holds up to
// chunk_size messages (tavern.md, DefaultChunkSize 100), covers at most
// ChunkSpan (one hour) and at most 4 MiB, and is named by the UUIDv7 id
// of its first message, so `ls` lists chunks in time order. Each Message
// is a markdown section:
//
//	### 2026-01-24T10:00:00.123Z — alice
//	<!-- id: 0194a7c2-5b1e-7c3d-8e9f-0123456789ab -->
//
//	text
//
// Direct messages to an agent use the channel "@<agent>" (DirectChannel).
//
// SendMessage and SendMessages append under the channel's lock
// (schema.ChannelLockKey): read the latest chunk, add the sections, write
// the whole chunk back through docstore's durable write path. Message ids
// strictly increase within a channel, even across processes. SendMessages
// writes a batch with one durable write per chunk touched; the spawn
// wrapper in package agents uses it for captured output.
//
// bookmarks/<agent>.md maps each channel to the id of the last message the
// agent read. Recv returns what is newer and advances the bookmark under
// the bookmark's lock, so concurrent Recvs of one agent never return a
// message twice; RecvWait blocks until a message arrives (WaitChannel).
// Inbox counts unread messages per channel from the chunks'
// message_count, parsing only the chunks that may hold the bookmark.
//
// A reader's own messages are never unread for it (sent as itself, or
// its captured output "alice:stdout"): Inbox does not count them, Recv
// passes over them and moves the bookmark past them, MarkLate does not
// mark them. The rule is applied on reading, not on sending: a send
// writes no bookmark (it costs nothing more), and a sender with unread
// messages before its own still sees exactly those. Inbox parses a chunk
// past the bookmark only when its body names the reader in a header.
//
// A direct channel "@B" is B's (CanRead): Recv, RecvEach, RecvWait and
// ListNotes refuse it to any other agent but B's ancestors with a
// *DirectError (ErrNotYours) before anything is written; the person
// ("user") reads every channel.
//
// Across machines (the git sync) two machines may fill chunks of one
// channel at the same time; reads take every chunk that may hold a
// message past the bookmark (a chunk spans at most ChunkSpan from its
// name) and return messages in id order. A message another machine sent
// before the newest one a reader read here arrives with a later sync:
// MarkLate puts its id in the reader's `late` list (bookmarks/<agent>.md),
// and Recv and Inbox count it unread until it is read. Notes
// (notes/<channel>/<id>.md, AddNote) are reflections outside the
// timeline.
//
// # Caveats
//
//   - Appending rewrites the whole chunk, so one send costs more as the
//     chunk fills (up to chunk_size messages). Batching amortises it.
//   - Message texts lose trailing newlines; empty texts are refused
//     (ErrEmptyMessage). A text line starting with "###" is stored with a
//     leading backslash (markdown renders it as a literal #) and read back
//     without it.
//   - A person may edit chunks by hand (fix a typo, add a title line
//     before the first message), but a section header that does not parse
//     is a *ChunkError with its line, never skipped: skipping would lose a
//     message.
//   - WaitChannel watches one directory with inotify (watcher.WaitDir;
//     the watch is added before the first check) and re-checks every
//     WaitSafetyInterval (30s) for what inotify cannot see (network
//     filesystems), or every second without inotify (journaled as
//     watch.degraded, with a warning). It does not open a watcher
//     Projection: that scans the whole store, while one channel directory
//     is all a recv needs.
//   - Chunk, bookmark and note writes go through docstore, so its mutation
//     observer journals them as document events; there is no typed
//     "message.sent" event.
package messages
