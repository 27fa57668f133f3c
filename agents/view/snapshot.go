package view

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// Lists that only grow (answered questions, passed commitments) are cut
// to their newest entries; open and failing ones are always all there.
const (
	keepAnswered = 50
	keepPassed   = 100
)

func (v *View) snapshot(ver uint64) (*Snapshot, error) {
	now := v.opt.Now()
	mode := "snapshot"
	if v.opt.Watch {
		mode = v.p.Mode()
	}
	s := &Snapshot{Time: schema.TimeOf(now), Root: v.s.Root(), Person: v.opt.Person, Version: ver, Documents: v.p.Len(), Mode: mode}
	kinds := map[string][]watcher.Entry{}
	for _, k := range []string{"agent", "queue", "question", "commitment", "channel", "chunk", "pool", "tuple"} {
		ents, err := v.p.Query(watcher.Query{Kind: k})
		if err != nil {
			return nil, err
		}
		kinds[k] = ents
	}
	v.mu.Lock()
	invalid := make([]string, 0, len(v.items.invalid))
	for p := range v.items.invalid {
		invalid = append(invalid, p)
	}
	v.mu.Unlock()
	sort.Strings(invalid)
	for _, rel := range invalid {
		if e, ok := v.p.Get(rel); ok && !e.Valid {
			s.Invalid = append(s.Invalid, invalidOf(e))
		}
	}

	claims := v.queuesOf(s, kinds["queue"], now)
	s.Questions = questionsOf(kinds["question"])
	s.Commitments = commitmentsOf(kinds["commitment"])
	s.Agents = v.agentsOf(kinds["agent"], claims, s.Questions, s.Commitments)
	s.Channels = channelsOf(kinds["channel"], kinds["chunk"])
	s.Pools = poolsOf(kinds["pool"])
	for i := range s.Pools {
		p := &s.Pools[i]
		switch p.State {
		case "running", "paused", "draining":
			p.Dead = v.m != nil && p.host == v.m.Host && !v.alive(schema.PoolLockKey(p.Name))
		}
	}
	s.Reservations = reservationsOf(kinds["tuple"], now)
	if slots, err := v.sp.Slots(""); err == nil {
		for _, t := range slots {
			s.Tokens = append(s.Tokens, TokenSlot{Token: t.Name, Slot: t.Slot, Epoch: t.Epoch, Free: t.Free, HeldBy: t.HeldBy,
				Hold: t.Hold, Acquired: t.Acquired, LeaseUntil: t.LeaseUntil, Path: t.Path})
		}
	}
	v.mu.Lock()
	s.Journal = slices.Clone(v.timeline)
	v.mu.Unlock()
	s.Needs = v.needs(s, claims, now)
	return s, nil
}

func invalidOf(e watcher.Entry) Invalid {
	inv := Invalid{Path: e.Path, Kind: e.Kind, Problem: e.Path + ": invalid"}
	for i, p := range e.Errors {
		if i == 0 {
			inv.Line, inv.Col, inv.Problem = p.Line, p.Col, p.Msg
			continue
		}
		inv.More = append(inv.More, p.Msg)
	}
	return inv
}

// claimed is a claimed item with what the Needs lens needs to judge it.
type claimed struct {
	Item
	LivenessLock string
	HungSince    time.Time
	LeaseGrace   time.Duration
}

// queuesOf fills s.Queues from the queue documents and the item index and
// returns the claimed items.
func (v *View) queuesOf(s *Snapshot, docs []watcher.Entry, now time.Time) []claimed {
	type qdoc struct {
		e     watcher.Entry
		grace time.Duration
	}
	qdocs := map[string]qdoc{}
	for _, e := range docs {
		name := strings.TrimSuffix(strings.TrimPrefix(e.Path, "queues/"), "/queue.md")
		grace, err := time.ParseDuration(fstr(e.Fields, "lease_grace"))
		if err != nil {
			grace = 30 * time.Second
		}
		qdocs[name] = qdoc{e, grace}
	}
	perMin := map[string]float64{}
	v.mu.Lock()
	cut := 0
	for cut < len(v.completed) && now.Sub(v.completed[cut].at) > ThroughputWindow {
		cut++
	}
	v.completed = v.completed[cut:]
	for _, c := range v.completed {
		perMin[c.queue] += 1 / ThroughputWindow.Minutes()
	}
	ix := v.items
	names := make([]string, 0, len(qdocs)+len(ix.queues))
	for n := range qdocs {
		names = append(names, n)
	}
	for n := range ix.queues {
		if _, ok := qdocs[n]; !ok {
			names = append(names, n)
		}
	}
	// Ids per column, chosen under the lock; fields read after it.
	type cols struct {
		ids    [len(itemStates)][]string
		totals [len(itemStates)]int
		oldest string
	}
	picked := map[string]*cols{}
	for _, name := range names {
		c := &cols{}
		if qi := ix.queues[name]; qi != nil {
			for i, set := range qi.ids {
				c.totals[i] = len(set)
				c.ids[i] = slices.Clone(ix.column(qi, i))
			}
			c.oldest = ix.oldestPending(qi)
		}
		picked[name] = c
	}
	v.mu.Unlock()

	sort.Slice(names, func(i, j int) bool {
		pi, pj := fint(qdocs[names[i]].e.Fields, "priority"), fint(qdocs[names[j]].e.Fields, "priority")
		if pi != pj {
			return pi < pj
		}
		return names[i] < names[j]
	})
	var out []claimed
	for _, name := range names {
		qd := qdocs[name]
		c := picked[name]
		q := Queue{Name: name, Priority: fint(qd.e.Fields, "priority"), OnEmpty: fstr(qd.e.Fields, "on_empty"), Path: qd.e.Path,
			Pending: c.totals[0], Claimed: c.totals[1], Done: c.totals[2], Dead: c.totals[3], Throughput: perMin[name]}
		q.Steal = qd.e.Fields == nil || qd.e.Fields["steal"] == nil || fbool(qd.e.Fields, "steal")
		if c.oldest != "" {
			if it, ok := v.item(name, queues.Pending, c.oldest); ok {
				q.OldestPending = it.Created
			}
		}
		for i, st := range itemStates {
			col := Column{State: st, Total: c.totals[i], Items: []Item{}}
			for _, id := range c.ids[i] {
				it, ok := v.item(name, st, id)
				if !ok {
					continue // moved since it was picked
				}
				col.Items = append(col.Items, it.Item)
				if st == queues.Claimed {
					if q.Owners == nil {
						q.Owners = map[string]int{}
					}
					q.Owners[it.ClaimedBy]++
					if !it.LeaseUntil.IsZero() && now.After(it.LeaseUntil.Time) {
						q.Hung++
					}
					it.LeaseGrace = qd.grace
					out = append(out, it)
				}
			}
			q.Columns = append(q.Columns, col)
		}
		s.Queues = append(s.Queues, q)
	}
	return out
}

// item reads one item's fields from the projection.
func (v *View) item(queue, state, id string) (claimed, bool) {
	e, ok := v.p.Get(queues.ItemPath(queue, state, id))
	if !ok {
		return claimed{}, false
	}
	f := e.Fields
	it := claimed{Item: Item{ID: id, Queue: queue, State: state, Title: fstr(f, "title"), Priority: fint(f, "priority"),
		Attempts: fint(f, "attempts"), ClaimedBy: fstr(f, "claimed_by"), ClaimAttempt: fint(f, "claim_attempt"),
		ClaimKind: fstr(f, "claim_kind"), LeaseUntil: schema.TimeOf(ftime(f, "lease_until")), NotBefore: schema.TimeOf(ftime(f, "not_before")),
		Created: schema.TimeOf(ftime(f, "created")), Completed: schema.TimeOf(ftime(f, "completed")), DependsOn: fstrings(f, "depends_on"),
		LastError: fstr(f, "last_error"), DeadReason: fstr(f, "dead_reason"), Result: fstr(f, "result"),
		Path: e.Path, Rev: e.Rev, Valid: e.Valid},
		LivenessLock: fstr(f, "liveness_lock"), HungSince: ftime(f, "hung_since")}
	if it.Priority == 0 {
		if p, ok := queues.IDPriority(id); ok {
			it.Priority = p
		}
	}
	return it, true
}

// alive reports whether a process holds the lock key: the liveness test
// the reapers use (a free flock is a dead holder). A lock file that does
// not exist has no holder; it is not created just to look.
func (v *View) alive(key string) bool {
	if _, err := os.Stat(filepath.Join(v.s.Root(), ".locks", filepath.FromSlash(key)+".lock")); errors.Is(err, fs.ErrNotExist) {
		return false
	}
	free, err := v.s.LockFree(key)
	if err != nil {
		return true // unknowable: do not call it dead
	}
	return !free
}

func (v *View) agentsOf(docs []watcher.Entry, claims []claimed, qs []Question, cs []Commitment) []Agent {
	held := map[string][]string{}
	for _, c := range claims {
		if c.ClaimedBy != "" {
			held[c.ClaimedBy] = append(held[c.ClaimedBy], c.ID)
		}
	}
	asked := map[string]int{}
	for _, q := range qs {
		if q.Status == agents.QuestionOpen {
			asked[q.From]++
		}
	}
	type tally struct{ passed, all int }
	commits := map[string]*tally{}
	for _, c := range cs {
		t := commits[c.Agent]
		if t == nil {
			t = &tally{}
			commits[c.Agent] = t
		}
		t.all++
		if c.Status == agents.StatusPassed {
			t.passed++
		}
	}
	v.mu.Lock()
	activity := make(map[string]time.Time, len(v.activity))
	for k, t := range v.activity {
		activity[k] = t
	}
	v.mu.Unlock()
	out := make([]Agent, 0, len(docs))
	for _, e := range docs {
		f := e.Fields
		a := Agent{Name: e.Name, Role: fstr(f, "role"), State: effectiveState(f), Parent: fstr(f, "parent"),
			Pool: fstr(f, "pool"), Queues: fstrings(f, "queues"), Host: fstr(f, "host"), PID: fint(f, "pid"),
			Spawns: fint(f, "spawns"), Claims: held[e.Name], OpenAsked: asked[e.Name], Path: e.Path, Valid: e.Valid}
		if q := fstr(f, "queue"); q != "" && !slices.Contains(a.Queues, q) {
			a.Queues = append(a.Queues, q)
		}
		if a.State == agents.Working || a.State == agents.Waiting {
			a.Alive = v.alive(schema.AgentLockKey(e.Name))
		}
		a.StateChanged.Time = ftime(f, "state_changed")
		a.LastActivity.Time = activity[e.Name]
		for _, k := range []string{"updated", "state_changed"} {
			if t := ftime(f, k); t.After(a.LastActivity.Time) {
				a.LastActivity.Time = t
			}
		}
		if t := commits[e.Name]; t != nil {
			a.Commitments = strconv.Itoa(t.passed) + "/" + strconv.Itoa(t.all) + " passed"
		}
		out = append(out, a)
	}
	return out
}

// effectiveState is the state the engine acts on: the document's state,
// unless a hand edit made an illegal move from applied_state (then
// applied_state, as agents.Agent.Effective).
func effectiveState(f map[string]any) string {
	st, applied := fstr(f, "state"), fstr(f, "applied_state")
	if st == "" {
		st = agents.Idle
	}
	if applied != "" && applied != st && !agents.Legal(applied, st) {
		return applied
	}
	return st
}

func questionsOf(docs []watcher.Entry) []Question {
	var open, answered []Question
	for _, e := range docs {
		f := e.Fields
		q := Question{ID: fstr(f, "id"), From: fstr(f, "from"), To: fstr(f, "to"), AskedTo: fstr(f, "asked_to"),
			Priority: fint(f, "priority"), Status: fstr(f, "status"), Hops: fint(f, "hops"), Created: schema.TimeOf(ftime(f, "created")),
			AnsweredBy: fstr(f, "answered_by"), Answer: fstr(f, "answer"), Path: e.Path}
		if q.ID == "" {
			q.ID = e.Name
		}
		if q.To == "" {
			q.To = agents.User
		}
		if q.Status == "" {
			q.Status = agents.QuestionOpen
		}
		if q.Status == agents.QuestionOpen {
			open = append(open, q)
		} else {
			answered = append(answered, q)
		}
	}
	sort.SliceStable(open, func(i, j int) bool {
		if open[i].Priority != open[j].Priority {
			return open[i].Priority < open[j].Priority
		}
		return open[i].Created.Before(open[j].Created.Time)
	})
	sort.SliceStable(answered, func(i, j int) bool { return answered[i].ID > answered[j].ID })
	return append(open, answered[:min(len(answered), keepAnswered)]...)
}

func commitmentsOf(docs []watcher.Entry) []Commitment {
	var out, passed []Commitment
	for _, e := range docs {
		f := e.Fields
		c := Commitment{ID: fstr(f, "id"), Agent: fstr(f, "agent"), Description: fstr(f, "description"),
			Assertion: fstr(f, "assertion"), Status: fstr(f, "status"), Output: fstr(f, "output"),
			VerifiedAt: schema.TimeOf(ftime(f, "verified_at")), VerifiedBy: fstr(f, "verified_by"), Path: e.Path}
		if c.ID == "" {
			c.ID = e.Name
		}
		if c.Agent == "" {
			c.Agent, _, _ = strings.Cut(strings.TrimPrefix(e.Path, "commitments/"), "/")
		}
		if c.Status == "" {
			c.Status = agents.StatusPending
		}
		if _, ok := f["exit_code"]; ok {
			code := fint(f, "exit_code")
			c.ExitCode = &code
		}
		// The verifier appends this marker to the output of an assertion
		// it killed at its timeout (agents.runAssertion).
		c.TimedOut = strings.Contains(c.Output, "[timed out after ")
		if c.Status == agents.StatusPassed {
			passed = append(passed, c)
			continue
		}
		out = append(out, c)
	}
	sort.SliceStable(passed, func(i, j int) bool { return passed[i].VerifiedAt.After(passed[j].VerifiedAt.Time) })
	out = append(out, passed[:min(len(passed), keepPassed)]...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func channelsOf(docs, chunks []watcher.Entry) []Channel {
	by := map[string]*Channel{}
	get := func(name string) *Channel {
		c := by[name]
		if c == nil {
			c = &Channel{Name: name}
			by[name] = c
		}
		return c
	}
	for _, e := range docs {
		c := get(e.Name)
		c.Topic, c.Archived, c.Path = fstr(e.Fields, "topic"), fbool(e.Fields, "archived"), e.Path
	}
	for _, e := range chunks {
		name := fstr(e.Fields, "channel")
		if name == "" {
			name, _, _ = strings.Cut(strings.TrimPrefix(e.Path, "messages/"), "/")
		}
		c := get(name)
		c.Messages += fint(e.Fields, "message_count")
		if t := ftime(e.Fields, "last_time"); t.After(c.Last.Time) {
			c.Last.Time = t
		}
	}
	out := make([]Channel, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		// Direct channels (inboxes) after the shared ones.
		di, dj := strings.HasPrefix(out[i].Name, "@"), strings.HasPrefix(out[j].Name, "@")
		if di != dj {
			return dj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func poolsOf(docs []watcher.Entry) []Pool {
	out := make([]Pool, 0, len(docs))
	for _, e := range docs {
		f := e.Fields
		out = append(out, Pool{Name: e.Name, State: fstr(f, "state"), Queues: fstrings(f, "queues"), Min: fint(f, "min"),
			Max: fint(f, "max"), Drones: fint(f, "drones"), PeakDrones: fint(f, "peak_drones"), Spawned: fint(f, "spawned"),
			Crashed: fint(f, "crashed"), ItemsDone: fint(f, "items_done"), ItemsFailed: fint(f, "items_failed"),
			Throughput: ffloat(f, "throughput"), Utilization: ffloat(f, "utilization"), Amplification: ffloat(f, "amplification"),
			Path: e.Path, host: fstr(f, "host")})
	}
	return out
}

func reservationsOf(docs []watcher.Entry, now time.Time) []Reservation {
	prefix := "tuples/" + tuples.ReservationType + "/"
	var out []Reservation
	for _, e := range docs {
		if !strings.HasPrefix(e.Path, prefix) {
			continue
		}
		f := e.Fields
		r := Reservation{ID: fstr(f, "id"), Agent: fstr(f, "agent"), Glob: fstr(f, "glob"), Reason: fstr(f, "reason"),
			Created: schema.TimeOf(ftime(f, "created")), Expires: schema.TimeOf(ftime(f, "expires")), Path: e.Path}
		if r.ID == "" {
			r.ID = e.Name
		}
		r.Expired = !r.Expires.IsZero() && now.After(r.Expires.Time)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Glob < out[j].Glob
	})
	return out
}
