package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Entry is one moment of a timeline.
type Entry struct {
	Time    schema.Timestamp `json:"time"`
	Kind    string           `json:"kind"` // event | message | commitment | approval | merge | usage
	Type    string           `json:"type"` // the event type, or what the record is
	Actor   string           `json:"actor,omitempty"`
	Attempt int              `json:"attempt,omitempty"`
	Summary string           `json:"summary"`
	Ref     string           `json:"ref,omitempty"` // the document it is about
	Data    map[string]any   `json:"data,omitempty"`
}

// Attempt is one claim of the item: who held it, how it was kept alive
// and how it ended.
type Attempt struct {
	N        int              `json:"attempt"`
	Holder   string           `json:"holder"`
	Liveness string           `json:"liveness,omitempty"` // lease | liveness
	Claimed  schema.Timestamp `json:"claimed"`
	Ended    schema.Timestamp `json:"ended,omitzero"`
	Outcome  string           `json:"outcome,omitempty"` // completed | failed | dead | released | reaped | (open)
	Reason   string           `json:"reason,omitempty"`
}

// Trace is an item's causal history.
type Trace struct {
	Item      string         `json:"item"`
	Queue     string         `json:"queue"`
	Title     string         `json:"title,omitempty"`
	State     string         `json:"state"`
	Path      string         `json:"path"`
	CreatedBy string         `json:"created_by,omitempty"`
	Plan      string         `json:"plan,omitempty"`
	Attempts  []Attempt      `json:"attempts"`
	Gates     []*queues.Gate `json:"gates,omitempty"`
	Merges    []string       `json:"merges,omitempty"` // merge record paths
	Usage     UsageTotal     `json:"usage"`
	Timeline  []Entry        `json:"timeline"`
	Problems  []string       `json:"problems,omitempty"` // what could not be read
}

// UsageTotal sums the usage records of the item.
type UsageTotal struct {
	Runs      int      `json:"runs"`
	Wall      float64  `json:"wall_seconds"`
	CPU       float64  `json:"cpu_seconds"`
	TokensIn  int64    `json:"tokens_in"`
	TokensOut int64    `json:"tokens_out"`
	Cost      *float64 `json:"cost_usd,omitempty"`
}

// Item traces an item: from the journal (every event about it, and the
// gate, merge, usage and plan events that name it), the documents (the
// item, its gates and their approval records, its merge records, its
// usage records), and what the holder of each attempt did while it held
// it: the messages it sent and the commitments it made and had verified.
func Item(b *queues.Broker, id string) (*Trace, error) {
	s := b.Store()
	it, err := b.Get(id)
	if err != nil {
		return nil, err
	}
	t := &Trace{Item: it.ID, Queue: it.Queue, Title: it.Title, State: it.State, Path: it.Path, Plan: it.Plan}
	since := it.Created.Add(-time.Minute)
	if it.Created.IsZero() {
		since = time.Time{}
	}
	var evs []journal.Event
	_, err = journal.Read(s.Root(), journal.Filter{Since: since}, func(e journal.Event, err error) bool {
		if err != nil {
			t.Problems = append(t.Problems, err.Error())
			return true
		}
		if e.Item == id || strings.Contains(e.Path, "/"+id+".md") {
			evs = append(evs, e)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	domainRev := map[string]bool{} // revisions a domain event (item.*) already stands for
	for _, e := range evs {
		if e.Kind == "item" && e.Rev != "" && !strings.HasPrefix(e.Type, "doc.") {
			domainRev[e.Rev] = true
		}
	}
	for _, e := range evs {
		if strings.HasPrefix(e.Type, "doc.") && e.Rev != "" && domainRev[e.Rev] {
			continue // the document write behind an item.* event: said once
		}
		attempt := intOf(e.Data["attempt"])
		ent := Entry{Time: e.Time, Kind: "event", Type: e.Type, Actor: e.Agent, Attempt: attempt, Ref: e.Path, Data: e.Data}
		ent.Summary = summarize(e)
		t.Timeline = append(t.Timeline, ent)
		switch e.Type {
		case queues.EventAdded:
			t.CreatedBy = e.Agent
			if t.CreatedBy == "" {
				t.CreatedBy = e.Writer
			}
		case queues.EventClaimed:
			t.Attempts = append(t.Attempts, Attempt{N: attempt, Holder: e.Agent, Liveness: str(e.Data["claim_kind"]), Claimed: e.Time})
		case queues.EventCompleted, queues.EventFailed, queues.EventDead, queues.EventReleased, queues.EventReaped:
			n := attempt
			if n == 0 {
				n = it.ClaimAttempt
			}
			if a := findAttempt(t.Attempts, n); a != nil && a.Ended.IsZero() {
				a.Ended, a.Outcome = e.Time, strings.TrimPrefix(e.Type, "item.")
				a.Reason = firstLine(str(e.Data["error"]) + str(e.Data["reason"]) + str(e.Data["why"]))
			}
		}
	}
	// While each attempt was held: messages, commitments, verifications.
	for _, a := range t.Attempts {
		if a.Holder == "" || schema.ValidAgentName(a.Holder) != nil {
			continue
		}
		end := a.Ended
		if end.IsZero() {
			end.Time = time.Now().Add(time.Hour)
		}
		msgs, errs := sentBy(s, a.Holder, a.Claimed.Time, end.Time)
		for _, err := range errs {
			t.Problems = append(t.Problems, err.Error())
		}
		for _, m := range msgs {
			t.Timeline = append(t.Timeline, Entry{Time: m.Time, Kind: "message", Type: "message", Actor: m.Sender, Attempt: a.N,
				Summary: fmt.Sprintf("#%s: %s", m.Channel, clip(m.Text, 160)), Ref: m.Chunk})
		}
		t.Timeline = append(t.Timeline, holderEvents(s, a, end.Time)...)
		cs, _ := filepath.Glob(filepath.Join(s.Root(), "commitments", a.Holder, "*.md"))
		for _, p := range cs {
			rel, _ := s.Rel(p)
			d, err := s.Get(rel)
			if err != nil {
				continue
			}
			if c, ok := d.Time("created"); ok && !c.Before(a.Claimed.Time) && !c.After(end.Time) { // end inclusive, as sentBy
				t.Timeline = append(t.Timeline, Entry{Time: schema.TimeOf(c), Kind: "commitment", Type: "commitment", Actor: a.Holder, Attempt: a.N,
					Summary: fmt.Sprintf("%q: %s (status %s)", d.String("description"), d.String("assertion"), d.String("status")), Ref: rel})
			}
		}
	}
	// Gates and their approval records.
	t.Gates = b.ItemGates(it)
	for _, g := range t.Gates {
		if g.Approval == "" {
			continue
		}
		if d, err := s.Get(queues.ApprovalPath(g.Approval)); err == nil {
			at, _ := d.Time("created")
			t.Timeline = append(t.Timeline, Entry{Time: schema.TimeOf(at), Kind: "approval", Type: d.String("decision"), Actor: d.String("by"),
				Summary: fmt.Sprintf("gate %s %s by %s (uid %s, from %s)", g.ID, d.String("decision"), d.String("by"), fmt.Sprint(d.Fields()["uid"]), strings.Join(d.Strings("ancestry"), " < ")), Ref: d.Path})
		}
	}
	// Merge and usage records.
	merges, _ := s.List(schema.Merge)
	for _, d := range merges {
		if d.String("item") != id {
			continue
		}
		t.Merges = append(t.Merges, d.Path)
		at, _ := d.Time("updated")
		sum := fmt.Sprintf("merge of %s into %s: %s", d.String("branch"), d.String("base"), d.String("status"))
		if h := d.String("head"); h != "" && d.String("status") == "landed" {
			sum += " as " + short(h)
		}
		if r := d.String("reason"); r != "" {
			sum += " (" + r + ")"
		}
		t.Timeline = append(t.Timeline, Entry{Time: schema.TimeOf(at), Kind: "merge", Type: "record", Actor: d.String("agent"), Summary: sum, Ref: d.Path})
	}
	recs, _ := s.List(schema.Usage)
	for _, d := range recs {
		if d.String("item") != id {
			continue
		}
		f := d.Fields()
		t.Usage.Runs++
		t.Usage.Wall += num(f["wall_seconds"])
		t.Usage.CPU += num(f["cpu_seconds"])
		in, _ := d.Int("tokens_in")
		out, _ := d.Int("tokens_out")
		t.Usage.TokensIn += in
		t.Usage.TokensOut += out
		if v, ok := f["cost_usd"]; ok && v != nil {
			c := num(v)
			if t.Usage.Cost != nil {
				c += *t.Usage.Cost
			}
			t.Usage.Cost = &c
		}
	}
	sort.SliceStable(t.Timeline, func(i, j int) bool { return t.Timeline[i].Time.Before(t.Timeline[j].Time.Time) })
	for i := range t.Attempts {
		if t.Attempts[i].Ended.IsZero() && it.State == queues.Claimed && it.ClaimAttempt == t.Attempts[i].N {
			t.Attempts[i].Outcome = "held"
		}
	}
	return t, nil
}

// holderEvents are the holder's own journal events during an attempt
// that do not name the item (commitment verifications, questions, state
// changes).
func holderEvents(s *docstore.Store, a Attempt, end time.Time) []Entry {
	var out []Entry
	_, _ = journal.Read(s.Root(), journal.Filter{Agent: a.Holder, Since: a.Claimed.Time, Until: end}, func(e journal.Event, err error) bool {
		if err != nil || e.Item != "" {
			return true
		}
		switch {
		case strings.HasPrefix(e.Type, "commitment."), strings.HasPrefix(e.Type, "question."), e.Type == "agent.state":
			out = append(out, Entry{Time: e.Time, Kind: "event", Type: e.Type, Actor: e.Agent, Attempt: a.N, Summary: summarize(e), Ref: e.Path, Data: e.Data})
		}
		return true
	})
	return out
}

// sentBy lists the messages an agent (or its captured streams,
// "agent:stderr") sent in [from, to], in every channel. The end is
// inclusive: times are kept to the millisecond, and a drone's captured
// output is saved in the millisecond its item is completed.
func sentBy(s *docstore.Store, agent string, from, to time.Time) ([]messages.Message, []error) {
	dirs, err := os.ReadDir(filepath.Join(s.Root(), "messages"))
	if err != nil {
		return nil, nil
	}
	var out []messages.Message
	var errs []error
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		msgs, err := messages.ReadMessages(s, d.Name(), "", 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, m := range msgs {
			who, _, _ := strings.Cut(m.Sender, ":")
			if who == agent && !m.Time.Before(from) && !m.Time.After(to) {
				out = append(out, m)
			}
		}
	}
	return out, errs
}

func findAttempt(as []Attempt, n int) *Attempt {
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].N == n {
			return &as[i]
		}
	}
	return nil
}

// summarize says what an event means in one line.
func summarize(e journal.Event) string {
	d := e.Data
	who := e.Agent
	if who == "" {
		who = "someone"
	}
	switch e.Type {
	case queues.EventAdded:
		s := "added by " + orWriter(e)
		if p := str(d["plan"]); p != "" {
			s += " from plan " + p
		}
		return s
	case queues.EventClaimed:
		return fmt.Sprintf("claimed by %s (attempt %v, %s claim)", who, d["attempt"], d["claim_kind"])
	case queues.EventCompleted:
		if b, _ := d["external"].(bool); b {
			return fmt.Sprintf("completed by hand (%s)", str(d["by"]))
		}
		return fmt.Sprintf("completed by %s (attempt %v)", who, d["attempt"])
	case queues.EventFailed:
		return fmt.Sprintf("attempt %v by %s failed, retry in %v: %s", d["attempt"], who, d["retry_in"], firstLine(str(d["error"])))
	case queues.EventDead:
		return fmt.Sprintf("dead letter after attempt %v: %s", d["attempt"], firstLine(str(d["reason"])))
	case queues.EventReaped:
		return fmt.Sprintf("reaped from %s: %s", who, firstLine(str(d["why"])+str(d["reason"])))
	case queues.EventReleased:
		return fmt.Sprintf("released by %s (attempt %v)", who, d["attempt"])
	case queues.EventRetried:
		return "retried (dead -> pending)"
	case queues.EventCancelled:
		return "cancelled: " + str(d["reason"])
	case queues.EventAnnotated:
		return "recorded " + str(d["fields"])
	case "agent.spawned":
		return fmt.Sprintf("%s spawned (pid %v): %v", who, d["pid"], d["command"])
	case "agent.exited":
		return fmt.Sprintf("%s exited %v: %v (%v)", who, d["exit_code"], d["outcome"], d["duration"])
	case "agent.gated":
		return fmt.Sprintf("%s waits at gate %v", who, d["gates"])
	case "usage.recorded":
		s := fmt.Sprintf("usage: %vs wall, %vs CPU", d["wall_seconds"], d["cpu_seconds"])
		if d["tokens_in"] != nil {
			s += fmt.Sprintf(", %v tokens in, %v out", d["tokens_in"], d["tokens_out"])
		}
		if d["cost_usd"] != nil {
			s += fmt.Sprintf(", $%v", d["cost_usd"])
		}
		return s
	case journal.TypeExternal:
		if c := str(d["change"]); c != "" {
			return "hand edit: " + c
		}
		switch str(d["op"]) {
		case journal.TypeCreated:
			return "created by hand: " + e.Path
		case journal.TypeRemoved:
			return "removed by hand: " + e.Path
		}
		if ch, ok := d["changed"].([]any); ok && len(ch) > 0 {
			fields := make([]string, len(ch))
			for i, f := range ch {
				fields[i] = str(f)
			}
			return fmt.Sprintf("hand edit of %s (%s)", e.Path, strings.Join(fields, ", "))
		}
		return "hand edit of " + e.Path
	}
	if strings.HasPrefix(e.Type, "gate.") || strings.HasPrefix(e.Type, "merge.") || strings.HasPrefix(e.Type, "plan.") {
		var parts []string
		for _, k := range []string{"gate", "by", "reason", "how", "old", "head", "line", "title", "message"} {
			if v, ok := d[k]; ok && v != nil && fmt.Sprint(v) != "" {
				s := fmt.Sprint(v)
				if k == "old" || k == "head" {
					s = short(s)
				}
				if k == "message" { // a sentence of its own
					parts = append(parts, s)
					continue
				}
				parts = append(parts, k+" "+s)
			}
		}
		return strings.Join(parts, ", ")
	}
	if ch, ok := d["changed"]; ok {
		return fmt.Sprintf("%s changed %v", e.Path, ch)
	}
	return e.Path
}

func orWriter(e journal.Event) string {
	if e.Agent != "" {
		return e.Agent
	}
	if e.Writer != "" {
		return "process " + e.Writer
	}
	return "someone"
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func intOf(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case int:
		return x
	case int64:
		return int(x)
	}
	return 0
}

func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// ErrUnknown is returned by At for a reference that names no document,
// now or in the journal.
var ErrUnknown = errors.New("no such document, now or in the journal")
