package kit

import (
	"strconv"
	"strings"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// SearchHit is one result of Search.
type SearchHit struct {
	Source string           `json:"source"` // memory, knowledge, message, note
	ID     string           `json:"id"`
	Where  string           `json:"where"` // topic, domain or channel
	Who    string           `json:"who,omitempty"`
	Time   schema.Timestamp `json:"time"`
	Text   string           `json:"text"`
	Score  float64          `json:"score"`
	Path   string           `json:"path"`
}

// Search ranks what the agent may read — its own memories, all knowledge,
// the messages and notes of the channels it reads (messages.CanRead: its
// @ channel, its descendants', the shared ones) — against query with recall's BM25 index: stems,
// prefixes, titles weighted up, multi-word queries rewarding entries that
// have more of the words. Best first, at most limit (default 10).
// Memory, knowledge, channel, message chunk and note files that do not
// parse hide nothing else: they are skipped, and the hits are returned
// with a *docstore.SkippedError naming each (path:line:col), as recall's
// listings and agents.Context do.
func Search(e *Env, agent, query string, limit int) ([]SearchHit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, &Error{Op: "search", Err: ErrBlankQuery}
	}
	if limit <= 0 {
		limit = 10
	}
	var entries []recall.IndexEntry
	var hits []SearchHit
	addEntry := func(h SearchHit, e recall.IndexEntry) {
		e.ID = strconv.Itoa(len(hits)) // ids repeat across sources: index by position
		entries = append(entries, e)
		hits = append(hits, h)
	}
	var skipped []error
	s := e.Store
	if agent != "" {
		mems, err := recall.ListMemory(s, agent, recall.MemoryFilter{})
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, m := range mems {
			addEntry(SearchHit{Source: "memory", ID: m.ID, Where: m.Topic, Who: m.Agent, Time: m.Updated, Text: m.Text, Path: m.Path},
				recall.IndexEntry{Text: m.Text, Tags: strings.ReplaceAll(m.Topic, "-", " ")})
		}
	}
	ks, err := recall.ListKnowledge(s, recall.KnowledgeFilter{})
	if err != nil && recall.Skipped(err) == nil {
		return nil, err
	}
	skipped = append(skipped, recall.Skipped(err)...)
	for _, k := range ks {
		addEntry(SearchHit{Source: "knowledge", ID: k.ID, Where: k.Domain, Who: k.Contributor, Time: k.Updated, Text: k.Text, Path: k.Path},
			recall.IndexEntry{Title: k.Title, Text: k.Text, Tags: k.Domain})
	}
	chs, err := messages.AllChannels(s)
	if err != nil && recall.Skipped(err) == nil {
		return nil, err
	}
	skipped = append(skipped, recall.Skipped(err)...)
	for _, c := range chs {
		// Without an identity the caller is an agent tool that names
		// nobody, not the person CanRead lets read everything: no direct
		// channel is its own.
		if !messages.CanRead(s, agent, c.Name) || agent == "" && strings.HasPrefix(c.Name, "@") {
			continue
		}
		msgs, err := messages.AllMessages(s, c.Name)
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, m := range msgs {
			addEntry(SearchHit{Source: "message", ID: m.ID, Where: c.Name, Who: m.Sender, Time: m.Time, Text: m.Text, Path: m.Chunk},
				recall.IndexEntry{Text: m.Text})
		}
		notes, err := messages.ListNotes(s, agent, c.Name)
		if err != nil && recall.Skipped(err) == nil {
			return nil, err
		}
		skipped = append(skipped, recall.Skipped(err)...)
		for _, n := range notes {
			addEntry(SearchHit{Source: "note", ID: n.ID, Where: n.Channel, Who: n.Agent, Time: n.Created, Text: n.Text, Path: n.Path},
				recall.IndexEntry{Text: n.Text})
		}
	}
	ix := recall.BuildIndex(entries)
	out := []SearchHit{}
	for _, h := range ix.Search(query, limit) {
		i, _ := strconv.Atoi(h.ID)
		hit := hits[i]
		hit.Score = h.Score
		out = append(out, hit)
	}
	if len(skipped) > 0 {
		return out, &docstore.SkippedError{Errs: skipped}
	}
	return out, nil
}
