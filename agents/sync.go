package agents

import (
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/watcher/journal"
)

// SyncMergers are the kind-specific merges of the git sync that live
// above package queues: message chunks merge as the union of their
// messages, bookmarks as the furthest read per channel.
func SyncMergers() map[string]gitsync.MergeFunc {
	return map[string]gitsync.MergeFunc{"chunk": messages.MergeChunk, "bookmark": messages.MergeBookmark}
}

// OpenSyncer opens the git sync of s with SyncMergers; j may be nil (the
// store's journal). Messages that arrive older than a reader's bookmark
// are marked unread for it (messages.MarkLate).
func OpenSyncer(s *docstore.Store, j *journal.Journal) (*gitsync.Syncer, error) {
	return gitsync.Open(s, gitsync.Options{Journal: j, Mergers: SyncMergers(),
		AfterApply:      func(docs []gitsync.Applied) error { return messages.MarkLate(s, docs) },
		AfterApplyKinds: []string{"chunk", "bookmark"}})
}
