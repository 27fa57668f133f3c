package agents

import "github.com/tavernhq/tavern/watcher/journal"

// The event types this package journals, for readers' type filters
// (journal.TypeHint).
func init() {
	journal.RegisterTypes(
		"agent.created", "agent.state", "agent.spawned", "agent.spawn_refused", "agent.exited",
		"agent.reaped", "agent.gated", "agent.output_error", "agent.orphans_killed",
		"pool.started", "pool.stopped", "pool.paused", "pool.resumed", "pool.interrupted",
		"pool.backoff", "pool.drone_crashed", "pool.reaped", "pool.drain_requested",
		"question.raised", "question.answered", "question.bubbled",
		"commitment.added", "commitment.verified",
		"usage.recorded", "item.escalated", "constitution.written")
}
