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
package agents
