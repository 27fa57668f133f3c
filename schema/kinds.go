package schema

// The kinds of the store. Each is one file in .tavern/ laid out by its
// Pattern. Fields not listed here are kept and ignored (reported by
// `tavern check --strict`).

func atLeast(v int64) *int64 { return &v }

// expireWhy is why a lease must be positive.
const expireWhy = "every claim would expire as it is made"

// Agent states. Transitions are enforced by package agents.
var AgentStates = []string{"idle", "working", "waiting", "verifying", "done", "failed"}

// Item states are the directories an item moves through.
var ItemStates = []string{"pending", "claimed", "done", "dead"}

// EmptyModes are what a pool does when its queues are empty.
var EmptyModes = []string{"idle", "hibernate", "terminate", "steal"}

var common = []Field{
	{Name: "id", Type: String, Doc: "time-ordered unique id (UUIDv7)"},
	{Name: "created", Type: Time},
	{Name: "updated", Type: Time},
}

func withCommon(fs ...Field) []Field { return append(append([]Field(nil), common...), fs...) }

var (
	// Config is the store configuration, .tavern/tavern.md.
	Config = &Kind{Name: "config", Plural: "config", Aliases: []string{"tavern"}, Pattern: "tavern.md", Version: 1,
		Doc: "store configuration", Closed: true,
		Fields: []Field{
			{Name: "name", Type: String, Doc: "project name"},
			{Name: "durability", Type: String, Enum: []string{"durable", "relaxed"}, Default: "durable",
				Doc: "durable: fsync every write; relaxed: atomic renames without fsync"},
			{Name: "default_lease", Type: Duration, Min: atLeast(1), ZeroWhy: expireWhy, Default: "5m",
				Doc: "lease of queues created without --lease, and of one-shot token acquires and reservations"},
			{Name: "default_max_attempts", Type: Int, Min: atLeast(1), Default: 3},
			{Name: "chunk_size", Type: Int, Min: atLeast(1), Default: 100, Doc: "messages per chunk"},
			{Name: "bubble_after", Type: Duration, Min: atLeast(0), Default: "10m", Doc: "unanswered questions move to the parent's parent after this (0s: at once)"},
			{Name: "reconcile", Type: Duration, Min: atLeast(1), ZeroWhy: "a rescan every 0s never rests", Default: "30s", Doc: "watcher full-reconcile interval"},
			{Name: "coordination", Type: String, Enum: []string{"local", "etcd", "git"}, Default: "local",
				Doc: "who arbitrates claims: local (rename + flock, one machine), etcd, or git (compare-and-swap on refs of the sync remote)"},
			{Name: "etcd", Type: Map, Keys: settingNames(etcdSettings), Settings: etcdSettings, Doc: "etcd engine: endpoints, prefix, lease_ttl, dial_timeout, op_timeout, username, password_env, tls {ca, cert, key, server_name}"},
			{Name: "sync", Type: Map, Keys: settingNames(syncSettings), Settings: syncSettings, Doc: "git sync of the documents: remote, ref (refs/tavern/state), every, claim_ttl"},
			{Name: "settle", Type: Duration, Min: atLeast(1), ZeroWhy: "a change needs time to be written", Default: "1s",
				Doc: "longest a file may stay open half-written, or gone, before the watcher reports it as it is"},
			{Name: "external_grace", Type: Duration, Min: atLeast(1), ZeroWhy: "the engine's journal entry needs time to arrive", Default: "2s",
				Doc: "how long a watcher waits for the engine's journal entry of a change before journaling it as external"},
			{Name: "created", Type: Time},
		},
		Rules: configRules}

	Agent = &Kind{Name: "agent", Plural: "agents", Pattern: "agents/{name}.md", Version: 1,
		Doc: "an agent: identity, role, lifecycle state",
		Fields: withCommon(
			Field{Name: "name", Type: String, Pattern: "name"},
			Field{Name: "role", Type: String, Pattern: "name"},
			Field{Name: "state", Type: String, Enum: AgentStates, Default: "idle"},
			Field{Name: "parent", Type: String},
			Field{Name: "queues", Type: Strings},
			Field{Name: "queue", Type: String},
			Field{Name: "model", Type: String},
			Field{Name: "constitution_sha256", Type: String},
			Field{Name: "spawns", Type: Int, Min: atLeast(0), Default: 0},
			Field{Name: "pid", Type: Int},
			Field{Name: "host", Type: String},
			Field{Name: "session_id", Type: String},
			Field{Name: "last_sleep", Type: Time},
			Field{Name: "verify_attempts", Type: Int, Min: atLeast(0)},
			Field{Name: "bookmarks", Type: Map, Doc: "channel: last-read message id"},
			Field{Name: "applied_state", Type: String, Enum: AgentStates, Doc: "the state the engine last applied and journaled; differs from state after a hand edit"},
			Field{Name: "state_changed", Type: Time, Doc: "when applied_state was entered"},
			Field{Name: "pool", Type: String, Doc: "the pool whose drone this agent is"},
			Field{Name: "instance", Type: String, Doc: "id of the agent's current (or last) spawn; a late action of another instance is refused"},
		),
		Migrations: []Migration{{From: 0, Doc: "status was renamed to state", Apply: renameField("status", "state")}},
	}

	Constitution = &Kind{Name: "constitution", Plural: "constitutions", Pattern: "constitutions/{role}.md", Version: 1,
		Doc:    "role instructions; agents record the sha256 of the file they were created under",
		Fields: withCommon(Field{Name: "role", Type: String}, Field{Name: "description", Type: String})}

	Queue = &Kind{Name: "queue", Plural: "queues", Pattern: "queues/{queue}/queue.md", Version: 1,
		Doc: "queue configuration",
		Fields: withCommon(
			Field{Name: "name", Type: String, Pattern: "name"},
			Field{Name: "priority", Type: Int, Min: atLeast(0), Default: 0, Doc: "0 is highest; order for multi-queue take and stealing"},
			Field{Name: "max_attempts", Type: Int, Min: atLeast(1), Default: 3},
			Field{Name: "lease", Type: Duration, Min: atLeast(1), ZeroWhy: expireWhy, Default: "5m"},
			Field{Name: "backoff", Type: Duration, Min: atLeast(0), Default: "10s", Doc: "base delay after a failure, doubled per attempt (0: retry at once)"},
			Field{Name: "backoff_max", Type: Duration, Min: atLeast(0), Default: "10m", Doc: "cap of the backoff (0: retry at once)"},
			Field{Name: "on_empty", Type: String, Enum: EmptyModes, Default: "idle"},
			Field{Name: "steal", Type: Bool, Default: true, Doc: "may workers of other queues steal from this one"},
			Field{Name: "lease_grace", Type: Duration, Min: atLeast(0), Default: "30s", Doc: "how long a claim whose lease expired but whose holder is alive (hung) is left before it is returned (0: at once)"},
		)}

	Item = &Kind{Name: "item", Plural: "items", Pattern: "queues/{queue}/{state:pending|claimed|done|dead}/{id}.md", Version: 1,
		Doc: "a work item; its directory is its state",
		Fields: withCommon(
			Field{Name: "queue", Type: String, Pattern: "name"},
			Field{Name: "title", Type: String},
			Field{Name: "priority", Type: Int, Min: atLeast(0), Default: 0},
			Field{Name: "depends_on", Type: Strings},
			Field{Name: "attempts", Type: Int, Min: atLeast(0), Default: 0},
			Field{Name: "max_attempts", Type: Int, Min: atLeast(1)},
			Field{Name: "claimed_by", Type: String},
			Field{Name: "claim_attempt", Type: Int, Min: atLeast(0), Doc: "fencing token: completions must carry it"},
			Field{Name: "claim_kind", Type: String, Enum: []string{"lease", "liveness"}},
			Field{Name: "claim_machine", Type: String, Doc: "machine of the current claim (coordination: etcd or git)"},
			Field{Name: "claim_lease", Type: String, Doc: "the coordination engine's lease of the current claim (etcd lease id)"},
			Field{Name: "liveness_lock", Type: String, Doc: "lock key whose holder keeps a liveness claim alive (free lock = dead owner)"},
			Field{Name: "instance", Type: String, Doc: "the spawn instance holding the claim; done/fail/renew/release from another instance are refused"},
			Field{Name: "hung_since", Type: Time, Doc: "when a reaper first saw the lease expired while the holder was alive"},
			Field{Name: "lease_until", Type: Time},
			Field{Name: "not_before", Type: Time},
			Field{Name: "started", Type: Time},
			Field{Name: "completed", Type: Time},
			Field{Name: "result", Type: String},
			Field{Name: "last_error", Type: String},
			Field{Name: "dead_reason", Type: String},
			Field{Name: "work_done", Type: Time, Doc: "when its command succeeded in a claim a complete-stage gate then held: the next claim waits at the gate without running it again (cleared when the item fails, dies or is done)"},
			Field{Name: "work_result", Type: String, Doc: "the result of that run (work_done)"},
		)}

	Commitment = &Kind{Name: "commitment", Plural: "commitments", Pattern: "commitments/{agent}/{id}.md", Version: 1,
		Doc: "a claim an agent made, and the shell assertion that checks it",
		Fields: withCommon(
			Field{Name: "agent", Type: String, Pattern: "name"},
			Field{Name: "description", Type: String, Required: true},
			Field{Name: "assertion", Type: String, Required: true},
			Field{Name: "timeout", Type: Duration, Min: atLeast(1), ZeroWhy: "the assertion would be killed before it runs", Default: "60s"},
			Field{Name: "status", Type: String, Enum: []string{"pending", "passed", "failed"}, Default: "pending"},
			Field{Name: "exit_code", Type: Int},
			Field{Name: "output", Type: String},
			Field{Name: "verified_at", Type: Time},
			Field{Name: "verified_by", Type: String},
			Field{Name: "duration", Type: Duration, Min: atLeast(0), Doc: "how long the last verification ran"},
		)}

	Channel = &Kind{Name: "channel", Plural: "channels", Pattern: "channels/{name}.md", Version: 1,
		Doc: "a message channel; its messages live in messages/<channel>/",
		Fields: withCommon(
			Field{Name: "name", Type: String},
			Field{Name: "topic", Type: String},
			Field{Name: "archived", Type: Bool, Default: false},
		)}

	Chunk = &Kind{Name: "chunk", Plural: "chunks", Aliases: []string{"message", "messages"}, Pattern: "messages/{channel}/{chunk}.md", Version: 1,
		Doc: "up to chunk_size messages of one channel, one `### <time> — <sender>` section each",
		Fields: withCommon(
			Field{Name: "channel", Type: String},
			Field{Name: "first_id", Type: String},
			Field{Name: "last_id", Type: String},
			Field{Name: "first_time", Type: Time},
			Field{Name: "last_time", Type: Time},
			Field{Name: "message_count", Type: Int, Min: atLeast(0)},
		)}

	Note = &Kind{Name: "note", Plural: "notes", Pattern: "notes/{channel}/{id}.md", Version: 1,
		Doc:    "a reflection attached to a channel, outside its timeline",
		Fields: withCommon(Field{Name: "channel", Type: String}, Field{Name: "agent", Type: String})}

	Tuple = &Kind{Name: "tuple", Plural: "tuples", Pattern: "tuples/{type}/{id}.md", Version: 1,
		Doc:    "a Linda tuple; its other fields are the tuple's values",
		Open:   true,
		Fields: withCommon(Field{Name: "expires", Type: Time, Doc: "collected after this time (TTL)"})}

	Memory = &Kind{Name: "memory", Plural: "memory", Aliases: []string{"memories"}, Pattern: "memory/{agent}/{id}.md", Version: 1,
		Doc: "agent-private memory",
		Fields: withCommon(
			Field{Name: "agent", Type: String},
			Field{Name: "topic", Type: String, Pattern: "kebab"},
			Field{Name: "core", Type: Bool, Default: false},
			Field{Name: "archived", Type: Bool, Default: false},
		)}

	Knowledge = &Kind{Name: "knowledge", Plural: "knowledge", Pattern: "knowledge/{domain}/{id}.md", Version: 1,
		Doc: "shared knowledge with contributor provenance",
		Fields: withCommon(
			Field{Name: "domain", Type: String},
			Field{Name: "title", Type: String},
			Field{Name: "contributor", Type: String},
			Field{Name: "archived", Type: Bool, Default: false},
		)}

	Pool = &Kind{Name: "pool", Plural: "pools", Pattern: "pools/{name}.md", Version: 1,
		Doc: "a drone pool and its live metrics",
		Fields: withCommon(
			Field{Name: "queues", Type: Strings},
			Field{Name: "min", Type: Int, Min: atLeast(0)},
			Field{Name: "max", Type: Int, Min: atLeast(1)},
			Field{Name: "on_empty", Type: String, Enum: EmptyModes},
			Field{Name: "state", Type: String},
			Field{Name: "command", Type: Strings},
			Field{Name: "model", Type: String},
			Field{Name: "steal", Type: Bool},
			Field{Name: "pid", Type: Int},
			Field{Name: "host", Type: String},
			Field{Name: "started", Type: Time},
			Field{Name: "drones", Type: Int, Min: atLeast(0), Doc: "drones running now"},
			Field{Name: "peak_drones", Type: Int, Min: atLeast(0)},
			Field{Name: "spawned", Type: Int, Min: atLeast(0), Doc: "drone processes started"},
			Field{Name: "crashed", Type: Int, Min: atLeast(0), Doc: "drones that died without reporting (killed, crashed wrapper)"},
			Field{Name: "items_done", Type: Int, Min: atLeast(0)},
			Field{Name: "items_failed", Type: Int, Min: atLeast(0), Doc: "failed attempts (retried or dead-lettered)"},
			Field{Name: "items_released", Type: Int, Min: atLeast(0)},
			Field{Name: "steals", Type: Int, Min: atLeast(0)},
			Field{Name: "throughput", Type: Number, Doc: "items done per minute since start"},
			Field{Name: "utilization", Type: Number, Doc: "drone-seconds busy / (max drones x seconds running)"},
			Field{Name: "amplification", Type: Number, Doc: "average concurrent drones"},
			Field{Name: "drain_requests", Type: Int, Min: atLeast(0), Doc: "drains asked (tavern pool drain) over the pool's runs"},
		)}

	Question = &Kind{Name: "question", Plural: "questions", Pattern: "questions/{id}.md", Version: 1,
		Doc: "a question raised by an agent, bubbling up its parents until answered",
		Fields: withCommon(
			Field{Name: "from", Type: String},
			Field{Name: "to", Type: String},
			Field{Name: "priority", Type: Int, Min: atLeast(0)},
			Field{Name: "status", Type: String, Enum: []string{"open", "answered"}, Default: "open"},
			Field{Name: "answer", Type: String},
			Field{Name: "answered_by", Type: String},
			Field{Name: "answered_at", Type: Time},
			Field{Name: "asked_to", Type: String, Doc: "the first recipient, before any bubbling"},
			Field{Name: "to_since", Type: Time, Doc: "when the question reached its current recipient"},
			Field{Name: "hops", Type: Int, Min: atLeast(0), Doc: "how many times it bubbled up"},
			Field{Name: "notified_to", Type: String, Doc: "the recipient a session hook last told about the question"},
			Field{Name: "answer_delivered", Type: Time, Doc: "when a session hook gave the answer to the asker"},
		)}

	Bookmark = &Kind{Name: "bookmark", Plural: "bookmarks", Pattern: "bookmarks/{agent}.md", Version: 1,
		Doc: "an agent's last-read message id per channel",
		Fields: withCommon(Field{Name: "agent", Type: String}, Field{Name: "channels", Type: Map, Pattern: "ids", Doc: "the id of the last message read, per channel"},
			Field{Name: "late", Type: Map, Pattern: "idlists", Doc: "messages older than the bookmark that arrived later from another machine, unread, per channel"})}
)

func init() {
	for _, k := range []*Kind{Config, Agent, Constitution, Queue, Item, Commitment, Channel, Chunk, Note, Tuple, Memory, Knowledge, Pool, Question, Bookmark} {
		Register(k)
	}
}
