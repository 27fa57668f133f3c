package view

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

// maxBodies bounds the body cache; it is emptied when full.
const maxBodies = 1024

// body returns the markdown body of a document, cached by revision (the
// projection indexes frontmatter only).
func (v *View) body(rel string) string {
	e, ok := v.p.Get(rel)
	if !ok {
		return ""
	}
	v.mu.Lock()
	c, ok := v.bodies[rel]
	v.mu.Unlock()
	if ok && c.rev == e.Rev {
		return c.text
	}
	d, err := v.s.Get(rel)
	if err != nil {
		return ""
	}
	text := strings.TrimSpace(string(d.Body()))
	v.mu.Lock()
	if len(v.bodies) >= maxBodies {
		clear(v.bodies)
	}
	v.bodies[rel] = cachedBody{rev: d.Rev, text: text}
	v.mu.Unlock()
	return text
}

// Doc reads one document in full for a detail pane: its fields, body and
// whole text (to edit), its problems if invalid, and with history its
// journal events (for an item: every event about its id in any state).
// The history is read from the journal since the document's creation
// (an item's id carries it), so it costs the journal's size since then.
func (v *View) Doc(rel string, history bool) (*Doc, error) {
	if err := engineName(rel); err != nil {
		return nil, err
	}
	out := &Doc{Path: rel}
	if e, ok := v.p.Get(rel); ok {
		out.Kind, out.Valid = e.Kind, e.Valid
		for _, p := range e.Errors {
			out.Errors = append(out.Errors, p.Msg)
		}
	}
	data, err := v.s.ReadFile(rel)
	if err != nil {
		return nil, err
	}
	out.Text = string(data)
	if d, err := v.s.Get(rel); err == nil {
		out.Rev, out.Fields, out.Body = d.Rev, d.Fields(), string(d.Body())
	} else {
		// Unparsable: the text is all there is; Rev still guards a save.
		out.Rev = docstore.Revision(data)
		out.Body = out.Text
	}
	if !history {
		return out, nil
	}
	f := journal.Filter{}
	id := ""
	if q, _, itemID, ok := itemPath(rel); ok {
		id = itemID
		f.Since = idCreated(itemID).Add(-time.Minute)
		_ = q
	} else if t := ftime(out.Fields, "created"); !t.IsZero() {
		f.Since = t.Add(-time.Minute)
	}
	_, err = journal.Read(v.s.Root(), f, func(e journal.Event, err error) bool {
		if err != nil {
			return true
		}
		if e.Path == rel || (id != "" && (e.Item == id || path.Base(e.Path) == id+".md")) {
			out.History = append(out.History, e)
		}
		return true
	})
	return out, err
}

// idCreated is the creation time in an item id (p<priority>-<UUIDv7>);
// zero if it has none.
func idCreated(id string) time.Time {
	u, err := uuid.Parse(idTime(id))
	if err != nil || u.Version() != 7 {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec)
}

// FindItem returns where an item is: its queue and state ("" if unknown).
func (v *View) FindItem(id string) (queue, state string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	loc := v.items.where[id]
	if loc == nil {
		return "", ""
	}
	return loc.queue, v.items.state(id)
}

// ItemPath is the document path of an item wherever it is now, or "".
func (v *View) ItemPath(id string) string {
	q, st := v.FindItem(id)
	if q == "" {
		return ""
	}
	return queues.ItemPath(q, st, id)
}

// Messages returns the last limit messages of a channel (all if limit <=
// 0), oldest first.
func (v *View) Messages(channel string, limit int) ([]Message, error) {
	ms, err := messages.ReadMessages(v.s, channel, "", 0)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(ms) > limit {
		ms = ms[len(ms)-limit:]
	}
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i] = Message{ID: m.ID, Time: m.Time, Sender: m.Sender, Text: m.Text}
	}
	return out, nil
}

// Inbox is an agent's unread counts per channel.
func (v *View) Inbox(agent string) ([]messages.Unread, error) {
	return messages.Inbox(v.s, agent)
}

// engineName refuses a path through a private (dot) name: the engine's
// locks, index, temporary files and trash are not documents to show or
// edit (the CLI refuses them too).
func engineName(rel string) error {
	for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
		if docstore.Private(part) && part != "." && part != ".." {
			return fmt.Errorf("%s: %w", rel, docstore.ErrEngineFile)
		}
	}
	return nil
}

// SearchItems returns up to limit items of a queue's state whose id, title
// or holder contains text (ignoring case), in the column's order: the
// items a board column does not show are found too (a filter over the
// shown ones missed them).
func (v *View) SearchItems(queue, state, text string, limit int) []Item {
	i := stateIndex(state)
	if i < 0 || limit <= 0 {
		return nil
	}
	v.mu.Lock()
	var ids []string
	if qi := v.items.queues[queue]; qi != nil {
		ids = make([]string, 0, len(qi.ids[i]))
		for id := range qi.ids[i] {
			ids = append(ids, id)
		}
	}
	v.mu.Unlock()
	text = strings.ToLower(text)
	var out []Item
	for _, id := range ids {
		it, ok := v.item(queue, state, id)
		if !ok {
			continue // moved since
		}
		if strings.Contains(strings.ToLower(it.ID), text) || strings.Contains(strings.ToLower(it.Title), text) ||
			strings.Contains(strings.ToLower(it.ClaimedBy), text) {
			out = append(out, it.Item)
		}
	}
	sort.Slice(out, func(a, b int) bool { return columnOrder[i](out[a].ID, out[b].ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
