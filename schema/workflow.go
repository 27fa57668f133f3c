package schema

// The kinds of the workflow layer (issue 19): plans, gates and their
// approval records, merge records, usage records and budgets. They are
// registered with the core kinds, so `tavern check`, `ls`, `show` and the
// JSON Schema export cover them like every other document.

// Gate stages, types and statuses.
var (
	GateStages   = []string{"claim", "complete"}
	GateTypes    = []string{"human", "timer"}
	GateStatuses = []string{"pending", "approved", "rejected"}
	// Decisions of an approval record.
	GateDecisions = []string{"approved", "rejected"}
	// MergeStatuses are the steps of one merge through the merge queue.
	MergeStatuses = []string{"started", "rebased", "checked", "landing", "landed", "failed", "rolled_back"}
)

var (
	// Plan is a markdown checklist whose unchecked boxes are items of a
	// queue. The body is the checklist; tasks maps each item the plan
	// made to the text of its box.
	Plan = &Kind{Name: "plan", Plural: "plans", Pattern: "plans/{name}.md", Version: 1,
		Doc: "a markdown checklist whose unchecked boxes are items of a queue",
		Fields: withCommon(
			Field{Name: "queue", Type: String, Required: true, Pattern: "name", Doc: "the queue its items go to"},
			Field{Name: "source", Type: String, Doc: "the file it was imported from"},
			Field{Name: "tasks", Type: Map, Doc: "item id: the text of its box (the engine's map from boxes to items)"},
		)}

	// Gate is a decision an item waits for: a person's approval, or a time.
	Gate = &Kind{Name: "gate", Plural: "gates", Pattern: "gates/{id}.md", Version: 1,
		Doc: "a human or timer gate an item must pass before it is claimed or completed",
		Fields: withCommon(
			Field{Name: "item", Type: String, Required: true, Pattern: "name"},
			Field{Name: "queue", Type: String, Pattern: "name"},
			Field{Name: "stage", Type: String, Enum: GateStages, Default: "complete", Doc: "claim: before work starts; complete: before the item is done"},
			Field{Name: "type", Type: String, Enum: GateTypes, Default: "human"},
			Field{Name: "until", Type: Time, Doc: "timer gates: not before this time"},
			Field{Name: "status", Type: String, Enum: GateStatuses, Default: "pending"},
			Field{Name: "reason", Type: String},
			Field{Name: "decided_by", Type: String},
			Field{Name: "decided_at", Type: Time},
			Field{Name: "decision_reason", Type: String},
			Field{Name: "approval", Type: String, Pattern: "name", Doc: "id of the approvals/<id>.md record of the decision; a decision without it is ignored"},
		)}

	// Approval is the append-only record of a person's decision at a gate.
	Approval = &Kind{Name: "approval", Plural: "approvals", Pattern: "approvals/{id}.md", Version: 1,
		Doc: "the record of a person's decision at a gate (who, when, from which process)",
		Fields: withCommon(
			Field{Name: "gate", Type: String, Required: true, Pattern: "name"},
			Field{Name: "item", Type: String},
			Field{Name: "decision", Type: String, Required: true, Enum: GateDecisions},
			Field{Name: "by", Type: String},
			Field{Name: "reason", Type: String},
			Field{Name: "uid", Type: Int},
			Field{Name: "pid", Type: Int},
			Field{Name: "host", Type: String},
			Field{Name: "tty", Type: String},
			Field{Name: "ancestry", Type: Strings, Doc: "the deciding process and its parents (pid command)"},
		)}

	// Merge is one pass of an item's branch through the merge queue.
	Merge = &Kind{Name: "merge", Plural: "merges", Pattern: "merges/{id}.md", Version: 1,
		Doc: "one merge of an item's branch into its base through the merge queue",
		Fields: withCommon(
			Field{Name: "item", Type: String},
			Field{Name: "queue", Type: String},
			Field{Name: "agent", Type: String},
			Field{Name: "repo", Type: String},
			Field{Name: "base", Type: String},
			Field{Name: "branch", Type: String},
			Field{Name: "worktree", Type: String},
			Field{Name: "mode", Type: String, Enum: []string{"rebase", "merge"}, Default: "rebase"},
			Field{Name: "status", Type: String, Enum: MergeStatuses, Default: "started"},
			Field{Name: "old", Type: String, Doc: "the base commit before the merge"},
			Field{Name: "head", Type: String, Doc: "the commit the base moves to (after rebase or merge)"},
			Field{Name: "check", Type: String, Doc: "the check command run in the worktree"},
			Field{Name: "exit_code", Type: Int},
			Field{Name: "reason", Type: String},
			Field{Name: "pid", Type: Int},
			Field{Name: "host", Type: String},
			Field{Name: "finished", Type: Time},
		)}

	// Usage is one spawn's entry in the usage ledger.
	Usage = &Kind{Name: "usage", Plural: "usage", Pattern: "usage/{agent}/{id}.md", Version: 1,
		Doc: "one spawn's wall time, CPU time, exit status, tokens and cost (append-only)",
		Fields: withCommon(
			Field{Name: "agent", Type: String},
			Field{Name: "item", Type: String},
			Field{Name: "queue", Type: String},
			Field{Name: "pool", Type: String},
			Field{Name: "role", Type: String},
			Field{Name: "model", Type: String},
			Field{Name: "started", Type: Time},
			Field{Name: "ended", Type: Time},
			Field{Name: "wall_seconds", Type: Number, Min: atLeast(0)},
			Field{Name: "cpu_seconds", Type: Number, Min: atLeast(0), Doc: "user + system time of the child and its waited-for descendants"},
			Field{Name: "exit_code", Type: Int},
			Field{Name: "outcome", Type: String},
			Field{Name: "source", Type: String, Doc: "whose output reported tokens and cost: claude, codex, gemini"},
			Field{Name: "tokens_in", Type: Int, Min: atLeast(0)},
			Field{Name: "tokens_out", Type: Int, Min: atLeast(0)},
			Field{Name: "tokens_cache_read", Type: Int, Min: atLeast(0)},
			Field{Name: "tokens_cache_write", Type: Int, Min: atLeast(0)},
			Field{Name: "cost_usd", Type: Number, Min: atLeast(0)},
			Field{Name: "session_id", Type: String},
		)}

	// Budget bounds what a pool may spend per day.
	Budget = &Kind{Name: "budget", Plural: "budgets", Pattern: "budgets/{name}.md", Version: 1,
		Doc: "a spending limit per day (tokens, cost, drone time) for one pool or all",
		Fields: withCommon(
			Field{Name: "pool", Type: String, Doc: "the pool it limits; empty: every pool"},
			Field{Name: "per", Type: String, Enum: []string{"day"}, Default: "day"},
			// A limit of 0 would pause every pool it covers at once
			// (stopping them, not budgeting), and budget ls showed it
			// as no limit: a limit left out is none, a limit is above 0.
			Field{Name: "max_tokens", Type: Int, Min: atLeast(1), Doc: "tokens in + out"},
			Field{Name: "max_cost_usd", Type: Number, Min: atLeast(0), ZeroWhy: budgetZeroWhy, Doc: "USD"},
			Field{Name: "max_time", Type: Duration, Min: atLeast(1), ZeroWhy: budgetZeroWhy, Doc: "drone wall time"},
		)}
)

// budgetZeroWhy is why a budget's limit is above 0.
const budgetZeroWhy = "a limit of nothing pauses every pool it covers; leave the limit out for none"

// Fields the workflow layer adds to the core kinds.
var (
	itemWorkflowFields = []Field{
		{Name: "plan", Type: String, Doc: "the plan (plans/<name>.md) whose box made this item"},
		{Name: "gate", Type: String, Enum: []string{"human"}, Doc: "human: a person must approve before the item is done"},
		{Name: "gates", Type: Strings, Doc: "ids of the item's gates (gates/<id>.md)"},
		{Name: "worktree", Type: String, Doc: "the git worktree its drone works in"},
		{Name: "branch", Type: String, Doc: "the git branch of its worktree"},
		{Name: "base", Type: String, Doc: "the branch its work merges into"},
		{Name: "merged", Type: String, Doc: "the commit its branch landed as"},
		{Name: "cancelled", Type: Bool, Doc: "cancelled (by its plan or a person), not failed"},
		{Name: "resolved_by", Type: String, Doc: "who completed or cancelled it by hand"},
		{Name: "escalated", Type: String, Doc: "where its dead letter was escalated (question id or channel)"},
		{Name: "last_claimed_by", Type: String, Doc: "who held it when it went to dead/"},
	}
	queueWorkflowFields = []Field{
		{Name: "on_dead", Type: String, Doc: "where dead items go: ask parent | ask user | notify CHANNEL"},
	}
	poolWorkflowFields = []Field{
		{Name: "paused", Type: String, Doc: "why the pool takes no new items (a budget is spent)"},
	}
)

func init() {
	Item.Fields = append(Item.Fields, itemWorkflowFields...)
	Queue.Fields = append(Queue.Fields, queueWorkflowFields...)
	Pool.Fields = append(Pool.Fields, poolWorkflowFields...)
	for _, k := range []*Kind{Plan, Gate, Approval, Merge, Usage, Budget} {
		Register(k)
	}
}
