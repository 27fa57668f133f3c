package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Escalation is one dead letter sent where its queue's on_dead says.
type Escalation struct {
	Item  string `json:"item"`
	Queue string `json:"queue"`
	To    string `json:"to"`  // the question's recipient, or "#channel"
	Ref   string `json:"ref"` // question id or channel message id
}

// EscalateDead sends the dead letters of the given queues (all when none
// is named) where their queue's on_dead says — a question to the last
// holder's parent or to the user, or a message on a channel — once each:
// the item records it in escalated:. Cancelled items are not dead
// letters.
func (m *Manager) EscalateDead(b *queues.Broker, qs ...string) ([]Escalation, error) {
	if len(qs) == 0 {
		var err error
		if qs, err = b.QueueNames(); err != nil {
			return nil, err
		}
	}
	var out []Escalation
	var errs []error
	for _, qn := range qs {
		q, err := b.Queue(qn)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		od, err := q.OnDead()
		if err != nil {
			errs = append(errs, &queues.QueueError{Op: "escalate", Queue: qn, Err: err})
			continue
		}
		if od == (queues.OnDead{}) {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(m.Store.Root(), "queues", qn, queues.Dead))
		if err != nil {
			continue
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".md")
			if !ok {
				continue
			}
			d, err := m.Store.Get(queues.ItemPath(qn, queues.Dead, id))
			if err != nil || d.String("escalated") != "" || d.Bool("cancelled") {
				continue
			}
			esc, err := m.escalate(b, od, qn, d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, esc)
		}
	}
	return out, errors.Join(errs...)
}

func (m *Manager) escalate(b *queues.Broker, od queues.OnDead, queue string, d *docstore.Doc) (Escalation, error) {
	id := d.Name
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	title := d.String("title")
	text := fmt.Sprintf("Item %s (%q) of queue %s is dead: %s\nRetry it with `tavern queue retry %s %s`, or cancel it.",
		id, title, queue, d.String("dead_reason"), queue, id)
	holder := d.String("last_claimed_by")
	if ValidAgentName(holder) != nil {
		holder = ""
	} else if _, err := m.GetAgent(holder); err != nil {
		holder = ""
	}
	esc := Escalation{Item: id, Queue: queue}
	var mark string
	switch {
	case od.Channel != "":
		mid, err := messages.SendMessage(m.Store, od.Channel, "tavern", text)
		if err != nil {
			return esc, err
		}
		esc.To, esc.Ref, mark = "#"+od.Channel, mid, "channel:"+od.Channel
	default:
		q, err := m.Ask(holder, od.Ask, 1, text)
		if err != nil {
			return esc, err
		}
		esc.To, esc.Ref, mark = q.To, q.ID, "question:"+q.ID
	}
	if _, err := b.Annotate(id, []docstore.Field{{Key: "escalated", Value: mark}}); err != nil {
		return esc, err
	}
	_ = m.event(journal.Event{Type: "item.escalated", Kind: "item", Path: d.Path, Item: id, Queue: queue, Agent: holder,
		Data: map[string]any{"to": esc.To, "ref": esc.Ref}})
	return esc, nil
}
