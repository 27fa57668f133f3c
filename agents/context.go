package agents

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Context sources, in the order `tavern context` shows them.
var ContextSources = []string{"event", "memory", "knowledge", "message", "note", "question", "item"}

// Context limits.
const (
	ContextTimelineMax = 10
	ContextStateMax    = 5
)

// ContextHit is one match of a context search.
type ContextHit struct {
	Source string           `json:"source"` // one of ContextSources
	Time   schema.Timestamp `json:"time"`
	ID     string           `json:"id"`
	Agent  string           `json:"agent,omitempty"`
	Where  string           `json:"where,omitempty"` // channel, domain, topic, queue or event type
	Text   string           `json:"text"`
	Path   string           `json:"path,omitempty"`
}

// ContextResult is the answer of Context.
type ContextResult struct {
	Query string `json:"query"`
	// Timeline is the last ContextTimelineMax matches, oldest first: how
	// the subject evolved.
	Timeline []ContextHit `json:"timeline"`
	// State is the newest ContextStateMax matches per source.
	State map[string][]ContextHit `json:"state"`
}

// Context searches the journal, memory, knowledge, messages, notes,
// questions and queue items for query: every word of query must match a
// word of the entry the way recall's index matches (same stem, or a prefix
// of four letters or more: "postgres" finds "PostgreSQL", "databases"
// finds "database"). With agent set, only that agent's events and memories
// are searched and the direct channels it may not read (messages and
// notes: messages.CanRead) are skipped; without it, memory (private) is not searched at all. Identical
// texts by the same agent are reported once. Memory, knowledge, channel,
// message chunk, note and question files that do not parse are skipped:
// the result is then returned with a *docstore.SkippedError naming them
// (path:line:col). One hand-broken file hides nothing else.
func Context(s *docstore.Store, query, agent string) (*ContextResult, error) {
	match := recall.NewMatcher(query).Match
	var hits []ContextHit
	var skipped []error // files that do not parse, each hiding nothing else
	seen := map[string]bool{}
	add := func(h ContextHit) {
		key := h.Agent + "\x00" + h.Text
		if seen[key] {
			return
		}
		seen[key] = true
		hits = append(hits, h)
	}

	// Events.
	f := journal.Filter{}
	if agent != "" {
		f.Agent = agent
	}
	if _, err := journal.Read(s.Root(), f, func(e journal.Event, err error) bool {
		if err != nil {
			return true // a torn or hand-broken line: skip it here, `tavern check` reports it
		}
		data, _ := json.Marshal(e.Data)
		if match(e.Type, e.Path, e.Agent, e.Item, e.Queue, string(data)) {
			text := e.Type + " " + e.Path
			if len(e.Data) > 0 {
				text += " " + string(data)
			}
			add(ContextHit{Source: "event", Time: e.Time, ID: e.ID, Agent: e.Agent, Where: e.Type, Text: strings.TrimSpace(text), Path: e.Path})
		}
		return true
	}); err != nil {
		return nil, err
	}

	// Memory: private, so only with an agent.
	if agent != "" {
		mems, err := recall.ListMemory(s, agent, recall.MemoryFilter{})
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, m := range mems {
			if match(m.Topic, m.Text) {
				add(ContextHit{Source: "memory", Time: m.Updated, ID: m.ID, Agent: m.Agent, Where: m.Topic, Text: m.Text, Path: m.Path})
			}
		}
	}

	// Knowledge.
	ks, err := recall.ListKnowledge(s, recall.KnowledgeFilter{})
	if err != nil && recall.Skipped(err) == nil {
		return nil, err
	}
	skipped = append(skipped, recall.Skipped(err)...)
	for _, k := range ks {
		if match(k.Domain, k.Title, k.Text) {
			add(ContextHit{Source: "knowledge", Time: k.Updated, ID: k.ID, Agent: k.Contributor, Where: k.Domain, Text: k.Text, Path: k.Path})
		}
	}

	// Messages.
	chs, err := messages.AllChannels(s)
	if err != nil && recall.Skipped(err) == nil {
		return nil, err
	}
	skipped = append(skipped, recall.Skipped(err)...)
	for _, c := range chs {
		if !messages.CanRead(s, agent, c.Name) {
			continue
		}
		msgs, err := messages.AllMessages(s, c.Name)
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, m := range msgs {
			if match(m.Text) {
				add(ContextHit{Source: "message", Time: m.Time, ID: m.ID, Agent: m.Sender, Where: c.Name, Text: m.Text, Path: m.Chunk})
			}
		}
	}

	// Notes, on the channels the agent may read.
	for _, c := range chs {
		if !messages.CanRead(s, agent, c.Name) {
			continue
		}
		notes, err := messages.ListNotes(s, agent, c.Name)
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, n := range notes {
			if match(n.Text) {
				add(ContextHit{Source: "note", Time: n.Created, ID: n.ID, Agent: n.Agent, Where: n.Channel, Text: n.Text, Path: n.Path})
			}
		}
	}

	// Questions (not private): the question and its answer.
	qdocs, errs := s.List(schema.Question)
	bad, other := splitBad(errs)
	if len(other) > 0 {
		return nil, other[0]
	}
	skipped = append(skipped, bad...)
	for _, d := range qdocs {
		q := questionFromDoc(d)
		if !match(q.Text, q.Answer) {
			continue
		}
		t := q.Created
		if !q.AnsweredAt.IsZero() {
			t = q.AnsweredAt
		}
		text := q.Text
		if q.Answer != "" {
			text += " — answer: " + q.Answer
		}
		add(ContextHit{Source: "question", Time: t, ID: q.ID, Agent: q.From, Where: q.Status + " to " + q.To, Text: text, Path: q.Path})
	}

	// Queue items, in every state.
	items, err := filepath.Glob(filepath.Join(s.Root(), "queues", "*", "*", "*.md"))
	if err != nil {
		return nil, err
	}
	for _, p := range items {
		rel, err := s.Rel(p)
		if err != nil {
			continue
		}
		k, caps, err := schema.KindOfPath(rel)
		if err != nil || k != schema.Item {
			continue
		}
		d, err := s.Get(rel)
		if err != nil {
			continue // moved while we looked, or broken: `tavern check` reports it
		}
		body := strings.TrimSpace(string(d.Body()))
		if match(d.String("title"), body, d.String("result"), d.String("last_error")) {
			t, ok := d.Time("updated")
			if !ok {
				t, _ = d.Time("created")
			}
			text := d.String("title")
			if text == "" {
				text = body
			}
			add(ContextHit{Source: "item", Time: schema.TimeOf(t), ID: caps["id"], Agent: d.String("claimed_by"),
				Where: caps["queue"] + "/" + caps["state"], Text: text, Path: rel})
		}
	}

	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Time.Before(hits[j].Time.Time) })
	res := &ContextResult{Query: query, Timeline: []ContextHit{}, State: map[string][]ContextHit{}}
	if n := len(hits); n > ContextTimelineMax {
		res.Timeline = append(res.Timeline, hits[n-ContextTimelineMax:]...)
	} else {
		res.Timeline = append(res.Timeline, hits...)
	}
	for i := len(hits) - 1; i >= 0; i-- {
		h := hits[i]
		if len(res.State[h.Source]) < ContextStateMax {
			res.State[h.Source] = append(res.State[h.Source], h)
		}
	}
	if len(skipped) > 0 {
		return res, &docstore.SkippedError{Errs: skipped}
	}
	return res, nil
}

// Text renders the result for a person or a prompt: the timeline, then the
// current state per source. Sections without hits are left out, so an
// empty result renders as "".
func (r *ContextResult) Text() string {
	var w strings.Builder
	if len(r.Timeline) > 0 {
		w.WriteString("## timeline\n")
		for _, h := range r.Timeline {
			w.WriteString(h.line() + "\n")
		}
	}
	first := true
	for _, src := range ContextSources {
		if len(r.State[src]) == 0 {
			continue
		}
		if first {
			if w.Len() > 0 {
				w.WriteString("\n")
			}
			w.WriteString("## current state\n")
			first = false
		}
		w.WriteString(src + ":\n")
		for _, h := range r.State[src] {
			w.WriteString("  " + h.line() + "\n")
		}
	}
	return w.String()
}

func (h ContextHit) line() string {
	who := h.Agent
	if who != "" {
		who = " " + who
	}
	return schema.FormatTime(h.Time.Time) + " " + h.Source + " " + h.Where + who + ": " + oneLine(h.Text, wakeLine)
}
