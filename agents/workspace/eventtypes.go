package workspace

import "github.com/tavernhq/tavern/watcher/journal"

// The event types this package journals, for readers' type filters
// (journal.TypeHint).
func init() {
	journal.RegisterTypes(EventMergeStarted, EventMergeLanded, EventMergeFailed, EventMergeRecovered)
}
