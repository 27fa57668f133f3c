package queues

import "github.com/tavernhq/tavern/watcher/journal"

// The event types this package journals, for readers' type filters
// (journal.TypeHint).
func init() {
	journal.RegisterTypes(EventAdded, EventClaimed, EventCompleted, EventFailed, EventDead,
		EventReleased, EventReaped, EventLeaseExpired, EventRetried, EventQueueCreated,
		EventCancelled, EventAnnotated,
		EventGateAdded, EventGateApproved, EventGateRejected, EventGateReopened, EventGateRefused, EventGateDropped)
}
