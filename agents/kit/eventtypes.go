package kit

import "github.com/tavernhq/tavern/watcher/journal"

// EventKeeperError is journaled when a session keeper (tavern hook
// keep) fails: nobody sees its output.
const EventKeeperError = "session.keeper_error"

// EventStopUnverified is journaled when the stop gate lets a stop through
// with commitments failing, because a stop hook had blocked it once
// already (stop_hook_active).
const EventStopUnverified = "session.stop_unverified"

// The event types this package (and its keeper) journal, for readers'
// type filters (journal.TypeHint).
func init() {
	journal.RegisterTypes("session.started", "session.ended", EventKeeperError, EventStopUnverified, "reservation.denied")
}
