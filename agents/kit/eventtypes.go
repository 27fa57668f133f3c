package kit

import "github.com/tavernhq/tavern/watcher/journal"

// EventKeeperError is journaled when a session keeper (tavern hook
// keep) fails: nobody sees its output.
const EventKeeperError = "session.keeper_error"

// The event types this package (and its keeper) journal, for readers'
// type filters (journal.TypeHint).
func init() {
	journal.RegisterTypes("session.started", "session.ended", EventKeeperError, "reservation.denied")
}
