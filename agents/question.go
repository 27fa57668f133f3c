package agents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Question statuses.
const (
	QuestionOpen     = "open"
	QuestionAnswered = "answered"
)

// DefaultBubbleAfter is used when tavern.md has no bubble_after.
const DefaultBubbleAfter = 10 * time.Minute

// Question is the parsed frontmatter (and body text) of questions/<id>.md.
type Question struct {
	ID         string           `json:"id"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	AskedTo    string           `json:"asked_to,omitempty"`
	Priority   int              `json:"priority"`
	Status     string           `json:"status"`
	Text       string           `json:"question"`
	Answer     string           `json:"answer,omitempty"`
	AnsweredBy string           `json:"answered_by,omitempty"`
	AnsweredAt schema.Timestamp `json:"answered_at,omitzero"`
	Created    schema.Timestamp `json:"created,omitzero"`
	ToSince    schema.Timestamp `json:"to_since,omitzero"`
	Hops       int              `json:"hops"`
	Path       string           `json:"path"`
}

func questionFromDoc(d *docstore.Doc) *Question {
	q := &Question{ID: d.String("id"), From: d.String("from"), To: d.String("to"), AskedTo: d.String("asked_to"),
		Status: d.String("status"), Answer: d.String("answer"), AnsweredBy: d.String("answered_by"),
		Text: strings.TrimSpace(string(d.Body())), Path: d.Path}
	if q.ID == "" {
		q.ID = d.Name
	}
	if q.Status == "" {
		q.Status = QuestionOpen
	}
	if q.To == "" {
		q.To = User
	}
	n, _ := d.Int("priority")
	q.Priority = int(n)
	n, _ = d.Int("hops")
	q.Hops = int(n)
	q.AnsweredAt.Time, _ = d.Time("answered_at")
	q.Created.Time, _ = d.Time("created")
	q.ToSince.Time, _ = d.Time("to_since")
	if q.ToSince.IsZero() {
		q.ToSince = q.Created
	}
	return q
}

// QuestionPath is the document path of a question.
func QuestionPath(id string) string { return "questions/" + id + ".md" }

// BubbleAfter reads bubble_after from tavern.md (DefaultBubbleAfter if
// absent or unreadable).
func (m *Manager) BubbleAfter() time.Duration {
	cfg, err := m.Store.Get(docstore.ConfigFile)
	if err != nil {
		return DefaultBubbleAfter
	}
	if d, err := time.ParseDuration(cfg.String("bubble_after")); err == nil && d >= 0 { // 0s: at once
		return d
	}
	return DefaultBubbleAfter
}

// recipient resolves "parent" (or "") for an asker: its parent, or the user
// when it has none (or is not an agent); "user" or "@user" to the user; an
// agent's name, bare or as "@NAME", to the agent, which must exist.
func (m *Manager) recipient(from, to string) (string, error) {
	switch to {
	case User, "user":
		return User, nil
	case "", "parent":
		if from == "" || from == User {
			return User, nil
		}
		a, err := m.GetAgent(from)
		if err != nil {
			if errors.Is(err, docstore.ErrNotExist) {
				return User, nil
			}
			return "", err
		}
		if a.Parent == "" {
			return User, nil
		}
		return a.Parent, nil
	}
	// "@bob", as a message to bob is addressed (and as "@user" is taken).
	name := strings.TrimPrefix(to, "@")
	// An unknown recipient is a typo: the question would reach nobody. The
	// words user and parent are names too ("parnet": did you mean parent).
	if err := AgentExists(m.Store, name); err != nil {
		var ue *schema.UnknownError
		if errors.As(err, &ue) {
			ue.Near = append(schema.Near(name, []string{"parent", "user"}), ue.Near...)
		}
		return "", err
	}
	return name, nil
}

// Ask raises a question from an agent (from), the person (Person), or
// tavern itself ("": a dead item's escalation) to "parent" (the default),
// "user" or an agent. The asking agent goes to waiting if it was working.
// Journaled as "question.raised".
func (m *Manager) Ask(from, to string, priority int, text string) (*Question, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%w: a question needs text", ErrEmptyText)
	}
	if from == Person || from == User {
		// The person's question to the user would wait for an answer
		// only the asker could give, as an agent asking itself would.
		if t, err := m.recipient("", to); err == nil && t == User {
			return nil, &AgentError{Op: "ask", Path: "questions/", Err: ErrPersonAskSelf}
		}
		from = "" // the person is written as @user, and is not an agent
	}
	if from != "" {
		if err := ValidAgentName(from); err != nil {
			return nil, err
		}
	}
	target, err := m.recipient(from, to)
	if err != nil {
		return nil, err
	}
	if from != "" && from != User && target == from {
		return nil, &AgentError{Op: "ask", Path: AgentPath(from), Err: ErrAskSelf}
	}
	id := docstore.NewID()
	now := m.now()
	d, err := docstore.New(schema.Question, []docstore.Field{
		{Key: schema.VersionField, Value: schema.Question.Version}, {Key: "id", Value: id}, {Key: "from", Value: orUser(from)}, {Key: "to", Value: target},
		{Key: "asked_to", Value: target}, {Key: "priority", Value: priority}, {Key: "status", Value: QuestionOpen}, {Key: "to_since", Value: now}, {Key: "hops", Value: 0},
		{Key: "created", Value: now}, {Key: "updated", Value: now},
	}, []byte("\n"+strings.TrimSpace(text)+"\n"))
	if err != nil {
		return nil, err
	}
	// The asker waits before its question exists: whoever sees the
	// question (a watcher, the answerer) sees the asker waiting too.
	waited := false
	if from != "" {
		if a, err := m.GetAgent(from); err == nil && a.Effective() == Working {
			if _, err := m.Transition(from, Waiting, TransitionOptions{By: from, Reason: "asked " + id}); err != nil {
				return nil, err
			}
			waited = true
		}
	}
	rel := QuestionPath(id)
	if err := m.Store.Create(rel, d); err != nil {
		if waited {
			_, _ = m.Transition(from, Working, TransitionOptions{By: from, Reason: "question " + id + " not written"})
		}
		return nil, err
	}
	q := questionFromDoc(d)
	if err := m.event(journal.Event{Type: "question.raised", Kind: "question", Path: rel, Agent: from,
		Data: map[string]any{"to": target, "priority": priority}}); err != nil {
		return q, err
	}
	return q, nil
}

func orUser(s string) string {
	if s == "" {
		return User
	}
	return s
}

// QuestionID resolves a question reference: its id, a unique prefix of
// it, or questions/ID.
func (m *Manager) QuestionID(ref string) (string, error) {
	ref = strings.TrimSuffix(strings.TrimPrefix(ref, "questions/"), ".md")
	if err := schema.ValidName(ref); err != nil {
		return "", err
	}
	if _, err := m.Store.Stat(QuestionPath(ref)); err == nil {
		return ref, nil
	}
	var ids []string
	names, _ := m.Store.Names("questions")
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, ".md"); ok {
			ids = append(ids, id)
		}
	}
	id, err := docstore.MatchPrefix("question", ref, ids)
	if errors.Is(err, fs.ErrNotExist) {
		// Named as an unknown item is, with the ids a mistyped one is near.
		return "", &schema.UnknownError{What: "question", Name: ref, Near: schema.Near(ref, ids), Err: fs.ErrNotExist}
	}
	return id, err
}

// GetQuestion reads a question by id (or unique id prefix).
func (m *Manager) GetQuestion(ref string) (*Question, error) {
	id, err := m.QuestionID(ref)
	if err != nil {
		return nil, err
	}
	d, err := m.Store.Get(QuestionPath(id))
	if err != nil {
		return nil, err
	}
	return questionFromDoc(d), nil
}

// Questions lists questions, highest priority (lowest number) and oldest
// first. to filters by current recipient ("" = all); open keeps only open
// ones.
func (m *Manager) Questions(to string, open bool) ([]*Question, error) {
	docs, errs := m.Store.List(schema.Question)
	var out []*Question
	for _, d := range docs {
		q := questionFromDoc(d)
		if open && q.Status != QuestionOpen {
			continue
		}
		if to != "" && q.To != to {
			continue
		}
		out = append(out, q)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].ID < out[j].ID
	})
	return out, errors.Join(errs...)
}

// Answer answers an open question and wakes its asker (an empty or blank
// text is refused with ErrEmptyText): an asking agent in
// waiting with no other open question goes back to working. by is who
// answers ("" for a person). Journaled as "question.answered".
func (m *Manager) Answer(ref, text, by string) (*Question, error) {
	if strings.TrimSpace(text) == "" {
		// An answer of nothing would close the question and wake the
		// asker with nothing to go on.
		return nil, fmt.Errorf("%w: an answer needs text", ErrEmptyText)
	}
	id, err := m.QuestionID(ref)
	if err != nil {
		return nil, err
	}
	rel := QuestionPath(id)
	now := m.now()
	d, err := m.Store.Update(rel, func(d *docstore.Doc) error {
		if st := d.String("status"); st == QuestionAnswered {
			return &AgentError{Op: "answer", Path: rel, Err: ErrAnswered}
		}
		if err := d.SetMany([]docstore.Field{{Key: "status", Value: QuestionAnswered}, {Key: "answer", Value: text}, {Key: "answered_by", Value: orUser(by)}, {Key: "answered_at", Value: now}, {Key: "updated", Value: now}}); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	q := questionFromDoc(d)
	if err := m.event(journal.Event{Type: "question.answered", Kind: "question", Path: rel, Agent: q.From,
		Data: map[string]any{"by": orUser(by), "to": q.To}}); err != nil {
		return q, err
	}
	if q.From != User && q.From != "" {
		a, err := m.GetAgent(q.From)
		if err == nil && a.Effective() == Waiting {
			others, _ := m.openFrom(q.From)
			if len(others) == 0 {
				if _, err := m.Transition(q.From, Working, TransitionOptions{By: orUser(by), Reason: "answered " + id}); err != nil {
					return q, err
				}
			}
		}
	}
	return q, nil
}

func (m *Manager) openFrom(agent string) ([]*Question, error) {
	all, err := m.Questions("", true)
	var out []*Question
	for _, q := range all {
		if q.From == agent {
			out = append(out, q)
		}
	}
	return out, err
}

// WaitAnswer blocks until the question is answered or ctx is done. It is
// woken by the watcher (fsnotify on questions/), not by polling; the
// question file is re-read after the watch is in place so an answer written
// in between is not missed.
func (m *Manager) WaitAnswer(ctx context.Context, id string) (*Question, error) {
	var q *Question
	err := m.waitFor(ctx, "questions", func() (bool, error) {
		var err error
		q, err = m.GetQuestion(id)
		if err != nil {
			return false, err
		}
		return q.Status == QuestionAnswered, nil
	})
	return q, err
}

// Bubble moves every open question that has waited longer than after at
// its recipient up one level: to the recipient's parent, or to the user
// when the recipient has no parent. It returns the questions moved and the
// time the next open question becomes due (zero if none).
func (m *Manager) Bubble(after time.Duration) (moved []*Question, nextDue time.Time, err error) {
	qs, err := m.Questions("", true)
	now := m.now()
	for _, q := range qs {
		if q.To == User {
			continue
		}
		due := q.ToSince.Add(after)
		if due.After(now) {
			if nextDue.IsZero() || due.Before(nextDue) {
				nextDue = due
			}
			continue
		}
		up, rerr := m.recipient(q.To, "parent")
		if rerr != nil {
			err = errors.Join(err, rerr)
			continue
		}
		from := q.To
		d, uerr := m.Store.Update(q.Path, func(d *docstore.Doc) error {
			cur := questionFromDoc(d)
			if cur.Status != QuestionOpen || cur.To != from {
				return nil // answered or moved meanwhile
			}
			hops, _ := d.Int("hops")
			if err := d.SetMany([]docstore.Field{{Key: "to", Value: up}, {Key: "to_since", Value: now}, {Key: "hops", Value: hops + 1}, {Key: "updated", Value: now}}); err != nil {
				return err
			}
			return nil
		})
		if uerr != nil {
			err = errors.Join(err, uerr)
			continue
		}
		nq := questionFromDoc(d)
		if nq.To != up {
			continue
		}
		moved = append(moved, nq)
		err = errors.Join(err, m.event(journal.Event{Type: "question.bubbled", Kind: "question", Path: q.Path, Agent: q.From,
			Data: map[string]any{"from": from, "to": up, "hops": nq.Hops}}))
		if up != User {
			if d := now.Add(after); nextDue.IsZero() || d.Before(nextDue) {
				nextDue = d
			}
		}
	}
	return moved, nextDue, err
}

// waitFor re-evaluates cond whenever something under dir (a store
// directory) changes, until cond is true or ctx is done. The watch is set
// up before the first evaluation.
func (m *Manager) waitFor(ctx context.Context, dir string, cond func() (bool, error)) error {
	wake := make(chan struct{}, 1)
	w, err := watcher.WatchFS(filepath.Join(m.Store.Root(), dir), watcher.FSOptions{
		OnChange: func([]watcher.Change) {
			select {
			case wake <- struct{}{}:
			default:
			}
		},
		OnDegrade: m.degraded})
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}

// WaitAgent blocks until the agent's effective state is one of states (or
// ctx is done), woken by the watcher on agents/. It returns the agent.
func (m *Manager) WaitAgent(ctx context.Context, name string, states ...string) (*Agent, error) {
	var a *Agent
	err := m.waitFor(ctx, "agents", func() (bool, error) {
		var err error
		if a, err = m.GetAgent(name); err != nil {
			return false, err
		}
		for _, s := range states {
			if a.Effective() == s {
				return true, nil
			}
		}
		return false, nil
	})
	return a, err
}
