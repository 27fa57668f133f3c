package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// User is the recipient at the top of every hierarchy: questions that
// bubble past the last parent reach "@user".
const User = "@user"

// Manager runs the agent operations of one store: agent documents and
// their state machine, constitutions, commitments and their verification,
// questions, the spawn wrapper and pools. Every state change it makes is
// appended to the store's event journal. A Manager is safe for concurrent
// use; several processes may each have one on the same store.
type Manager struct {
	Store   *docstore.Store
	Journal *journal.Journal // nil: nothing is journaled
	// Now is the clock (tests replace it); nil means time.Now.
	Now func() time.Time
	// Host identifies this machine in agent documents (pid/host); liveness
	// locks only prove anything on the host that took them.
	Host       string
	ownJournal bool
	// reapCandidates: see SetReapCandidates.
	reapCandidates atomic.Pointer[func() ([]string, error)]
}

// SetReapCandidates makes ReapAgents look only at the agents fn names,
// which must include every agent whose document gives this Host (a
// process with a watching projection answers from it); nil restores the
// default, reading every agent document, which on a store of 100k agents
// is a second of CPU per tick. Safe to call while a reaper runs.
func (m *Manager) SetReapCandidates(fn func() ([]string, error)) {
	if fn == nil {
		m.reapCandidates.Store(nil)
		return
	}
	m.reapCandidates.Store(&fn)
}

// NewManager opens the store's journal and returns a Manager. A store
// without the agent rules gets them (InstallRules, for a person).
func NewManager(s *docstore.Store) (*Manager, error) {
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		return nil, err
	}
	if !s.HasRule(RuleAgentState) {
		InstallRules(s, "")
	}
	host, _ := os.Hostname()
	return &Manager{Store: s, Journal: j, Host: host, ownJournal: true}, nil
}

// Close releases the journal if NewManager opened it.
func (m *Manager) Close() error {
	if m.ownJournal && m.Journal != nil {
		return m.Journal.Close()
	}
	return nil
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// ProjectDir is the directory holding .tavern/: assertions and spawned
// commands run there.
func (m *Manager) ProjectDir() string { return filepath.Dir(m.Store.Root()) }

// event journals one event. Journal failures do not undo the document
// change (the documents are the truth; the journal is their history), so
// they are returned for the caller to report, never hidden.
// degraded reports a watch of the store that polls because inotify
// could not be used (FSOptions.OnDegrade): journaled, and told to the
// process's degrade handler (the CLI prints a warning).
func (m *Manager) degraded(err error) { watcher.ReportDegraded(m.Journal, "", err) }

func (m *Manager) event(e journal.Event) error {
	if m.Journal == nil {
		return nil
	}
	_, err := m.Journal.Append(e)
	return err
}

// Agent is the parsed frontmatter of an agent document.
type Agent struct {
	Name           string           `json:"name"`
	ID             string           `json:"id,omitempty"`
	Role           string           `json:"role,omitempty"`
	State          string           `json:"state"`
	AppliedState   string           `json:"applied_state,omitempty"`
	Parent         string           `json:"parent,omitempty"`
	Queues         []string         `json:"queues,omitempty"`
	Model          string           `json:"model,omitempty"`
	Pool           string           `json:"pool,omitempty"`
	Constitution   string           `json:"constitution_sha256,omitempty"`
	Spawns         int              `json:"spawns"`
	PID            int              `json:"pid,omitempty"`
	Host           string           `json:"host,omitempty"`
	Instance       string           `json:"instance,omitempty"` // the current (or last) spawn's instance id
	SessionID      string           `json:"session_id,omitempty"`
	VerifyAttempts int              `json:"verify_attempts,omitempty"`
	Created        schema.Timestamp `json:"created,omitzero"`
	Updated        schema.Timestamp `json:"updated,omitzero"`
	Path           string           `json:"path"`
	Rev            string           `json:"rev"`
}

// Effective is the state the engine acts on: the state last applied, or
// the document's state when it has no applied_state (a document created by
// hand) or the hand edit is a legal transition.
func (a *Agent) Effective() string {
	if a.AppliedState == "" || a.AppliedState == a.State || Legal(a.AppliedState, a.State) {
		return a.State
	}
	return a.AppliedState
}

// IllegalEdit reports whether the document's state is an illegal hand edit.
func (a *Agent) IllegalEdit() bool {
	return a.AppliedState != "" && a.AppliedState != a.State && !Legal(a.AppliedState, a.State)
}

func agentFromDoc(d *docstore.Doc) *Agent {
	a := &Agent{
		Name: d.Name, ID: d.String("id"), Role: d.String("role"), State: d.String("state"),
		AppliedState: d.String("applied_state"), Parent: d.String("parent"), Model: d.String("model"),
		Pool: d.String("pool"), Constitution: d.String("constitution_sha256"), Host: d.String("host"),
		Instance: d.String("instance"), SessionID: d.String("session_id"), Path: d.Path, Rev: d.Rev,
	}
	if a.Name == "" {
		a.Name = strings.TrimSuffix(filepath.Base(d.Path), ".md")
	}
	if a.State == "" {
		a.State = Idle
	}
	a.Queues = d.Strings("queues")
	if q := d.String("queue"); q != "" && len(a.Queues) == 0 {
		a.Queues = []string{q}
	}
	n, _ := d.Int("spawns")
	a.Spawns = int(n)
	n, _ = d.Int("pid")
	a.PID = int(n)
	n, _ = d.Int("verify_attempts")
	a.VerifyAttempts = int(n)
	a.Created.Time, _ = d.Time("created")
	a.Updated.Time, _ = d.Time("updated")
	return a
}

// Attention says why the agent needs a person ("" when it does not):
// it failed (a crash, a failed child, a failed verification: respawn or
// resolve it), or it was spawned and is working or waiting with no
// process recorded (an agent never spawned is driven by hand).
// `tavern agent ls` shows it.
func (a *Agent) Attention() string {
	if a.IllegalEdit() {
		return "" // shown as invalid
	}
	switch st := a.Effective(); {
	case st == Failed:
		return "failed: respawn or resolve it"
	case running(st) && a.PID == 0 && a.Host == "" && a.Spawns > 0:
		return st + " with no process running it" // a spawned agent whose child is gone
	}
	return ""
}

// AgentPath is the document path of an agent.
func AgentPath(name string) string { return "agents/" + name + ".md" }

// GetAgent reads an agent.
func (m *Manager) GetAgent(name string) (*Agent, error) {
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	d, err := m.Store.Get(AgentPath(name))
	if err != nil {
		return nil, m.unknownAgent(name, err)
	}
	return agentFromDoc(d), nil
}

// unknownAgent turns a missing agent document into a *schema.UnknownError
// with the nearest names (it still matches fs.ErrNotExist).
func (m *Manager) unknownAgent(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &schema.UnknownError{What: "agent", Name: name, Near: schema.Near(name, AgentNames(m.Store)), Err: err}
	}
	return err
}

// GetAgentDoc reads an agent's document (frontmatter and body).
func (m *Manager) GetAgentDoc(name string) (*docstore.Doc, error) {
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	d, err := m.Store.Get(AgentPath(name))
	if err != nil {
		return nil, m.unknownAgent(name, err)
	}
	return d, nil
}

// ListAgents reads every agent; unreadable documents come back as errors.
func (m *Manager) ListAgents() ([]*Agent, []error) {
	docs, errs := m.Store.List(schema.Agent)
	out := make([]*Agent, 0, len(docs))
	for _, d := range docs {
		out = append(out, agentFromDoc(d))
	}
	return out, errs
}

// AgentSpec describes a new agent.
type AgentSpec struct {
	Name       string // "" draws a themed name
	Role       string
	Parent     string
	Model      string
	Queues     []string
	Pool       string
	Assignment string
	// Edit, if set, edits the new document before it is written (the
	// fields of `tavern new agent NAME field=value...`); the result must
	// be valid and obey the store's rules like any write.
	Edit func(*docstore.Doc) error
}

// CreateAgent writes a new agent document in state idle. With a role that
// has a constitution, the constitution's sha256 is recorded: later spawns
// refuse to run the agent under a changed constitution. A role need not
// have one (it may be a label, or get its constitution later), so a role
// with none is accepted, whatever its spelling (roles made before any
// rule on their names keep working), unless its name is near a role that
// has a constitution and no agent has it yet: most likely a typo of that
// role, which would make an agent that never gets the constitution
// meant. That is refused with a *RoleError (ErrNearRole) and nothing is
// written; a near name meant as a role of its own gets its constitution
// first (WriteConstitution with New). An unnamed agent
// gets a themed name; the document is created exclusively, so concurrent
// creators never share a name.
func (m *Manager) CreateAgent(spec AgentSpec) (*Agent, error) {
	if spec.Name != "" {
		if err := ValidAgentName(spec.Name); err != nil {
			return nil, err
		}
		if spec.Name == Person {
			return nil, &schema.NameError{Name: Person, Reason: `"user" is the person running tavern; pick another agent name`, Agent: true}
		}
	}
	if spec.Parent != "" && spec.Parent != Person {
		// A parent that names nothing is a typo: questions would bubble
		// to nobody.
		if err := AgentExists(m.Store, spec.Parent); err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
	}
	sha := ""
	if spec.Role != "" {
		if err := schema.ValidName(spec.Role); err != nil {
			return nil, err
		}
		path := ""
		if spec.Name != "" {
			path = AgentPath(spec.Name)
		}
		var err error
		if sha, err = m.agentRole(path, spec.Role); err != nil {
			return nil, err
		}
	}
	for try := 0; ; try++ {
		name := spec.Name
		if name == "" {
			name = themedName(try)
		}
		d, err := m.newAgentDoc(name, spec, sha)
		if err != nil {
			return nil, err
		}
		if spec.Edit != nil {
			if err := spec.Edit(d); err != nil {
				return nil, err
			}
		}
		err = m.Store.Create(AgentPath(name), d)
		if errors.Is(err, docstore.ErrExist) && spec.Name == "" && try < 64 {
			continue
		}
		if err != nil {
			return nil, err
		}
		a := agentFromDoc(d)
		return a, m.event(journal.Event{Type: "agent.created", Kind: "agent", Path: d.Path, Rev: d.Rev,
			Agent: name, Parent: spec.Parent, Data: map[string]any{"role": spec.Role, "state": Idle}})
	}
}

// CheckRole applies CreateAgent's rule for role to a role agents will be
// made with later (a pool's drones), so a typo is refused before any of
// them is started rather than by each.
func (m *Manager) CheckRole(role string) error {
	if err := schema.ValidName(role); err != nil {
		return err
	}
	_, err := m.agentRole("", role)
	return err
}

// agentRole is the constitution sha256 to record for an agent of role
// (path: the agent's document), "" for a role that has none. Only a role
// near one that has a constitution is looked for among the agents (every
// agent file read): a spawn under a role far from every other must not
// pay that at each start.
func (m *Manager) agentRole(path, role string) (string, error) {
	sha, err := m.ConstitutionSHA(role)
	if errors.Is(err, docstore.ErrNotExist) {
		return "", nearRole(m.Store, "create agent", path, role)
	}
	return sha, err
}

// nearRole is the rule for a role an agent is given that has no
// constitution (CreateAgent, and roleRule for a write that changes an
// agent's role): a name near a role that has one is refused as a likely
// typo (*RoleError, ErrNearRole), unless an agent already has the role.
func nearRole(s *docstore.Store, op, path, role string) error {
	near := rolesNear(s, role)
	if len(near) == 0 || roleInUse(s, role) {
		return nil
	}
	return &RoleError{Op: op, Path: path, Role: role, Near: near, Err: ErrNearRole}
}

func (m *Manager) newAgentDoc(name string, spec AgentSpec, sha string) (*docstore.Doc, error) {
	now := m.now()
	f := []docstore.Field{
		{Key: schema.VersionField, Value: schema.Agent.Version},
		{Key: "id", Value: docstore.NewID()},
		{Key: "name", Value: name},
	}
	add := func(k string, v any, ok bool) {
		if ok {
			f = append(f, docstore.Field{Key: k, Value: v})
		}
	}
	add("role", spec.Role, spec.Role != "")
	f = append(f, docstore.Field{Key: "state", Value: Idle}, docstore.Field{Key: "applied_state", Value: Idle})
	add("parent", spec.Parent, spec.Parent != "")
	add("queues", spec.Queues, len(spec.Queues) > 0)
	add("model", spec.Model, spec.Model != "")
	add("pool", spec.Pool, spec.Pool != "")
	add("constitution_sha256", sha, sha != "")
	f = append(f, docstore.Field{Key: "spawns", Value: 0}, docstore.Field{Key: "created", Value: now}, docstore.Field{Key: "updated", Value: now}, docstore.Field{Key: "state_changed", Value: now})
	assignment := strings.TrimSpace(spec.Assignment)
	body := fmt.Sprintf("\n# %s\n\n## %s\n\n%s\n\n## %s\n\n## %s\n", name, SectionAssignment, orNone(assignment), SectionNotes, SectionMessages)
	return docstore.New(schema.Agent, f, []byte(body))
}

func orNone(s string) string {
	if s == "" {
		return "_none_"
	}
	return s
}

// TransitionOptions qualify a state change.
type TransitionOptions struct {
	By     string // who asks: an agent name, "verifier", "user", "spawn"...
	Reason string // journaled with the event
	// Force applies any state, legal or not, and even over an illegal hand
	// edit. It is journaled as forced: the escape hatch for a person.
	Force bool
	// Edit, if set, also edits the document in the same write.
	Edit func(*docstore.Doc) error
	// From, if set, fences the move on the state the caller saw: an agent
	// in another state now is refused with ErrStateChanged (a person's
	// page may be older than the agent's last move).
	From string
}

// Transition moves an agent to state to. The move must be legal from the
// effective state (see Agent.Effective); a document whose state was edited
// by hand to an illegal value is refused with ErrIllegalEdit until someone
// restores it or forces a state. Moving to done with commitments that have
// not all passed is refused with ErrUnverified. Staying in the same state
// writes nothing. Each transition is journaled as "agent.state".
func (m *Manager) Transition(name, to string, opt TransitionOptions) (*Agent, error) {
	if !ValidState(to) {
		// A typo (wroking, WORKING) gets the state it most likely meant.
		near := schema.Near(strings.ToLower(to), schema.AgentStates)
		if ValidState(strings.ToLower(to)) {
			near = []string{strings.ToLower(to)}
		}
		se := &StateError{Op: "transition", Agent: name, State: to, Near: near}
		if ValidAgentName(name) == nil {
			se.Path = AgentPath(name)
		}
		return nil, se
	}
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	rel := AgentPath(name)
	if to == Done && !opt.Force {
		if err := m.requireVerified(name); err != nil {
			return nil, err
		}
	}
	var from string
	var handFrom string // a legal hand edit applied by this write
	d, err := m.Store.UpdateWith(rel, docstore.UpdateOptions{Force: opt.Force}, func(d *docstore.Doc) error {
		a := agentFromDoc(d)
		from = a.Effective()
		handFrom = ""
		if a.IllegalEdit() && !opt.Force {
			return &TransitionError{Path: rel, Agent: name, From: a.AppliedState, To: a.State, Err: ErrIllegalEdit}
		}
		if a.AppliedState != "" && a.AppliedState != a.State && !a.IllegalEdit() {
			handFrom = a.AppliedState
		}
		// The fence first: an agent already in the target state was not
		// moved by this call (a respawn of an idle agent did nothing).
		if opt.From != "" && from != opt.From {
			return &TransitionError{Path: rel, Agent: name, From: from, To: to, Err: fmt.Errorf("%w: it is %s now, not %s", ErrStateChanged, from, opt.From)}
		}
		if from == to && handFrom == "" && a.AppliedState != "" && a.State == to {
			return nil // no change
		}
		if !opt.Force && !Legal(from, to) {
			return &TransitionError{Path: rel, Agent: name, From: from, To: to, Err: ErrIllegalTransition}
		}
		now := m.now()
		if err := d.SetMany([]docstore.Field{{Key: "state", Value: to}, {Key: "applied_state", Value: to}, {Key: "state_changed", Value: now}, {Key: "updated", Value: now}}); err != nil {
			return err
		}
		if opt.Edit != nil {
			return opt.Edit(d)
		}
		return nil
	})
	if err != nil {
		return nil, m.unknownAgent(name, err)
	}
	a := agentFromDoc(d)
	var jerr error
	if handFrom != "" && handFrom != from {
		jerr = m.event(journal.Event{Type: "agent.state", Kind: "agent", Path: rel, Agent: name, Parent: a.Parent,
			Data: map[string]any{"from": handFrom, "to": from, "by": "hand"}})
	}
	if from != to || opt.Force {
		data := map[string]any{"from": from, "to": to}
		if opt.By != "" {
			data["by"] = opt.By
		}
		if opt.Reason != "" {
			data["reason"] = opt.Reason
		}
		if opt.Force {
			data["forced"] = true
		}
		if err := m.event(journal.Event{Type: "agent.state", Kind: "agent", Path: rel, Rev: d.Rev, Agent: name, Parent: a.Parent, Data: data}); err != nil {
			jerr = err
		}
	}
	return a, jerr
}

// requireVerified refuses done for an agent with unpassed commitments.
func (m *Manager) requireVerified(name string) error { return unverified(m.Store, name) }

// unverified refuses done for an agent with unpassed commitments.
func unverified(s *docstore.Store, name string) error {
	cs, err := commitments(s, name)
	if err != nil {
		return err
	}
	var pending []string
	for _, c := range cs {
		if c.Status != StatusPassed {
			pending = append(pending, c.ID+" ("+c.Status+")")
		}
	}
	if len(pending) > 0 {
		return &AgentError{Op: "done", Path: AgentPath(name), Err: fmt.Errorf("%w: %s", ErrUnverified, strings.Join(pending, ", "))}
	}
	return nil
}

// EditAgent applies fn to the agent's document under its lock (body
// sections, fields other than state). Use Transition for state.
func (m *Manager) EditAgent(name string, fn func(*docstore.Doc) error) (*Agent, error) {
	if err := ValidAgentName(name); err != nil {
		return nil, err
	}
	d, err := m.Store.Update(AgentPath(name), func(d *docstore.Doc) error {
		if err := fn(d); err != nil {
			return err
		}
		return d.Set("updated", m.now())
	})
	if err != nil {
		return nil, m.unknownAgent(name, err)
	}
	return agentFromDoc(d), nil
}

// AddNote appends a paragraph to the agent's Notes section. An empty or
// blank note is refused with ErrEmptyText (nothing is written).
func (m *Manager) AddNote(name, note string) (*Agent, error) {
	if strings.TrimSpace(note) == "" {
		return nil, fmt.Errorf("%w: a note needs text", ErrEmptyText)
	}
	return m.EditAgent(name, func(d *docstore.Doc) error {
		d.SetBody(AppendSection(d.Body(), SectionNotes, note))
		return nil
	})
}

// AuditProblem is an agent document whose state is an illegal hand edit.
type AuditProblem = TransitionError

// Audit checks every agent document: a state edited by hand to a value that
// cannot follow the state last applied is returned as a problem (and is not
// acted on by the engine). Legal hand edits are accepted: they are
// journaled as transitions "by": "hand" and applied_state catches up.
// Documents that do not parse or validate are problems of their own,
// returned in invalid (one error each, with path:line:col: BadFile); the
// others are audited all the same. err is what kept the audit from
// reading or accepting some document (I/O), after it did the rest.
func (m *Manager) Audit() (probs []*TransitionError, invalid []error, err error) {
	agents, errs := m.ListAgents()
	invalid, errs = splitBad(errs)
	for _, a := range agents {
		if p := CheckAgent(a); p != nil {
			probs = append(probs, p)
			continue
		}
		if a.AppliedState != "" && a.AppliedState != a.State {
			if _, err := m.Transition(a.Name, a.State, TransitionOptions{By: "hand"}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return probs, invalid, errors.Join(errs...)
}

// CheckAgent reports an illegal hand edit of an agent's state, or nil.
func CheckAgent(a *Agent) *TransitionError {
	if a.IllegalEdit() {
		return &TransitionError{Path: a.Path, Agent: a.Name, From: a.AppliedState, To: a.State, Err: ErrIllegalEdit}
	}
	return nil
}

// CheckAgentDoc is CheckAgent for a parsed document.
func CheckAgentDoc(d *docstore.Doc) error {
	if d.Kind != schema.Agent {
		return nil
	}
	if p := CheckAgent(agentFromDoc(d.View())); p != nil {
		return p
	}
	return nil
}
