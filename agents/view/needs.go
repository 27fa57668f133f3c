package view

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// needs builds the Needs-you lens of s: everything that waits on a person,
// each with what it is, why it is here, what to do and how.
func (v *View) needs(s *Snapshot, claims []claimed, now time.Time) []Need {
	var out []Need
	add := func(n Need) { out = append(out, n) }

	for _, q := range s.Questions {
		if q.Status != agents.QuestionOpen || q.To != agents.User {
			continue
		}
		why := fmt.Sprintf("open for %s, addressed to you", age(now, q.Created.Time))
		if q.Hops > 0 {
			why = fmt.Sprintf("open for %s; asked to %s, moved up unanswered (hops: %d)", age(now, q.Created.Time), q.AskedTo, q.Hops)
		}
		add(Need{Key: "question:" + q.ID, Kind: NeedQuestion, Severity: 3, Priority: q.Priority,
			What: fmt.Sprintf("%s asks a question", orUser(q.From)), Why: why,
			Do:   fmt.Sprintf("answer it; the asker is woken (tavern answer %s TEXT)", q.ID),
			Path: q.Path, Agent: q.From, Since: q.Created, Text: v.body(q.Path),
			Actions: []Action{{Name: ActAnswer, Label: "Answer", Target: q.ID, Input: "answer",
				Confirm: "Send this answer to " + orUser(q.From) + "?"}}})
	}

	// Human gates: decided by a person only (queues refuses agents and
	// processes run by one), so they are the view's to offer.
	gates, _ := v.b.PendingGates() // unreadable ones are in Invalid
	for _, g := range gates {
		title := g.Title
		if title == "" {
			title = g.Item
		}
		why := "its " + g.Stage + " gate waits for a person"
		if g.Stage == "complete" {
			why = "the work is done or under way; it is not done until a person approves"
		} else if g.Stage == "claim" {
			why = "no worker may take it until a person approves"
		}
		if g.Reason != "" {
			why += ": " + g.Reason
		}
		add(Need{Key: "gate:" + g.ID, Kind: NeedGate, Severity: 3,
			What: fmt.Sprintf("item %q in %s waits for your approval", title, orDash(g.Queue)), Why: why,
			Do:   "approve it, or reject it with a reason (the item goes to dead/; retry re-opens the gate) (tavern approve " + g.ID + ")",
			Path: g.Path,
			Actions: []Action{
				{Name: ActApprove, Label: "Approve", Target: g.ID, Confirm: "Approve the gate of " + title + "?"},
				{Name: ActReject, Label: "Reject", Target: g.ID, Input: "reason", Confirm: "Reject " + title + " (it goes to dead/)?"},
			}})
	}

	for _, c := range s.Commitments {
		if c.Status != agents.StatusFailed {
			continue
		}
		what := fmt.Sprintf("%s's commitment fails: %s", c.Agent, c.Description)
		why := "its assertion exited " + exitText(c.ExitCode)
		if c.TimedOut {
			what = fmt.Sprintf("%s's commitment timed out: %s", c.Agent, c.Description)
			why = "its assertion did not finish within its timeout and was killed"
		}
		if c.VerifiedBy != "" {
			why += " (verified by " + c.VerifiedBy + ")"
		}
		add(Need{Key: "commitment:" + c.Agent + "/" + c.ID, Kind: NeedCommitment, Severity: 2,
			What: what, Why: why,
			Do:   "tell the agent what to fix, or fix the assertion if it is wrong; the verifier checks again when the agent reaches verifying (tavern verify " + c.Agent + ")",
			Path: c.Path, Agent: c.Agent, Since: c.VerifiedAt,
			Text: "```sh\n" + c.Assertion + "\n```\n\n```\n" + strings.TrimSpace(c.Output) + "\n```",
			Actions: []Action{
				{Name: ActSend, Label: "Message " + c.Agent, Target: "@" + c.Agent, Input: "message", Confirm: "Send this message to @" + c.Agent + "?"},
				{Name: ActEdit, Label: "Edit commitment", Target: c.Path, Input: "document"},
			}})
	}

	v.mu.Lock()
	reasons := map[string]string{}
	for _, e := range v.timeline {
		if e.Type == "agent.state" && e.Data["to"] == agents.Failed {
			if r, ok := e.Data["reason"].(string); ok {
				reasons[e.Agent] = r
			}
		}
	}
	v.mu.Unlock()
	for _, a := range s.Agents {
		switch {
		case a.State == agents.Failed:
			why := reasons[a.Name]
			if why == "" {
				why = "see the Notes of its document and its output in @" + a.Name
			}
			add(Need{Key: "failed:" + a.Name, Kind: NeedFailed, Severity: 2,
				What: "agent " + a.Name + " failed", Why: why,
				Do:   "read its output (@" + a.Name + "), then respawn it or leave it (tavern agent state " + a.Name + " idle)",
				Path: a.Path, Agent: a.Name, Since: a.stateSince(),
				Actions: []Action{
					{Name: ActRespawn, Label: "Respawn (to idle)", Target: a.Name, Confirm: "Move " + a.Name + " from failed to idle?"},
					{Name: ActSend, Label: "Message", Target: "@" + a.Name, Input: "message", Confirm: "Send this message to @" + a.Name + "?"},
				}})
		case (a.State == agents.Working || a.State == agents.Waiting) && a.Host != "" && a.Host == v.m.Host && !a.Alive:
			add(Need{Key: "dead-agent:" + a.Name, Kind: NeedDeadHolder, Severity: 2,
				What: "agent " + a.Name + "'s process died", Why: fmt.Sprintf("it is %s on this host (pid %d) but nobody holds its liveness lock; it has not been reaped yet", a.State, a.PID),
				Do:   "reap it: it moves to failed and its item goes back to its queue (tavern agent reap)",
				Path: a.Path, Agent: a.Name, Since: a.stateSince(),
				Actions: []Action{{Name: ActReap, Label: "Reap", Target: ReapAgents, Confirm: "Mark " + a.Name + " failed?"}}})
		}
	}

	for _, c := range claims {
		expired := !c.LeaseUntil.IsZero() && now.After(c.LeaseUntil.Time)
		liveness := c.ClaimKind == "liveness" && c.LivenessLock != ""
		switch {
		case liveness && !v.alive(c.LivenessLock):
			add(Need{Key: "dead-holder:" + c.Queue + "/" + c.ID, Kind: NeedDeadHolder, Severity: 2,
				What: fmt.Sprintf("%s's claim on %s is held by a dead process", orUser(c.ClaimedBy), itemName(c.Item)),
				Why:  "its liveness lock " + c.LivenessLock + " is free: the holder died and no reaper has run since",
				Do:   "reap the queue: the item goes back to pending (or dead on its last attempt) (tavern reap " + c.Queue + ")",
				Path: c.Path, Agent: c.ClaimedBy, Since: c.LeaseUntil,
				Actions: []Action{{Name: ActReap, Label: "Reap " + c.Queue, Target: c.Queue, Confirm: "Reap queue " + c.Queue + "?"}}})
		case expired:
			why := fmt.Sprintf("its lease ran out %s ago", age(now, c.LeaseUntil.Time))
			if liveness {
				why += " while its holder is alive (hung); reapers return it after the " + c.LeaseGrace.String() + " grace"
			} else {
				why += "; a lease claim has no liveness lock, so its holder may be gone"
			}
			add(Need{Key: "hung:" + c.Queue + "/" + c.ID, Kind: NeedHung, Severity: 2,
				What: fmt.Sprintf("%s's claim on %s is past its lease", orUser(c.ClaimedBy), itemName(c.Item)),
				Why:  why,
				Do:   "release it so another worker can take it; the holder's late completion will be refused (tavern item release " + c.ID + " --attempt " + fmt.Sprint(c.ClaimAttempt) + ")",
				Path: c.Path, Agent: c.ClaimedBy, Since: c.LeaseUntil,
				Actions: []Action{{Name: ActRelease, Label: "Release", Target: c.ID, Attempt: c.ClaimAttempt,
					Confirm: fmt.Sprintf("Release %s (attempt %d) back to pending?", c.ID, c.ClaimAttempt)}}})
		}
	}

	for _, q := range s.Queues {
		for _, col := range q.Columns {
			if col.State != queues.Dead {
				continue
			}
			for _, it := range col.Items {
				why := it.DeadReason
				if why == "" {
					why = it.LastError
				}
				add(Need{Key: "dead:" + q.Name + "/" + it.ID, Kind: NeedDead, Severity: 1,
					What: "item " + itemName(it) + " is dead in " + q.Name, Why: why,
					Do:   "fix what made it fail, then retry it (tavern queue retry " + q.Name + " " + it.ID + ")",
					Path: it.Path, Since: it.Completed,
					Actions: []Action{{Name: ActRetry, Label: "Retry", Target: it.ID, Queue: q.Name,
						Confirm: "Move " + it.ID + " back to pending with its attempts reset?"}}})
			}
			if col.Total > len(col.Items) {
				add(Need{Key: "dead-more:" + q.Name, Kind: NeedDead, Severity: 1,
					What: fmt.Sprintf("%d more dead items in %s", col.Total-len(col.Items), q.Name),
					Why:  "only the newest are listed", Do: "tavern ls items --where state=dead, then tavern queue retry " + q.Name + " ID..."})
			}
		}
	}

	for _, bl := range v.blocked() {
		id, q := bl.id, bl.queue
		path := queues.ItemPath(q, queues.Pending, id)
		root := bl.chain[len(bl.chain)-1]
		why := "it depends on "
		for i, dep := range bl.chain {
			if i > 0 {
				why += ", which waits on "
			}
			why += v.itemRef(dep)
		}
		why += ", which is " + bl.state
		do := "retry the dependency, or edit depends_on"
		if bl.state == queues.Dead {
			do = "retry " + v.itemRef(root) + ", or edit depends_on (tavern queue retry " + bl.rootQueue + " " + root + ")"
		}
		add(Need{Key: "blocked:" + q + "/" + id, Kind: NeedBlocked, Severity: 1,
			What:    "item " + v.itemRef(id) + " in " + q + " can never run",
			Why:     why,
			Do:      do,
			Path:    path,
			Actions: []Action{{Name: ActEdit, Label: "Edit item", Target: path, Input: "document"}}})
	}

	for _, inv := range s.Invalid {
		add(Need{Key: "invalid:" + inv.Path, Kind: NeedInvalid, Severity: 2,
			What: inv.Path + " is not a valid document", Why: inv.Problem,
			Do:   "fix it by hand; nothing uses it until it is valid (tavern edit " + inv.Path + ")",
			Path: inv.Path, Text: strings.Join(inv.More, "\n"),
			Actions: []Action{{Name: ActEdit, Label: "Edit", Target: inv.Path, Input: "document"}}})
	}

	for _, src := range v.opt.Needs {
		out = append(out, src(s)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := needRank(a.Kind), needRank(b.Kind); ra != rb {
			return ra < rb
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.Since.Equal(b.Since.Time) {
			return a.Since.Before(b.Since.Time)
		}
		return a.Key < b.Key
	})
	return out
}

// ReapAgents is the Target of a reap action that reaps agents rather than
// a queue.
const ReapAgents = "@agents"

// needRank orders kinds for the lens; kinds from Options.Needs come last.
func needRank(kind string) int {
	if r, ok := needOrder[kind]; ok {
		return r
	}
	return len(needOrder)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orUser(s string) string {
	if s == "" {
		return agents.User
	}
	return s
}

func exitText(code *int) string {
	if code == nil {
		return "with an error"
	}
	return fmt.Sprint(*code)
}

func itemName(it Item) string {
	if it.Title != "" {
		return fmt.Sprintf("%q (%s)", it.Title, it.ID)
	}
	return it.ID
}

// age is a short duration for people: 42s, 5m, 3h, 2d.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Age is age for the faces.
func Age(now, t time.Time) string { return age(now, t) }

// blockedItem is a pending item that can never run: chain is the
// dependencies it waits on, one through the next, the last dead or
// missing (state).
type blockedItem struct {
	id, queue string
	chain     []string
	state     string // dead or missing
	rootQueue string // the last one's queue ("" when missing)
}

// blocked lists the pending items that wait, directly or through pending
// items, on a dead or missing one: the item a dead one blocks blocks its
// own dependents as surely.
func (v *View) blocked() []blockedItem {
	v.mu.Lock()
	defer v.mu.Unlock()
	pending := func(id string) *itemLoc {
		if loc := v.items.where[id]; loc != nil && loc.states&1 != 0 {
			return loc
		}
		return nil
	}
	// From the dead and missing outward, through the pending items that
	// wait on a blocked one: each is visited once, so a cycle ends it,
	// and next is the first step of a shortest chain.
	next := map[string]string{}
	dependents := map[string][]string{}
	var frontier []string
	for id := range v.items.deps {
		loc := pending(id)
		if loc == nil {
			continue
		}
		for _, dep := range loc.deps {
			if st := v.items.state(dep); st == queues.Dead || st == "" {
				if _, ok := next[id]; !ok {
					next[id] = dep
					frontier = append(frontier, id)
				}
			} else if st == queues.Pending {
				dependents[dep] = append(dependents[dep], id)
			}
		}
	}
	sort.Strings(frontier) // a stable "first" dependency across snapshots
	for len(frontier) > 0 {
		id := frontier[0]
		frontier = frontier[1:]
		for _, w := range dependents[id] {
			if _, ok := next[w]; !ok {
				next[w] = id
				frontier = append(frontier, w)
			}
		}
	}
	out := make([]blockedItem, 0, len(next))
	for id := range next {
		bl := blockedItem{id: id, queue: v.items.where[id].queue}
		for at := next[id]; ; at = next[at] {
			bl.chain = append(bl.chain, at)
			if _, ok := next[at]; !ok {
				break
			}
		}
		root := bl.chain[len(bl.chain)-1]
		if bl.state = v.items.state(root); bl.state == "" {
			bl.state = "missing"
		} else {
			bl.rootQueue = v.items.where[root].queue
		}
		out = append(out, bl)
	}
	return out
}

// itemRef names an item for a person: "title" (id), or the id when its
// document has no title or cannot be read.
func (v *View) itemRef(id string) string {
	v.mu.Lock()
	loc := v.items.where[id]
	var rel string
	if loc != nil {
		rel = queues.ItemPath(loc.queue, v.items.state(id), id)
	}
	v.mu.Unlock()
	if rel == "" {
		return id
	}
	d, err := v.s.Get(rel)
	if err != nil || d.String("title") == "" {
		return id
	}
	return fmt.Sprintf("%q (%s)", d.String("title"), id)
}

// stateSince is when the agent entered its state: when it failed, or,
// for a process that died working, the earliest it can have died (a
// released lock records no time). Activity since (a message for it, a
// note set on it) does not make it newly failed or dead.
func (a Agent) stateSince() schema.Timestamp {
	if !a.StateChanged.IsZero() {
		return a.StateChanged
	}
	return a.LastActivity
}
