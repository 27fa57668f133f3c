package agents

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Rule names on a docstore.Store (docstore.Store.AddRule).
const (
	RuleAgentState = "agents/state"      // the state machine
	RuleCommitment = "agents/commitment" // an agent does not judge itself
	RuleNames      = "agents/names"      // configuration names only what exists
	RuleIdentity   = "agents/identity"   // an agent's name is its file name; its id is its own
	RuleRole       = "agents/role"       // a changed role is no typo of one that has a constitution
	RuleRefs       = "agents/refs"       // check: names of agents, queues, channels that have no document
	RuleNewName    = "agents/new-name"   // a new queue, plan, budget, pool, role or tuple type is named as an agent is
)

// InstallRules makes every write through s obey the agent rules, whatever
// the path (`tavern set`, `tavern edit`, a Manager, any library caller):
//
//   - An agent's state follows the state machine (Transitions) from the
//     state the engine acts on (Agent.Effective); moving to done needs
//     every commitment passed; applied_state is the engine's own record
//     and only follows the state. A write that changes the state and
//     leaves applied_state alone (`tavern set`, `tavern edit`, a plain
//     Store.Update) is a transition like Manager.Transition's: an amend
//     (followState) moves applied_state and state_changed with it and
//     attaches the "agent.state" events, which journal.RecordMutations
//     journals (by actor, "user" for a person). A forced update
//     (docstore.UpdateOptions.Force, `agent state --force`) may do
//     anything. A document created by hand may start in any state.
//   - actor may not remove its own commitments (ErrOwnCommitment), nor
//     move them away: that would drop a claim it has not proved.
//   - actor, the writing agent ("" for a person; the CLI passes
//     TAVERN_AGENT, which the spawn wrapper sets for its child), may not
//     change its own commitments' assertion or result fields
//     (StatusFields), nor create one that carries a result: only a
//     verifier records results.
//   - An agent's, a channel's and a queue's name field is its path's name
//     (agents/<name>.md, channels/<name>.md, queues/<name>/queue.md), and
//     an agent's id (random, given when it is made) is no other agent's:
//     a write that
//     sets name to another value, or id to another agent's, or changes
//     the id an agent has (unless another agent has it too: a copy's),
//     is refused with an *IdentityError (ErrNameNotPath, ErrDuplicateID,
//     ErrIDChanged; a create
//     does not look for an id minted moments ago: justMinted). As for an
//     item's path fields (queues.InstallRules), a write that leaves them
//     as they were is allowed even if a hand edit (cp of another agent's
//     file) made them disagree: check reports those.
//   - A write that changes an agent's role to one that has no
//     constitution, that no agent has, and whose name is near a role
//     that has one (`tavern set agents/alice role=wroker`) is refused
//     with the *RoleError (ErrNearRole) CreateAgent gives a new agent
//     with that role: a typo would leave the agent without the
//     constitution meant. A near name meant as a role of its own gets its
//     constitution first (WriteConstitution with New). A role changed
//     without touching constitution_sha256 records the new role's
//     constitution there (followRole), as a spawn under that role would.
//   - A name stored in configuration names something that exists: an
//     agent's queues, and the channel of a queue's on_dead ("notify
//     CHANNEL"), when the document is created or the field changes. A
//     typo there would otherwise surface much later, as a worker that
//     finds no queue or a dead letter that creates a channel nobody
//     reads. (A queue removed later does not block other edits.)
//
// It also installs the checks `tavern check` runs beyond the schema: an
// agent state edited by hand to an illegal value, an agent, channel or
// queue whose name is not its path's, an agent whose id another agent
// has, a commitment whose
// assertion no longer matches the hash recorded when it was made
// (ErrTampered), a message chunk with a section recv cannot parse, names
// of agents, queues and channels that have no document (refsCheck: an
// error when near an existing name, else a warning), and
// the queues' (queues.InstallChecks: dependency
// cycles, item fields that contradict the item's path), with the queues'
// rules (queues.InstallRules). Writes that break a rule fail with a
// *docstore.RefusedError wrapping the rule's error (a *TransitionError,
// or an *AgentError with ErrSelfVerify or ErrOwnAssertion). Hand edits of
// the files are not writes through the store: check and Manager.Audit
// report them. NewManager installs the rules (for a person) on a store
// that has none.
func InstallRules(s *docstore.Store, actor string) {
	s.AddAmend(RuleAgentState, func(w docstore.Write) error { return followState(actor, w) })
	s.AddRule(RuleAgentState, func(w docstore.Write) error { return agentStateRule(s, w) })
	s.AddRule(RuleCommitment, func(w docstore.Write) error { return commitmentRule(actor, w) })
	s.AddRule(RuleNewName, func(w docstore.Write) error { return newNameRule(s, w) }) // before what the document names: its own name first
	s.AddRule(RuleNames, func(w docstore.Write) error { return namesRule(s, w) })
	s.AddRule(RuleIdentity, func(w docstore.Write) error { return identityRule(s, w) })
	s.AddAmend(RuleRole, func(w docstore.Write) error { return followRole(s, w) })
	s.AddRule(RuleRole, func(w docstore.Write) error { return roleRule(s, w) })
	records := newAssertionRecords(s.Root())
	s.AddCheck("agents", func(d *docstore.Doc) []error { return checkDoc(records, d) })
	s.AddCheck("messages", messages.CheckChunk) // a section recv would refuse
	s.AddOwner(messages.OwnerChannelFiles, func(d *docstore.Doc) []string { return messages.ChannelFiles(s, d) })
	s.AddLocker(messages.OwnerChannelFiles, func(rel string, _ *docstore.Doc) []string { return messages.ChannelLocks(rel) })
	s.AddRunCheck(RuleIdentity, func() docstore.Check { return identityCheck(s) })
	s.AddRunCheck(RuleRefs, func() docstore.Check { return refsCheck(s) })
	queues.InstallRules(s)  // an item's path decides its id, queue and priority; no dependency cycles
	queues.InstallChecks(s) // gates decided by hand without a record, dependency cycles, path fields
	tuples.InstallChecks(s) // reservations whose glob or agent a hand edit broke
	plans.InstallChecks(s)  // plans that plan sync refuses (a cycle, an (after:) naming no task)
}

// followState makes a write that changes an agent's state and leaves
// applied_state as it was a transition: applied_state (and state_changed,
// when the writer left it too) follow the new state, as Manager.Transition
// writes them, and the write carries the "agent.state" events Transition
// would journal. An illegal state is left alone for agentStateRule to
// refuse.
func followState(actor string, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Agent || w.Prev == nil || w.Prev.Kind != schema.Agent {
		return nil
	}
	prev, next := agentFromDoc(w.Prev.View()), agentFromDoc(w.Doc.View())
	if next.State == prev.State || next.AppliedState != prev.AppliedState || !ValidState(next.State) {
		return nil
	}
	from := prev.Effective()
	if !w.Force && !Legal(from, next.State) {
		return nil
	}
	f := []docstore.Field{{Key: "applied_state", Value: next.State}}
	if w.Doc.String("state_changed") == w.Prev.String("state_changed") {
		f = append(f, docstore.Field{Key: "state_changed", Value: time.Now()})
	}
	if err := w.Doc.SetMany(f); err != nil {
		return err
	}
	if prev.AppliedState != "" && prev.AppliedState != from {
		// A legal hand edit the engine had not applied yet, as Transition
		// journals it.
		w.Attach(journal.Event{Type: "agent.state", Kind: "agent", Path: w.Path, Rev: w.Prev.Rev, Agent: next.Name, Parent: next.Parent,
			Data: map[string]any{"from": prev.AppliedState, "to": from, "by": "hand"}})
	}
	by := actor
	if by == "" {
		by = Person
	}
	data := map[string]any{"from": from, "to": next.State, "by": by}
	if w.Force {
		data["forced"] = true
	}
	w.Attach(journal.Event{Type: "agent.state", Kind: "agent", Path: w.Path, Agent: next.Name, Parent: next.Parent, Data: data})
	return nil
}

// agentStateRule enforces the state machine on every write of an agent.
func agentStateRule(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Agent || w.Prev == nil || w.Force {
		return nil
	}
	prev, next := agentFromDoc(w.Prev.View()), agentFromDoc(w.Doc.View())
	if next.State == prev.State && next.AppliedState == prev.AppliedState {
		return nil
	}
	from, to := prev.Effective(), next.State
	if !Legal(from, to) {
		return &TransitionError{Path: w.Path, Agent: next.Name, From: from, To: to, Err: ErrIllegalTransition}
	}
	if next.AppliedState != prev.AppliedState && next.AppliedState != to {
		return &AgentError{Op: "set applied_state", Path: w.Path,
			Err: fmt.Errorf("%w: applied_state is the state the engine last applied; it can only follow state", ErrIllegalTransition)}
	}
	if to == Done && from != Done {
		return unverified(s, next.Name)
	}
	return nil
}

// commitmentRule keeps an agent from changing its own commitment's
// assertion or result.
func commitmentRule(actor string, w docstore.Write) error {
	if actor == "" {
		return nil
	}
	// A delete, or a move elsewhere, removes the document from its path.
	gone := ""
	switch {
	case w.Op == "delete":
		gone = w.Path // Prev is nil when the file does not parse
	case w.Op == "move" && w.Prev != nil && w.Prev.Path != w.Path:
		gone = w.Prev.Path
	}
	if gone != "" {
		if k, caps, err := schema.KindOfPath(gone); err == nil && k == schema.Commitment && caps["agent"] == actor {
			return &AgentError{Op: w.Op, Path: gone, Err: ErrOwnCommitment}
		}
	}
	if w.Doc == nil {
		return nil
	}
	if w.Doc.Kind != schema.Commitment {
		return nil
	}
	_, caps, err := schema.KindOfPath(w.Path)
	if err != nil || caps["agent"] != actor {
		return nil
	}
	if w.Prev == nil {
		for _, f := range StatusFields {
			if f == "status" && w.Doc.String(f) == StatusPending {
				continue
			}
			if w.Doc.Has(f) {
				return &AgentError{Op: "set " + f, Path: w.Path, Err: ErrSelfVerify}
			}
		}
		return nil
	}
	changed := journal.ChangedFields(w.Prev.Fields(), w.Doc.Fields())
	for _, f := range changed {
		switch {
		case f == "assertion":
			return &AgentError{Op: "set " + f, Path: w.Path, Err: ErrOwnAssertion}
		case slices.Contains(StatusFields, f):
			return &AgentError{Op: "set " + f, Path: w.Path, Err: ErrSelfVerify}
		}
	}
	return nil
}

// checkDoc is the agents' part of `tavern check`.
func checkDoc(records *assertionRecords, d *docstore.Doc) []error {
	switch d.Kind {
	case schema.Agent:
		if p := CheckAgent(agentFromDoc(d.View())); p != nil {
			return []error{p}
		}
	case schema.Commitment:
		if err := records.check(commitmentFromDoc(d)); err != nil {
			return []error{err}
		}
	}
	return nil
}

// newNameCaptures are the kinds whose document a person makes by a new
// name, and the part of its path that is that name.
var newNameCaptures = map[*schema.Kind][2]string{
	schema.Queue:        {"queue", "queue"},
	schema.Plan:         {"name", "plan"},
	schema.Budget:       {"name", "budget"},
	schema.Pool:         {"name", "pool"},
	schema.Constitution: {"role", "role"},
	schema.Tuple:        {"type", "tuple type"},
}

// newNameRule refuses a document created under a name the plain name
// rule refuses (schema.ValidPlainName: a queue "Bad", a plan "My Plan"),
// as queue create, plan import, budget set, pool run, constitution set and
// tuple out refuse it: `tavern new queue Bad` made what no other command
// would, and what --where queue=NAME and a case-insensitive file system
// cannot tell apart. Only new names: a document made before the rule is
// still found, changed and restored by its name, and a role agents were
// made with may be given its constitution (checkNewRole).
func newNameRule(s *docstore.Store, w docstore.Write) error {
	if w.Op != "create" || w.Prev != nil || w.Doc == nil {
		return nil
	}
	c, ok := newNameCaptures[w.Doc.Kind]
	if !ok {
		return nil
	}
	_, caps, err := schema.KindOfPath(w.Path)
	if err != nil {
		return nil // the path rule reports it
	}
	if _, err := s.Stat(w.Path); err == nil {
		return nil // there already: the create fails as existing
	}
	if w.Doc.Kind == schema.Constitution && roleInUse(s, caps[c[0]]) {
		return nil
	}
	if err := schema.ValidPlainName(c[1], caps[c[0]]); err != nil {
		return fmt.Errorf("%s: %w", w.Path, err)
	}
	return nil
}

// namesRule refuses configuration that names a queue, channel or agent
// that does not exist (a *schema.UnknownError, with the nearest names): an
// agent's queues and parent, a plan's queue, a queue's on_dead channel.
func namesRule(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil { // a delete names nothing new
		return nil
	}
	switch w.Doc.Kind {
	case schema.Agent:
		// A parent that names no agent is a typo: the agent's questions
		// would bubble to nobody (CreateAgent refuses it too). Judged
		// when it changes, so an agent whose parent was removed since
		// keeps taking other writes.
		if p := w.Doc.String("parent"); p != "" && p != Person && (w.Prev == nil || p != w.Prev.String("parent")) {
			if err := AgentExists(s, p); err != nil {
				return fmt.Errorf("%s: parent: %w", w.Path, err)
			}
			if chain := parentChain(s, w.Doc.String("name"), p); chain != "" {
				return &AgentError{Op: "set parent", Path: w.Path, Err: fmt.Errorf("%w: %s", ErrParentCycle, chain)}
			}
		}
		qs := agentQueues(w.Doc)
		if len(qs) == 0 || (w.Prev != nil && slices.Equal(qs, agentQueues(w.Prev))) {
			return nil
		}
		for _, q := range qs {
			if err := queues.CheckQueue(s, q); err != nil {
				return fmt.Errorf("%s: queues: %w", w.Path, err)
			}
		}
	case schema.Plan:
		// The queue a plan's new boxes become items of.
		q := w.Doc.String("queue")
		if q == "" || (w.Prev != nil && q == w.Prev.String("queue")) {
			return nil
		}
		if err := queues.CheckQueue(s, q); err != nil {
			return fmt.Errorf("%s: queue: %w", w.Path, err)
		}
	case schema.Queue:
		od := w.Doc.String("on_dead")
		if od == "" || (w.Prev != nil && od == w.Prev.String("on_dead")) {
			return nil
		}
		spec, err := queues.ParseOnDead(od)
		if err != nil {
			return fmt.Errorf("%s: %w", w.Path, err)
		}
		if spec.Channel != "" {
			if err := messages.CheckChannel(s, spec.Channel); err != nil {
				return fmt.Errorf("%s: on_dead: %w", w.Path, err)
			}
		}
	case schema.Commitment, schema.Memory, schema.Bookmark:
		return ownerRule(s, w)
	case schema.Item, schema.Chunk, schema.Note:
		return containerRule(s, w)
	}
	return nil
}

// containerRule is ownerRule for the queue an item is made in and the
// channel a message chunk or note is made under (`tavern new item
// biuld/x`, `tavern new note genral/n`): refused when that queue does
// not exist and its name is near one that does, for a typo would leave
// the item where no worker takes it, and whenever that channel does not
// exist, for the chunk or note would be where no listing shows it. Only
// a document's creation or a move is judged, as in ownerRule; a queue
// name near nothing is left alone. A chunk under an existing agent's
// direct channel that has no document yet is not refused: the rule makes
// the document, as send does on the first message to that agent (the
// one write a rule makes, and only what doctor --fix would).
func containerRule(s *docstore.Store, w docstore.Write) error {
	if w.Prev != nil && w.Op != "move" {
		return nil
	}
	_, caps, err := schema.KindOfPath(w.Path)
	if err != nil {
		return nil
	}
	if w.Prev != nil {
		if _, pcaps, err := schema.KindOfPath(w.Prev.Path); err == nil && pcaps["queue"] == caps["queue"] && pcaps["channel"] == caps["channel"] {
			return nil // a claim, a completion: the item stays in its queue
		}
	}
	var ue *schema.UnknownError
	switch {
	case caps["queue"] != "":
		err = queues.CheckQueue(s, caps["queue"])
	case caps["channel"] != "":
		// Any unknown channel, near a name or not: its files are no
		// channel (no listing shows them; doctor's stray-messages), and
		// a channel another machine made arrives with its document first.
		if err = messages.CheckChannel(s, caps["channel"]); errors.As(err, &ue) {
			return fmt.Errorf("%s: %w", w.Path, err)
		}
		// A chunk in the direct channel of an existing agent that has
		// never been sent a message (no channels/@alice.md yet) gets the
		// channel document, as the first `tavern send @alice` makes it:
		// without it the chunk's messages are listed by nothing, and
		// check and doctor report them. Notes need no document.
		if err == nil && w.Doc != nil && w.Doc.Kind == schema.Chunk {
			if err := messages.EnsureChannel(s, caps["channel"]); err != nil {
				return fmt.Errorf("%s: %w", w.Path, err)
			}
		}
	}
	if errors.As(err, &ue) && len(ue.Near) > 0 {
		return fmt.Errorf("%s: %w", w.Path, err)
	}
	return nil
}

// ownerRule refuses a document made under the name of an agent that has
// no document when the name is near one that has (`tavern new memory
// annn/x`, `mv commitments/ann/c.md commitments/anm/`): a typo would
// leave it where no agent reads it. A name near no agent is left alone
// (an agent another machine made, not synced yet), as is "user", the
// person at the terminal.
func ownerRule(s *docstore.Store, w docstore.Write) error {
	_, caps, err := schema.KindOfPath(w.Path)
	if err != nil {
		return nil
	}
	owner := caps["agent"]
	if owner == "" || owner == "user" {
		return nil
	}
	if w.Prev != nil && w.Op != "move" {
		return nil // its owner was judged when it was made
	}
	if _, err := s.Stat(AgentPath(owner)); err == nil {
		return nil
	}
	if near := schema.Near(owner, AgentNames(s)); len(near) > 0 {
		return fmt.Errorf("%s: %w", w.Path, &schema.UnknownError{What: "agent", Name: owner, Near: near})
	}
	return nil
}

// roleRule refuses a write that changes an agent's role to a likely typo
// of a role that has a constitution (nearRole). A new document is judged
// by CreateAgent; one copied or restored keeps the role it had.
func roleRule(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Agent || w.Prev == nil || w.Prev.Kind != schema.Agent {
		return nil
	}
	role := w.Doc.String("role")
	if role == "" || role == w.Prev.String("role") {
		return nil
	}
	if _, err := s.Stat(ConstitutionPath(role)); err == nil || schema.ValidName(role) != nil {
		return nil // the role meant; a name no constitution can have is no typo of one
	}
	return nearRole(s, "set role", w.Path, role)
}

// followRole makes a write that changes an agent's role and leaves
// constitution_sha256 as it was record the new role's constitution, as
// CreateAgent and spawn --role do: the old role's hash left behind made
// the next spawn refuse the agent ("constitution changed since agent
// was created"). A new role without a constitution drops the field.
func followRole(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Agent || w.Prev == nil || w.Prev.Kind != schema.Agent {
		return nil
	}
	role := w.Doc.String("role")
	if role == w.Prev.String("role") || w.Doc.String("constitution_sha256") != w.Prev.String("constitution_sha256") {
		return nil
	}
	if role == "" || schema.ValidName(role) != nil {
		return w.Doc.Delete("constitution_sha256")
	}
	d, err := s.Get(ConstitutionPath(role))
	if errors.Is(err, docstore.ErrNotExist) {
		return w.Doc.Delete("constitution_sha256")
	}
	if err != nil {
		return err
	}
	return w.Doc.Set("constitution_sha256", instructionsSHA(d))
}

// agentQueues is an agent document's queues (the older single "queue"
// field too).
func agentQueues(d *docstore.Doc) []string {
	if qs := d.Strings("queues"); len(qs) > 0 {
		return qs
	}
	if q := d.String("queue"); q != "" {
		return []string{q}
	}
	return nil
}

// identityRule refuses a write that gives an agent a name other than its
// file name, or an id another agent has. Only fields the write changes
// are judged (see InstallRules); a create or a move judges them all, but
// for an id just minted (justMinted).
func identityRule(s *docstore.Store, w docstore.Write) error {
	d := w.Doc
	if d == nil || !namedByPath(d.Kind) {
		return nil
	}
	prev := w.Prev
	if w.Op == "move" {
		prev = nil
	}
	changed := func(f string) bool {
		return prev == nil || d.Has(f) != prev.Has(f) || d.String(f) != prev.String(f)
	}
	if changed("name") {
		if err := nameError(w.Op, w.Path, d); err != nil {
			return err
		}
	}
	if id := d.String("id"); d.Kind == schema.Agent && id != "" && changed("id") && !(prev == nil && justMinted(id)) {
		docs, _ := s.Grep("agents", id) // parses only the files holding id
		var others []string
		for _, o := range docs {
			if o.Path != w.Path && (w.Prev == nil || o.Path != w.Prev.Path) && o.Kind == schema.Agent && o.String("id") == id {
				others = append(others, o.Path)
			}
		}
		if len(others) > 0 {
			return identityError(w.Op, w.Path, d, "id", others, ErrDuplicateID)
		}
	}
	return idChangeError(s, w)
}

// idChangeError refuses a write that changes or removes the id an agent
// already has (ErrIDChanged): the id is its identity, as an item's is its
// file name. An agent that had none may be given one, and a copy's id,
// shared with another agent (a cp of its file), may be replaced: that is
// how a copy is made an agent of its own.
func idChangeError(s *docstore.Store, w docstore.Write) error {
	d, prev := w.Doc, w.Prev
	if d.Kind != schema.Agent || prev == nil || prev.Kind != schema.Agent {
		return nil
	}
	was := prev.String("id")
	if was == "" || (d.Has("id") && d.String("id") == was) {
		return nil
	}
	docs, _ := s.Grep("agents", was) // parses only the files holding was
	for _, o := range docs {
		if o.Path != w.Path && o.Path != prev.Path && o.Kind == schema.Agent && o.String("id") == was {
			return nil // a copy's id: not its own
		}
	}
	e := identityError(w.Op, w.Path, d, "id", nil, ErrIDChanged)
	e.Was = was
	if !d.Has("id") { // removed: at the line it was on
		e.Line, e.Col = prev.KeyLine("id"), 1
		if n := prev.Get("id"); n != nil && n.Column > 0 {
			e.Col = n.Column
		}
	}
	return e
}

// mintedWithin bounds justMinted: far above the time between minting an
// id and writing its document, far below the time a person takes to
// copy an id into a new one.
const mintedWithin = 5 * time.Second

// justMinted reports whether id is a UUIDv7 minted moments ago, as
// CreateAgent mints one for every new agent: no other file can hold it,
// so a create need not read every agent to look (at 10^5 agents, seconds
// per spawn). An id given by hand (`new agent bob id=...`) is older and
// is looked for; one copied from an agent made in the last seconds is
// left to check.
func justMinted(id string) bool {
	t, ok := docstore.IDTime(id)
	if !ok {
		return false
	}
	age := time.Since(t)
	return age > -mintedWithin && age < mintedWithin
}

// namedByPath reports whether documents of kind carry a name field that
// must be their path's name: agents (agents/<name>.md), channels
// (channels/<name>.md) and queues (queues/<name>/queue.md). The engine
// goes by the path; a name field saying otherwise (a copied file) only
// misleads the people and tools that read it.
func namedByPath(k *schema.Kind) bool {
	return k == schema.Agent || k == schema.Channel || k == schema.Queue
}

// nameError is the *IdentityError of a document at rel whose name field
// is not its path's name (namedByPath), or nil.
func nameError(op, rel string, d *docstore.Doc) error {
	if !d.Has("name") {
		return nil
	}
	if _, name, err := schema.NameOfPath(rel); err != nil || d.String("name") == name {
		return nil
	}
	return identityError(op, rel, d, "name", nil, ErrNameNotPath)
}

func identityError(op, rel string, d *docstore.Doc, field string, others []string, err error) *IdentityError {
	line, col := d.KeyLine(field), 1
	if n := d.Get(field); n != nil && n.Column > 0 {
		col = n.Column
	}
	return &IdentityError{Op: op, Path: rel, Line: line, Col: col, Field: field, Value: d.String(field), Others: others, Err: err}
}

// identityCheck is check's report of the agents whose name is not their
// file name, or whose id another agent has (both copies are reported:
// which one is the copy, only a person knows). Every agent's id is read
// once per run, at the first agent checked.
func identityCheck(s *docstore.Store) docstore.Check {
	var byID map[string][]string
	return func(d *docstore.Doc) []error {
		if !namedByPath(d.Kind) {
			return nil
		}
		var out []error
		if id := d.String("id"); d.Kind == schema.Agent && id != "" {
			if byID == nil {
				byID = agentIDs(s)
			}
			var others []string
			for _, p := range byID[id] {
				if p != d.Path {
					others = append(others, p)
				}
			}
			if len(others) > 0 {
				out = append(out, identityError("check", d.Path, d, "id", others, ErrDuplicateID))
			}
		}
		if err := nameError("check", d.Path, d); err != nil {
			out = append(out, err)
		}
		return out
	}
}

// agentIDs maps the ids of the agent documents to their paths. A file
// that does not parse has no id here (check reports it on its own).
func agentIDs(s *docstore.Store) map[string][]string {
	out := map[string][]string{}
	names, _ := s.Docs("agents")
	for _, p := range names {
		d, err := s.Get(p)
		if err != nil || d.Kind != schema.Agent {
			continue
		}
		if id := d.String("id"); id != "" {
			out[id] = append(out[id], p)
		}
	}
	return out
}

// parentChain is the chain "x -> y -> x" when making parent the parent
// of name closes a cycle (parent is name, or name is among parent's
// ancestors), else "".
func parentChain(s *docstore.Store, name, parent string) string {
	if name == "" {
		return ""
	}
	chain := []string{name, parent}
	for cur := parent; len(chain) < 64; {
		if cur == name {
			return strings.Join(chain, " -> ")
		}
		d, err := s.Get(AgentPath(cur))
		if err != nil {
			return ""
		}
		cur = d.String("parent")
		if cur == "" || cur == Person {
			return ""
		}
		chain = append(chain, cur)
	}
	return ""
}
