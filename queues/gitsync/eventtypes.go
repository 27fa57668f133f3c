package gitsync

import "github.com/tavernhq/tavern/watcher/journal"

// The event types this package journals, for readers' type filters
// (journal.TypeHint).
func init() {
	journal.RegisterTypes(EventSynced, EventConflict)
}
