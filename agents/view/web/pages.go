package web

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Page is what one page template renders: the snapshot plus what the page
// is about. The same Page renders served (with forms and the live
// script) and exported (Static: plain links, no forms).
type Page struct {
	Name   string // template name and nav entry
	Title  string
	Snap   *view.Snapshot
	Static bool   // an export: no forms, no script, links to .html files
	CSRF   string // served pages: the token every form carries
	Flash  string // the result of the last action
	Error  string

	Needs    []view.Need
	Agent    *view.Agent
	Doc      *view.Doc
	Item     *view.Item
	Queue    *view.Queue
	Channel  *view.Channel
	Messages []view.Message
	Commits  []view.Commitment
	Inbox    []messages.Unread // an agent's unread messages per channel
	Asked    []view.Question
	Events   []journal.Event
	Filter   JournalFilter
	Search   string       // the Queues page's search: its columns list the items that match
	Action   *view.Action // the confirmation page's action
	Next     string       // where the confirmation page goes back to
	Here     string       // this page's path and query, where an action returns
	EditText string       // the edit form's text (kept after a refused save)
	EditRev  string
}

// JournalFilter is the journal page's filter: type (exact or prefix with
// "." or "*"), agent, kind, and a substring of the event's JSON.
type JournalFilter struct {
	Type, Agent, Kind, Text string
}

func (f JournalFilter) match(e journal.Event) bool {
	jf := journal.Filter{Agent: f.Agent}
	if f.Type != "" {
		jf.Types = []string{f.Type}
	}
	if f.Kind != "" {
		kind := f.Kind
		if k, err := schema.Lookup(kind); err == nil {
			kind = k.Name // "items" and "item" both mean the kind item
		}
		jf.Kinds = []string{kind}
	}
	if !jf.Match(e) {
		return false
	}
	if f.Text != "" {
		return strings.Contains(strings.ToLower(fmt.Sprint(e.Path, " ", e.Type, " ", e.Data)), strings.ToLower(f.Text))
	}
	return true
}

var titles = map[string]string{"needs": "Needs you", "agents": "Agents", "queues": "Queues", "channels": "Channels",
	"resources": "Reservations, tokens and pools", "journal": "Journal"}

func listPage(name string, snap *view.Snapshot) *Page {
	return &Page{Name: name, Title: titles[name], Snap: snap, Needs: snap.Needs}
}

// searchLimit bounds the items a search lists in one column.
const searchLimit = 200

// queuesPage is the Queues page; with text, each column lists the items
// of its whole state that match (the board alone shows the first few, and
// nothing else led to the rest).
func queuesPage(v *view.View, snap *view.Snapshot, text string) *Page {
	p := listPage("queues", snap)
	if text == "" {
		return p
	}
	p.Search = text
	s := *snap // the snapshot is shared: a copy with the columns searched
	s.Queues = make([]view.Queue, len(snap.Queues))
	for i, q := range snap.Queues {
		q.Columns = make([]view.Column, len(q.Columns))
		for j, c := range snap.Queues[i].Columns {
			c.Items = v.SearchItems(q.Name, c.State, text, searchLimit)
			if len(c.Items) < searchLimit {
				c.Total = len(c.Items) // the rest do not match: no "+N more"
			}
			q.Columns[j] = c
		}
		s.Queues[i] = q
	}
	p.Snap = &s
	return p
}

func journalPage(snap *view.Snapshot, f JournalFilter) *Page {
	p := listPage("journal", snap)
	p.Filter = f
	for i := len(snap.Journal) - 1; i >= 0; i-- { // newest first
		if f.match(snap.Journal[i]) {
			p.Events = append(p.Events, snap.Journal[i])
		}
	}
	return p
}

func agentPage(v *view.View, snap *view.Snapshot, name string) (*Page, error) {
	i := slices.IndexFunc(snap.Agents, func(a view.Agent) bool { return a.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("agent %q: %w", name, fs.ErrNotExist)
	}
	p := &Page{Name: "agent", Title: "Agent " + name, Snap: snap, Agent: &snap.Agents[i]}
	d, err := v.Doc(p.Agent.Path, false)
	if err != nil {
		return nil, err
	}
	p.Doc = d
	for _, c := range snap.Commitments {
		if c.Agent == name {
			p.Commits = append(p.Commits, c)
		}
	}
	for _, q := range snap.Questions {
		if q.From == name {
			p.Asked = append(p.Asked, q)
		}
	}
	for _, n := range snap.Needs {
		if n.Agent == name {
			p.Needs = append(p.Needs, n)
		}
	}
	p.Messages, _ = v.Messages("@"+name, 30)
	p.Inbox, _ = v.Inbox(name)
	for i := len(snap.Journal) - 1; i >= 0 && len(p.Events) < 30; i-- {
		if snap.Journal[i].Agent == name {
			p.Events = append(p.Events, snap.Journal[i])
		}
	}
	return p, nil
}

func itemPage(v *view.View, snap *view.Snapshot, id string) (*Page, error) {
	rel := v.ItemPath(id)
	if rel == "" {
		return nil, fmt.Errorf("item %q: %w", id, fs.ErrNotExist)
	}
	d, err := v.Doc(rel, true)
	if err != nil {
		return nil, err
	}
	p := &Page{Name: "item", Title: "Item " + id, Snap: snap, Doc: d}
	for qi, q := range snap.Queues {
		for _, c := range q.Columns {
			for _, it := range c.Items {
				if it.ID == id {
					it := it
					p.Item, p.Queue = &it, &snap.Queues[qi]
				}
			}
		}
	}
	if p.Item == nil {
		// Not on the board (beyond a column's limit): from the document.
		queue, state := v.FindItem(id)
		p.Item = &view.Item{ID: id, Queue: queue, State: state, Path: rel, Rev: d.Rev, Valid: d.Valid}
		if t, ok := d.Fields["title"].(string); ok {
			p.Item.Title = t
		}
	}
	if p.Item.Title != "" {
		p.Title = p.Item.Title
	}
	for _, n := range snap.Needs {
		if n.Path == rel {
			p.Needs = append(p.Needs, n)
		}
	}
	return p, nil
}

func channelPage(v *view.View, snap *view.Snapshot, name string) (*Page, error) {
	i := slices.IndexFunc(snap.Channels, func(c view.Channel) bool { return c.Name == name })
	p := &Page{Name: "channel", Title: "Channel " + name, Snap: snap}
	switch {
	case i >= 0:
		p.Channel = &snap.Channels[i]
	case strings.HasPrefix(name, "@") && slices.ContainsFunc(snap.Agents, func(a view.Agent) bool { return a.Name == name[1:] }):
		p.Channel = &view.Channel{Name: name} // an agent's direct channel before its first message
	default:
		// Sending creates no channel (the CLI's send --create does): a
		// page for a name that names none would offer a composer that
		// can only fail.
		return nil, fmt.Errorf("channel %q: %w", name, fs.ErrNotExist)
	}
	ms, err := v.Messages(name, 200)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	p.Messages = ms
	return p, nil
}

func docPage(v *view.View, snap *view.Snapshot, rel string) (*Page, error) {
	d, err := v.Doc(rel, false)
	if err != nil {
		return nil, err
	}
	p := &Page{Name: "doc", Title: rel, Snap: snap, Doc: d, EditText: d.Text, EditRev: d.Rev}
	for _, n := range snap.Needs {
		if n.Path == rel {
			p.Needs = append(p.Needs, n)
		}
	}
	return p, nil
}

func confirmPage(snap *view.Snapshot, a view.Action, next string) *Page {
	return &Page{Name: "confirm", Title: "Confirm", Snap: snap, Action: &a, Next: next}
}
