package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/watcher/journal"
)

// A row is one line of a list pane and what selecting it shows and allows.
type row struct {
	key      string        // stable across snapshots: keeps the selection
	text     string        // the list line
	kind     string        // for styling: a need kind, an agent state...
	header   bool          // a group heading, not selectable
	path     string        // the document behind it (edit)
	detail   func() pane   // what the detail pane shows
	actions  []view.Action // what the action keys do here
	channel  string        // for m: where a message goes
	archived bool          // the channel is archived: closed to m
}

// A pane is the content of the detail pane: a title shown as typed (an
// item's title is text, not markdown: `*x*` or `# x` must read as the
// person wrote it) and a body rendered as markdown.
type pane struct {
	title string
	body  string
}

// Tabs, in order; the number keys select them.
const (
	tabNeeds = iota
	tabAgents
	tabQueues
	tabMessages
	tabJournal
	tabResources
	numTabs
)

var tabNames = [numTabs]string{"Needs you", "Agents", "Queues", "Messages", "Journal", "Resources"}

// rows builds the rows of tab from the snapshot.
func (m *Model) rows(tab int) []row {
	s := m.snap
	if s == nil {
		return nil
	}
	switch tab {
	case tabNeeds:
		return m.needRows(s)
	case tabAgents:
		return m.agentRows(s)
	case tabQueues:
		return m.queueRows(s)
	case tabMessages:
		return m.channelRows(s)
	case tabJournal:
		return journalRows(s)
	case tabResources:
		return resourceRows(s)
	}
	return nil
}

func (m *Model) needRows(s *view.Snapshot) []row {
	out := make([]row, 0, len(s.Needs))
	for _, n := range s.Needs {
		n := n
		r := row{key: n.Key, text: fmt.Sprintf("%-11s %s", n.Kind, n.What), kind: n.Kind, path: n.Path, actions: n.Actions}
		for _, a := range n.Actions {
			if a.Name == view.ActSend {
				r.channel = a.Target
			}
		}
		r.detail = func() pane { return needPane(s, n) }
		out = append(out, r)
	}
	return out
}

func needPane(s *view.Snapshot, n view.Need) pane {
	var b strings.Builder
	fmt.Fprintf(&b, "**Why:** %s\n\n**Do:** %s\n\n", n.Why, n.Do)
	if n.Text != "" {
		fmt.Fprintf(&b, "%s\n\n", n.Text)
	}
	if n.Path != "" {
		fmt.Fprintf(&b, "Document: `%s`", n.Path)
		if !n.Since.IsZero() {
			fmt.Fprintf(&b, " · since %s ago", view.Age(s.Time.Time, n.Since.Time))
		}
		b.WriteString("\n\n")
	}
	if len(n.Actions) > 0 {
		b.WriteString("**Actions:** ")
		for i, a := range n.Actions {
			if i > 0 {
				b.WriteString(" · ")
			}
			fmt.Fprintf(&b, "`%s` %s", actionKey(a.Name), a.Label)
		}
		b.WriteString("\n")
	}
	return pane{n.What, b.String()}
}

func (m *Model) agentRows(s *view.Snapshot) []row {
	out := make([]row, 0, len(s.Agents))
	for _, a := range s.Agents {
		a := a
		alive := " "
		if a.Alive {
			alive = "●"
		}
		last := ""
		if !a.LastActivity.IsZero() {
			last = view.Age(s.Time.Time, a.LastActivity.Time)
		}
		r := row{key: "agent:" + a.Name, text: fmt.Sprintf("%s %-16s %-9s %-5s %s%s", alive, a.Name, a.State, last, strings.Join(a.Claims, " "), invalidMark(a.Valid)),
			kind: a.State, path: a.Path, channel: "@" + a.Name}
		if a.State == "failed" {
			r.actions = append(r.actions, view.Action{Name: view.ActRespawn, Label: "Respawn (to idle)", Target: a.Name, Confirm: "Move " + a.Name + " from failed to idle?"})
		}
		r.detail = func() pane { return m.agentPane(s, a) }
		out = append(out, r)
	}
	return out
}

// invalidMark flags a row whose document is invalid: its fields are only
// what could be salvaged, and nothing uses it until it is fixed.
func invalidMark(valid bool) string {
	if valid {
		return ""
	}
	return " [invalid]"
}

func (m *Model) agentPane(s *view.Snapshot, a view.Agent) pane {
	var b strings.Builder
	fmt.Fprintf(&b, "- role: %s\n- parent: %s\n- queues: %s\n", a.Role, a.Parent, strings.Join(a.Queues, ", "))
	if a.Alive {
		fmt.Fprintf(&b, "- process: running on %s (pid %d)\n", a.Host, a.PID)
	}
	if len(a.Claims) > 0 {
		fmt.Fprintf(&b, "- claims: %s\n", strings.Join(a.Claims, ", "))
	}
	if a.Commitments != "" {
		fmt.Fprintf(&b, "- commitments: %s\n", a.Commitments)
	}
	if inbox, err := m.v.Inbox(a.Name); err == nil && len(inbox) > 0 {
		b.WriteString("- inbox:")
		for _, u := range inbox {
			fmt.Fprintf(&b, " %s (%d unread)", u.Channel, u.Count)
		}
		b.WriteString("\n")
	}
	if d, err := m.v.Doc(a.Path, false); err == nil && strings.TrimSpace(d.Body) != "" {
		fmt.Fprintf(&b, "\n%s\n", d.Body)
	}
	if ms, err := m.v.Messages("@"+a.Name, 10); err == nil && len(ms) > 0 {
		b.WriteString("\n## Recent output and messages\n\n")
		for _, msg := range ms {
			fmt.Fprintf(&b, "**%s** %s\n\n%s\n\n", msg.Sender, msg.Time.Local().Format("15:04:05"), msg.Text)
		}
	}
	return pane{a.Name + " · " + a.State, b.String()}
}

// searchLimit bounds the items a filter finds in one board column.
const searchLimit = 200

func (m *Model) queueRows(s *view.Snapshot) []row {
	var out []row
	for _, q := range s.Queues {
		q := q
		out = append(out, row{key: "queue:" + q.Name, header: true,
			text: fmt.Sprintf("%s  pending %d · claimed %d · done %d · dead %d · %.1f/min", q.Name, q.Pending, q.Claimed, q.Done, q.Dead, q.Throughput)})
		for _, c := range q.Columns {
			if c.Total == 0 {
				continue
			}
			out = append(out, row{key: "col:" + q.Name + "/" + c.State, header: true, kind: c.State, text: fmt.Sprintf("  %s (%d)", strings.ToUpper(c.State), c.Total)})
			items, more := c.Items, c.Total-len(c.Items)
			if f := m.filter[tabQueues]; f != "" && more > 0 {
				// The column shows its first items only: a filter searches
				// them all, or the rest could never be found here.
				items = m.v.SearchItems(q.Name, c.State, f, searchLimit)
				more = 0
				if len(items) == searchLimit {
					more = -1
				}
			}
			for _, it := range items {
				it := it
				title := it.Title
				if title == "" {
					title = it.ID
				}
				who := ""
				if it.ClaimedBy != "" {
					who = " · " + it.ClaimedBy
				}
				r := row{key: "item:" + it.ID, kind: it.State, path: it.Path, text: fmt.Sprintf("    p%02d %s%s%s", it.Priority, title, who, invalidMark(it.Valid))}
				switch it.State {
				case "dead":
					r.actions = []view.Action{{Name: view.ActRetry, Label: "Retry", Target: it.ID, Queue: it.Queue, Confirm: "Move " + it.ID + " back to pending with its attempts reset?"}}
				case "claimed":
					r.actions = []view.Action{{Name: view.ActRelease, Label: "Release", Target: it.ID, Attempt: it.ClaimAttempt,
						Confirm: fmt.Sprintf("Release %s (attempt %d, held by %s) back to pending?", it.ID, it.ClaimAttempt, it.ClaimedBy)}}
				}
				r.detail = func() pane { return m.itemPane(it) }
				out = append(out, r)
			}
			switch {
			case more > 0:
				out = append(out, row{key: "more:" + q.Name + "/" + c.State, header: true, text: fmt.Sprintf("    … %d more", more)})
			case more < 0:
				out = append(out, row{key: "more:" + q.Name + "/" + c.State, header: true, text: fmt.Sprintf("    … the first %d matches; narrow the filter for the rest", searchLimit)})
			}
		}
	}
	return out
}

func (m *Model) itemPane(it view.Item) pane {
	var b strings.Builder
	title := it.Title
	if title == "" {
		title = it.ID
	}
	fmt.Fprintf(&b, "- id: `%s`\n- queue: %s · state: **%s** · priority %d · attempts %d\n", it.ID, it.Queue, it.State, it.Priority, it.Attempts)
	if it.ClaimedBy != "" {
		fmt.Fprintf(&b, "- claimed by %s (attempt %d, %s)\n", it.ClaimedBy, it.ClaimAttempt, it.ClaimKind)
	}
	if it.LastError != "" {
		fmt.Fprintf(&b, "- last error: %s\n", it.LastError)
	}
	if it.DeadReason != "" {
		fmt.Fprintf(&b, "- dead: %s\n", it.DeadReason)
	}
	if it.Result != "" {
		fmt.Fprintf(&b, "- result: %s\n", it.Result)
	}
	if d, err := m.v.Doc(it.Path, false); err == nil {
		fmt.Fprintf(&b, "\n%s\n", d.Body)
	}
	return pane{title, b.String()}
}

func (m *Model) channelRows(s *view.Snapshot) []row {
	out := make([]row, 0, len(s.Channels))
	for _, c := range s.Channels {
		c := c
		last := ""
		if !c.Last.IsZero() {
			last = view.Age(s.Time.Time, c.Last.Time)
		}
		r := row{key: "channel:" + c.Name, text: fmt.Sprintf("%-20s %5d  %s", c.Name, c.Messages, last), path: c.Path, channel: c.Name, archived: c.Archived}
		if c.Archived {
			r.text += "  (archived)"
		}
		r.detail = func() pane {
			var b strings.Builder
			if c.Archived {
				b.WriteString("Archived: kept and readable, closed to new messages.\n\n")
			}
			if c.Topic != "" {
				fmt.Fprintf(&b, "%s\n\n", c.Topic)
			}
			ms, err := m.v.Messages(c.Name, 50)
			if err != nil {
				fmt.Fprintf(&b, "error: %v\n", err)
			}
			for _, msg := range ms {
				fmt.Fprintf(&b, "**%s** %s\n\n%s\n\n", msg.Sender, msg.Time.Local().Format("01-02 15:04:05"), msg.Text)
			}
			return pane{c.Name, b.String()}
		}
		out = append(out, r)
	}
	return out
}

func journalRows(s *view.Snapshot) []row {
	out := make([]row, 0, len(s.Journal))
	for i := len(s.Journal) - 1; i >= 0; i-- {
		e := s.Journal[i]
		out = append(out, row{key: "event:" + e.ID, text: fmt.Sprintf("%s %-18s %-10s %s", e.Time.Local().Format("15:04:05"), e.Type, e.Agent, e.Path),
			path: docPath(e), detail: func() pane { return eventPane(e) }})
	}
	return out
}

func docPath(e journal.Event) string {
	if strings.HasSuffix(e.Path, ".md") {
		return e.Path
	}
	return ""
}

func eventPane(e journal.Event) pane {
	b, _ := json.MarshalIndent(e, "", "  ")
	return pane{e.Type, "```json\n" + string(b) + "\n```\n"}
}

func resourceRows(s *view.Snapshot) []row {
	var out []row
	out = append(out, row{key: "h:res", header: true, text: fmt.Sprintf("RESERVATIONS (%d)", len(s.Reservations))})
	for _, r := range s.Reservations {
		r := r
		exp := "until released"
		if !r.Expires.IsZero() {
			exp = "until " + r.Expires.Local().Format("15:04:05")
		}
		out = append(out, row{key: "res:" + r.ID, text: fmt.Sprintf("  %-14s %s  %s", r.Agent, r.Glob, exp), path: r.Path,
			detail: func() pane {
				return pane{r.Glob, fmt.Sprintf("- agent: %s\n- reason: %s\n- %s\n", r.Agent, r.Reason, exp)}
			}})
	}
	out = append(out, row{key: "h:tok", header: true, text: fmt.Sprintf("TOKENS (slots: %d)", len(s.Tokens))})
	for _, t := range s.Tokens {
		t := t
		st := "held by " + t.HeldBy
		if t.Free {
			st = "free"
		}
		out = append(out, row{key: fmt.Sprintf("tok:%s/%d", t.Token, t.Slot), text: fmt.Sprintf("  %-14s slot %d  %s", t.Token, t.Slot, st), path: t.Path,
			detail: func() pane {
				return pane{fmt.Sprintf("%s slot %d", t.Token, t.Slot), fmt.Sprintf("- %s\n- hold: %s\n- epoch: %d\n", st, t.Hold, t.Epoch)}
			}})
	}
	out = append(out, row{key: "h:pool", header: true, text: fmt.Sprintf("POOLS (%d)", len(s.Pools))})
	for _, p := range s.Pools {
		p := p
		out = append(out, row{key: "pool:" + p.Name, text: fmt.Sprintf("  %-14s %-8s drones %d/%d  done %d  %.1f/min", p.Name, p.StateText(), p.Drones, p.Max, p.ItemsDone, p.Throughput), path: p.Path,
			detail: func() pane {
				return pane{"pool " + p.Name, fmt.Sprintf("- state: %s\n- queues: %s\n- drones: %d (min %d, max %d, peak %d)\n- spawned %d, crashed %d\n- items done %d, failed %d\n- throughput %.1f/min, utilization %.0f%%, amplification %.2f\n",
					p.StateText(), strings.Join(p.Queues, ", "), p.Drones, p.Min, p.Max, p.PeakDrones, p.Spawned, p.Crashed, p.ItemsDone, p.ItemsFailed, p.Throughput, p.Utilization*100, p.Amplification)}
			}})
	}
	return out
}
