package tuples

import "github.com/tavernhq/tavern/watcher/journal"

// The event types this package journals (Space.event), for readers'
// type filters (journal.TypeHint).
func init() {
	journal.RegisterTypes(
		"token.init", "token.acquired", "token.waiting", "token.released", "token.reclaimed",
		"reservation.made", "reservation.renewed", "reservation.waiting", "reservation.conflict",
		"reservation.released", "reservation.reclaimed", "reservation.expired",
		"tuple.out", "tuple.in", "tuple.expired", "tuple.returned")
}
