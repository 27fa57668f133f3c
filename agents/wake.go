package agents

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Wake limits: the briefing is pasted into an LLM's first prompt, so every
// list is short and every entry one line. Core memories are never cut:
// they are what the agent is; only the sleep summaries among them (topic
// SummaryTopic, one per sleep) are limited to the newest WakeSummaryMax.
const (
	WakeRecentWindow    = 7 * 24 * time.Hour
	WakeRecentMax       = 20
	WakeSummaryMax      = 3
	WakeKnowledgeWindow = 24 * time.Hour
	wakeLine            = 160 // characters of an entry shown
)

// SummaryTopic is the topic of the core memory Sleep writes.
const SummaryTopic = "summary"

// WakeDomains are the knowledge domains a briefing includes.
var WakeDomains = []string{"decision", "architecture"}

// Briefing is what `tavern wake` tells an agent at the start of a session.
type Briefing struct {
	Agent     string              `json:"agent"`
	Spawns    int64               `json:"spawns"`
	LastSleep *schema.Timestamp   `json:"last_sleep,omitempty"`
	Core      []*recall.Memory    `json:"core"`
	Recent    []*recall.Memory    `json:"recent"`
	Unread    []messages.Unread   `json:"unread"`
	Suggested string              `json:"suggested_channel,omitempty"`
	Knowledge []*recall.Knowledge `json:"knowledge"`
	Items     []WakeItem          `json:"items"`
	Questions []WakeQuestion      `json:"questions"`
}

// WakeItem is a queue item claimed by the agent.
type WakeItem struct {
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	Title   string `json:"title,omitempty"`
	Attempt int64  `json:"attempt,omitempty"` // the claim's fencing token (item done --attempt)
	Path    string `json:"path"`
	// LeaseUntil is when a claim taken as a lease (no session or spawn
	// keeps the agent alive) lapses unless renewed; "" for a claim tied
	// to the agent's life.
	LeaseUntil string `json:"lease_until,omitempty"`
}

// WakeQuestion is an open question addressed to the agent.
type WakeQuestion struct {
	ID       string `json:"id"`
	From     string `json:"from,omitempty"`
	Priority int64  `json:"priority,omitempty"`
	Text     string `json:"text"`
	Path     string `json:"path"`
}

// Wake starts a session of the agent (agents/<agent>.md must exist) and
// assembles its briefing as of now. It counts the session in spawns unless
// a process holds the agent's liveness lock: then a spawn wrapper (or a
// hook session keeper) started this session and counted it already, and a
// child that runs `tavern wake` must not count it twice. Memory and
// knowledge files that do not parse are skipped: the briefing is then
// returned with a *recall.SkippedError naming them.
func Wake(s *docstore.Store, agent string, now time.Time) (*Briefing, error) {
	if err := schema.ValidAgentName(agent); err != nil {
		return nil, err
	}
	rel, err := schema.Agent.Path(agent, nil)
	if err != nil {
		return nil, err
	}
	held, err := LockHeld(s, schema.AgentLockKey(agent))
	if err != nil {
		return nil, err
	}
	var d *docstore.Doc
	if held {
		d, err = s.Get(rel)
	} else {
		d, err = s.Update(rel, func(d *docstore.Doc) error {
			n, _ := d.Int("spawns")
			return d.SetMany([]docstore.Field{{Key: "spawns", Value: n + 1}, {Key: "updated", Value: now}})
		})
	}
	if err != nil {
		return nil, err
	}
	b := &Briefing{Agent: agent, Core: []*recall.Memory{}, Recent: []*recall.Memory{}, Unread: []messages.Unread{}, Knowledge: []*recall.Knowledge{},
		Items: []WakeItem{}, Questions: []WakeQuestion{}}
	b.Spawns, _ = d.Int("spawns")
	if t, ok := d.Time("last_sleep"); ok {
		b.LastSleep = &schema.Timestamp{Time: t}
	}
	mems, err := recall.ListMemory(s, agent, recall.MemoryFilter{})
	skipped := recall.Skipped(err) // files that do not parse: brief with the rest
	if err != nil && skipped == nil {
		return nil, err
	}
	summaries := 0
	for _, m := range mems { // core first, then newest first
		switch {
		case m.Core && m.Topic == SummaryTopic:
			if summaries < WakeSummaryMax {
				b.Core = append(b.Core, m)
			}
			summaries++
		case m.Core:
			b.Core = append(b.Core, m)
		case len(b.Recent) < WakeRecentMax && !m.Created.Before(now.Add(-WakeRecentWindow)):
			b.Recent = append(b.Recent, m)
		}
	}
	unread, err := messages.Inbox(s, agent)
	if err != nil {
		bad := recall.Skipped(err) // a broken chunk: brief with the other counts
		if bad == nil {
			return nil, err
		}
		skipped = append(skipped, bad...)
	}
	for _, u := range unread {
		if u.Count > 0 {
			b.Unread = append(b.Unread, u)
		}
	}
	if len(b.Unread) > 0 {
		b.Suggested = b.Unread[0].Channel // highest unread count
	}
	if b.Knowledge, err = recall.ListKnowledge(s, recall.KnowledgeFilter{Domains: WakeDomains, Since: now.Add(-WakeKnowledgeWindow)}); err != nil {
		bad := recall.Skipped(err)
		if bad == nil {
			return nil, err
		}
		skipped = append(skipped, bad...)
	}
	if b.Knowledge == nil {
		b.Knowledge = []*recall.Knowledge{}
	}
	if b.Items, err = ClaimedItems(s, agent); err != nil {
		return nil, err
	}
	if b.Questions, err = OpenQuestions(s, agent); err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		return b, &recall.SkippedError{Errs: skipped}
	}
	return b, nil
}

// ClaimedItems lists queues/*/claimed/*.md whose claimed_by is agent.
// Only the files that mention agent are parsed (docstore.Store.Grep): a
// hook asks on every stop, and most claims are other agents'.
func ClaimedItems(s *docstore.Store, agent string) ([]WakeItem, error) {
	qs, err := s.Subdirs("queues", nil)
	if err != nil {
		return nil, err
	}
	out := []WakeItem{}
	for _, q := range qs {
		docs, errs := s.Grep("queues/"+q+"/claimed", agent)
		if len(errs) > 0 {
			return nil, errs[0]
		}
		for _, d := range docs {
			if d.String("claimed_by") != agent {
				continue
			}
			_, caps, _ := schema.KindOfPath(d.Path)
			attempt, _ := d.Int("claim_attempt")
			it := WakeItem{ID: caps["id"], Queue: caps["queue"], Title: d.String("title"), Attempt: attempt, Path: d.Path}
			if until, ok := d.Time("lease_until"); ok && d.String("claim_kind") == "lease" {
				it.LeaseUntil = schema.FormatTime(until)
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// OpenQuestions lists questions to agent with status open, highest
// priority (lowest number) first.
func OpenQuestions(s *docstore.Store, agent string) ([]WakeQuestion, error) {
	docs, errs := s.Grep("questions", agent) // only those that name agent can be to it
	if len(errs) > 0 {
		return nil, errs[0]
	}
	out := []WakeQuestion{}
	for _, d := range docs {
		if d.String("to") != agent || (d.Has("status") && d.String("status") != "open") {
			continue
		}
		p, _ := d.Int("priority")
		out = append(out, WakeQuestion{ID: d.Name, From: d.String("from"), Priority: p, Text: strings.TrimSpace(string(d.Body())), Path: d.Path})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out, nil
}

// Sleep ends a session: it stores summary as a core memory of topic
// "summary" and records last_sleep on the agent document.
func Sleep(s *docstore.Store, agent, summary string, now time.Time) (*recall.Memory, error) {
	rel, err := schema.Agent.Path(agent, nil)
	if err != nil {
		return nil, err
	}
	if _, err := s.Get(rel); err != nil {
		return nil, err
	}
	m, err := recall.AddMemory(s, agent, SummaryTopic, summary, true)
	if err != nil {
		return nil, err
	}
	if _, err := s.Update(rel, func(d *docstore.Doc) error {
		if err := d.Set("last_sleep", now); err != nil {
			return err
		}
		return d.Set("updated", now)
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// LockHeld reports whether another process (or another lock handle) holds
// the lock key. The probe shares the lock (docstore.Store.LockFree): two
// probes never take each other for a holder.
func LockHeld(s *docstore.Store, key string) (bool, error) {
	free, err := s.LockFree(key)
	return !free && err == nil, err
}

// oneLine shortens text to its first line and at most n characters.
func oneLine(text string, n int) string {
	line, _, more := strings.Cut(strings.TrimSpace(text), "\n")
	r := []rune(line)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

// Text renders the briefing compactly for an LLM prompt. Empty sections
// are left out.
func (b *Briefing) Text() string {
	var w strings.Builder
	fmt.Fprintf(&w, "# %s (wake %d)\n", b.Agent, b.Spawns)
	if b.LastSleep != nil {
		fmt.Fprintf(&w, "last sleep: %s\n", schema.FormatTime(b.LastSleep.Time))
	}
	if len(b.Core) > 0 {
		w.WriteString("\n## core memories\n")
		for _, m := range b.Core {
			fmt.Fprintf(&w, "- [%s] %s\n", m.Topic, oneLine(m.Text, wakeLine))
		}
	}
	if len(b.Recent) > 0 {
		w.WriteString("\n## recent memories\n")
		for _, m := range b.Recent {
			fmt.Fprintf(&w, "- %s [%s] %s\n", m.Created.UTC().Format("01-02"), m.Topic, oneLine(m.Text, wakeLine))
		}
	}
	if len(b.Unread) > 0 {
		w.WriteString("\n## unread\n")
		parts := make([]string, len(b.Unread))
		for i, u := range b.Unread {
			parts[i] = fmt.Sprintf("%s %d", u.Channel, u.Count)
		}
		fmt.Fprintf(&w, "%s; start with: tavern recv %s\n", strings.Join(parts, ", "), b.Suggested)
	}
	if len(b.Knowledge) > 0 {
		w.WriteString("\n## new knowledge\n")
		for _, k := range b.Knowledge {
			fmt.Fprintf(&w, "- [%s] %s (%s)\n", k.Domain, oneLine(k.Text, wakeLine), k.Contributor)
		}
	}
	if len(b.Items) > 0 {
		w.WriteString("\n## your open items\n")
		for _, it := range b.Items {
			lease := ""
			if it.LeaseUntil != "" {
				// A lease lapses and the item goes back to the queue: the
				// agent holding it must know to renew it.
				lease = fmt.Sprintf(" (a lease until %s: renew it, `tavern item renew %s --attempt %d --as %s`)", it.LeaseUntil, it.ID, it.Attempt, b.Agent)
			}
			fmt.Fprintf(&w, "- %s/%s %s%s\n", it.Queue, it.ID, it.Title, lease)
		}
	}
	if len(b.Questions) > 0 {
		w.WriteString("\n## open questions to you\n")
		for _, q := range b.Questions {
			fmt.Fprintf(&w, "- %s from %s: %s\n", q.ID, q.From, oneLine(q.Text, wakeLine))
		}
	}
	return w.String()
}
