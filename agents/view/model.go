package view

import (
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Snapshot is the whole view model at one moment: what every face renders
// and what `--json` prints. It is built from the projection (documents)
// and the journal (timeline, activity, throughput); nothing in it is read
// from anywhere else, except the liveness of claim holders and agents
// (their flocks) and held token slots (tuples/token/.taken/, which the
// projection does not index). A Snapshot is immutable once returned and
// shared between callers: do not modify it.
type Snapshot struct {
	Time      schema.Timestamp `json:"time"`
	Root      string           `json:"root"`
	Person    string           `json:"person"`
	Version   uint64           `json:"version"`   // grows with every change the view saw
	Documents int              `json:"documents"` // documents in the projection
	Mode      string           `json:"mode"`      // how changes are seen: fsnotify, poll (nfs), snapshot

	Needs        []Need          `json:"needs_you"`
	Agents       []Agent         `json:"agents"`
	Queues       []Queue         `json:"queues"`
	Questions    []Question      `json:"questions"`
	Commitments  []Commitment    `json:"commitments"`
	Channels     []Channel       `json:"channels"`
	Reservations []Reservation   `json:"reservations"`
	Tokens       []TokenSlot     `json:"tokens"`
	Pools        []Pool          `json:"pools"`
	Invalid      []Invalid       `json:"invalid"`
	Journal      []journal.Event `json:"journal"` // newest last
}

// Need is one entry of the Needs-you lens: something only a person can
// unblock, what it is, why it is here, what to do, and the actions that
// do it from a view.
type Need struct {
	Key      string           `json:"key"`  // stable across snapshots: "question:<id>", "dead:<queue>/<id>"...
	Kind     string           `json:"kind"` // one of the Need* constants
	Severity int              `json:"severity"`
	What     string           `json:"what"`
	Why      string           `json:"why"`
	Do       string           `json:"do"`
	Path     string           `json:"path,omitempty"` // the document to look at
	Agent    string           `json:"agent,omitempty"`
	Since    schema.Timestamp `json:"since,omitzero"`
	Actions  []Action         `json:"actions,omitempty"`
	Text     string           `json:"text,omitempty"` // markdown: the question, the failing output...
	Priority int              `json:"priority,omitempty"`
}

// Kinds of Need, in the order the lens lists them (then by age).
const (
	NeedQuestion   = "question"    // a question bubbled up to the user
	NeedGate       = "gate"        // a human gate of the workflow awaiting approval
	NeedBudget     = "budget"      // a usage budget spent: its pools take no new items (cmd's source)
	NeedCommitment = "commitment"  // a commitment failed or timed out
	NeedFailed     = "failed"      // an agent in failed
	NeedDeadHolder = "dead-holder" // a claim or agent whose process died, not reaped yet
	NeedHung       = "hung"        // a claim past its lease whose holder is alive
	NeedDead       = "dead-letter" // an item in dead/
	NeedBlocked    = "blocked"     // a pending item whose dependency is dead or missing
	NeedInvalid    = "invalid"     // a document that does not parse or validate
)

// needOrder ranks the kinds for the lens: most urgent first.
var needOrder = map[string]int{NeedQuestion: 0, NeedGate: 1, NeedBudget: 2, NeedCommitment: 3, NeedFailed: 4,
	NeedDeadHolder: 5, NeedHung: 6, NeedDead: 7, NeedBlocked: 8, NeedInvalid: 9}

// Action is something a person can do from a view; View.Do performs it
// through the library's rules. The same struct describes an offered action
// (in a Need) and a request (with Text filled in).
type Action struct {
	Name    string `json:"action"`            // one of the Act* constants
	Label   string `json:"label,omitempty"`   // what a button or key hint says
	Target  string `json:"target"`            // question id, item id, agent, channel, document path
	Queue   string `json:"queue,omitempty"`   // retry: the item's queue
	Attempt int    `json:"attempt,omitempty"` // release: the claim's fencing token
	Rev     string `json:"rev,omitempty"`     // edit: the revision the new text is based on
	Input   string `json:"input,omitempty"`   // what Text must hold: "answer", "message", "document"; "" for none
	Confirm string `json:"confirm,omitempty"` // the question to confirm before doing it
	Text    string `json:"text,omitempty"`    // the person's input
	// Caller is the process that asked for the action (approve, reject),
	// when it is not this one (a browser's request to serve); nil: this
	// process.
	Caller *queues.Caller `json:"-"`
}

// Action names.
const (
	ActAnswer  = "answer"  // answer a question (Target: id, Text: the answer)
	ActRetry   = "retry"   // move a dead item back to pending (Target: id, Queue)
	ActRelease = "release" // give a hung claim back (Target: item id, Attempt: its fencing token)
	ActReap    = "reap"    // reap dead holders now (Target: queue, or "@agents" for agents)
	ActSend    = "send"    // send a message (Target: channel or @agent, Text)
	ActRespawn = "respawn" // failed -> idle through the state machine, only from failed (Target: agent)
	ActEdit    = "edit"    // replace a document after the edit check (Target: path, Rev, Text)
	ActApprove = "approve" // pass a human gate (Target: gate id; Text: an optional reason)
	ActReject  = "reject"  // reject a human gate, the item goes to dead/ (Target: gate id, Text: the reason)
)

// Agent is one agent as the Agents lens shows it.
type Agent struct {
	Name         string           `json:"name"`
	Role         string           `json:"role,omitempty"`
	State        string           `json:"state"`
	Parent       string           `json:"parent,omitempty"`
	Pool         string           `json:"pool,omitempty"`
	Queues       []string         `json:"queues,omitempty"`
	Alive        bool             `json:"alive"` // a process holds its liveness lock
	Host         string           `json:"host,omitempty"`
	PID          int              `json:"pid,omitempty"`
	Spawns       int              `json:"spawns"`
	Claims       []string         `json:"claims,omitempty"` // item ids it holds
	LastActivity schema.Timestamp `json:"last_activity,omitzero"`
	StateChanged schema.Timestamp `json:"state_changed,omitzero"`   // when it entered State
	OpenAsked    int              `json:"open_questions,omitempty"` // open questions it asked
	Commitments  string           `json:"commitments,omitempty"`    // "2/3 passed"
	Unread       int              `json:"unread,omitempty"`         // unread messages in its inbox
	Path         string           `json:"path"`
	Valid        bool             `json:"valid"`
}

// Queue is one queue with its depth per state, its board columns and how
// fast it moves.
type Queue struct {
	Name          string           `json:"name"`
	Priority      int              `json:"priority"`
	Steal         bool             `json:"steal"`
	OnEmpty       string           `json:"on_empty,omitempty"`
	Pending       int              `json:"pending"`
	Claimed       int              `json:"claimed"`
	Done          int              `json:"done"`
	Dead          int              `json:"dead"`
	Hung          int              `json:"hung"`
	OldestPending schema.Timestamp `json:"oldest_pending,omitzero"`
	Owners        map[string]int   `json:"owners,omitempty"`
	Throughput    float64          `json:"throughput"` // items completed per minute over ThroughputWindow
	Columns       []Column         `json:"columns"`    // the board: pending, claimed, done, dead
	Path          string           `json:"path"`
}

// Column is one state of a queue's board: the total and the first items
// (pending in take order, claimed all up to the limit, done and dead
// newest first).
type Column struct {
	State string `json:"state"`
	Total int    `json:"total"`
	Items []Item `json:"items"`
}

// Item is a work item as the board shows it.
type Item struct {
	ID           string           `json:"id"`
	Queue        string           `json:"queue"`
	State        string           `json:"state"`
	Title        string           `json:"title,omitempty"`
	Priority     int              `json:"priority"`
	Attempts     int              `json:"attempts"`
	ClaimedBy    string           `json:"claimed_by,omitempty"`
	ClaimAttempt int              `json:"claim_attempt,omitempty"`
	ClaimKind    string           `json:"claim_kind,omitempty"`
	LeaseUntil   schema.Timestamp `json:"lease_until,omitzero"`
	NotBefore    schema.Timestamp `json:"not_before,omitzero"`
	Created      schema.Timestamp `json:"created,omitzero"`
	Completed    schema.Timestamp `json:"completed,omitzero"`
	DependsOn    []string         `json:"depends_on,omitempty"`
	LastError    string           `json:"last_error,omitempty"`
	DeadReason   string           `json:"dead_reason,omitempty"`
	Result       string           `json:"result,omitempty"`
	Path         string           `json:"path"`
	Rev          string           `json:"rev"`
	Valid        bool             `json:"valid"`
}

// Question is a question document.
type Question struct {
	ID         string           `json:"id"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	AskedTo    string           `json:"asked_to,omitempty"`
	Priority   int              `json:"priority"`
	Status     string           `json:"status"`
	Hops       int              `json:"hops"`
	Created    schema.Timestamp `json:"created,omitzero"`
	AnsweredBy string           `json:"answered_by,omitempty"`
	Answer     string           `json:"answer,omitempty"`
	Path       string           `json:"path"`
}

// Commitment is a commitment and its last verification.
type Commitment struct {
	ID          string           `json:"id"`
	Agent       string           `json:"agent"`
	Description string           `json:"description"`
	Assertion   string           `json:"assertion"`
	Status      string           `json:"status"` // pending | passed | failed
	TimedOut    bool             `json:"timed_out,omitempty"`
	ExitCode    *int             `json:"exit_code,omitempty"`
	Output      string           `json:"output,omitempty"`
	VerifiedAt  schema.Timestamp `json:"verified_at,omitzero"`
	VerifiedBy  string           `json:"verified_by,omitempty"`
	Path        string           `json:"path"`
}

// Channel is a channel with its size and latest activity. Direct channels
// (@agent) are the agents' inboxes.
type Channel struct {
	Name     string           `json:"name"`
	Topic    string           `json:"topic,omitempty"`
	Archived bool             `json:"archived,omitempty"`
	Messages int              `json:"messages"`
	Last     schema.Timestamp `json:"last,omitzero"`
	Path     string           `json:"path,omitempty"`
}

// Reservation is one agent's exclusive claim on the paths a glob matches.
type Reservation struct {
	ID      string           `json:"id"`
	Agent   string           `json:"agent"`
	Glob    string           `json:"glob"`
	Reason  string           `json:"reason,omitempty"`
	Created schema.Timestamp `json:"created,omitzero"`
	Expires schema.Timestamp `json:"expires,omitzero"`
	Expired bool             `json:"expired,omitempty"`
	Path    string           `json:"path"`
}

// TokenSlot is one slot of a resource token, free or held.
type TokenSlot struct {
	Token      string           `json:"token"`
	Slot       int64            `json:"slot"`
	Epoch      int64            `json:"epoch"`
	Free       bool             `json:"free"`
	HeldBy     string           `json:"held_by,omitempty"`
	Hold       string           `json:"hold,omitempty"`
	Acquired   schema.Timestamp `json:"acquired,omitzero"`
	LeaseUntil schema.Timestamp `json:"lease_until,omitzero"`
	Path       string           `json:"path"`
}

// Pool is a drone pool's document: its configuration and live metrics.
type Pool struct {
	Name          string   `json:"name"`
	State         string   `json:"state,omitempty"`
	Queues        []string `json:"queues,omitempty"`
	Min           int      `json:"min"`
	Max           int      `json:"max"`
	Drones        int      `json:"drones"`
	PeakDrones    int      `json:"peak_drones"`
	Spawned       int      `json:"spawned"`
	Crashed       int      `json:"crashed"`
	ItemsDone     int      `json:"items_done"`
	ItemsFailed   int      `json:"items_failed"`
	Throughput    float64  `json:"throughput"`
	Utilization   float64  `json:"utilization"`
	Amplification float64  `json:"amplification"`
	// Dead: the document says running, paused or draining for a `pool
	// run` of this host that is gone (its liveness lock is free); its
	// numbers are those of the moment it died (tavern doctor --fix sets
	// it stopped).
	Dead bool   `json:"dead,omitempty"`
	Path string `json:"path"`
	host string // the runner's host (Dead is judged on this host only)
}

// StateText is the pool's state as people read it: "running (runner
// gone)" for a dead one.
func (p Pool) StateText() string {
	if p.Dead {
		return p.State + " (runner gone)"
	}
	return p.State
}

// Invalid is a document that does not parse or validate.
type Invalid struct {
	Path    string   `json:"path"`
	Kind    string   `json:"kind,omitempty"`
	Line    int      `json:"line,omitempty"`
	Col     int      `json:"col,omitempty"`
	Problem string   `json:"problem"` // the first problem, path:line:col: what is wrong
	More    []string `json:"more,omitempty"`
}

// Doc is one document in full, for a detail pane or page.
type Doc struct {
	Path    string          `json:"path"`
	Kind    string          `json:"kind,omitempty"`
	Rev     string          `json:"rev"`
	Valid   bool            `json:"valid"`
	Fields  map[string]any  `json:"fields,omitempty"`
	Body    string          `json:"body"` // markdown
	Text    string          `json:"text"` // the whole file, for editing
	Errors  []string        `json:"errors,omitempty"`
	History []journal.Event `json:"history,omitempty"` // journal events about it, oldest first
}

// Message is one message of a channel.
type Message struct {
	ID     string           `json:"id"`
	Time   schema.Timestamp `json:"time"`
	Sender string           `json:"sender"`
	Text   string           `json:"text"`
}

// emptyLists gives every list of s that has nothing an empty one: json.md
// promises `[]` for an empty list, never null, and a lens with nothing to
// show must say so the same way when it is printed whole.
func (s *Snapshot) emptyLists() {
	orEmpty(&s.Needs)
	orEmpty(&s.Agents)
	orEmpty(&s.Queues)
	orEmpty(&s.Questions)
	orEmpty(&s.Commitments)
	orEmpty(&s.Channels)
	orEmpty(&s.Reservations)
	orEmpty(&s.Tokens)
	orEmpty(&s.Pools)
	orEmpty(&s.Invalid)
	orEmpty(&s.Journal)
	for i := range s.Queues {
		orEmpty(&s.Queues[i].Columns)
		for j := range s.Queues[i].Columns {
			orEmpty(&s.Queues[i].Columns[j].Items)
		}
	}
}

func orEmpty[T any](s *[]T) {
	if *s == nil {
		*s = []T{}
	}
}
