package view

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
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
				Path: a.Path, Agent: a.Name, Since: a.LastActivity,
				Actions: []Action{
					{Name: ActRespawn, Label: "Respawn (to idle)", Target: a.Name, Confirm: "Move " + a.Name + " from failed to idle?"},
					{Name: ActSend, Label: "Message", Target: "@" + a.Name, Input: "message", Confirm: "Send this message to @" + a.Name + "?"},
				}})
		case (a.State == agents.Working || a.State == agents.Waiting) && a.Host != "" && a.Host == v.m.Host && !a.Alive:
			add(Need{Key: "dead-agent:" + a.Name, Kind: NeedDeadHolder, Severity: 2,
				What: "agent " + a.Name + "'s process died", Why: fmt.Sprintf("it is %s on this host (pid %d) but nobody holds its liveness lock; it has not been reaped yet", a.State, a.PID),
				Do:   "reap it: it moves to failed and its item goes back to its queue (tavern agent reap)",
				Path: a.Path, Agent: a.Name, Since: a.LastActivity,
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

	v.mu.Lock()
	for id := range v.items.deps {
		loc := v.items.where[id]
		if loc == nil || loc.states&1 == 0 || len(loc.deps) == 0 {
			continue
		}
		for _, dep := range loc.deps {
			st := v.items.state(dep)
			if st != queues.Dead && st != "" {
				continue
			}
			if st == "" {
				st = "missing"
			}
			add(Need{Key: "blocked:" + loc.queue + "/" + id, Kind: NeedBlocked, Severity: 1,
				What:    "item " + id + " in " + loc.queue + " can never run",
				Why:     "it depends on " + dep + ", which is " + st,
				Do:      "retry the dependency, or edit depends_on",
				Path:    queues.ItemPath(loc.queue, queues.Pending, id),
				Actions: []Action{{Name: ActEdit, Label: "Edit item", Target: queues.ItemPath(loc.queue, queues.Pending, id), Input: "document"}}})
			break
		}
	}
	v.mu.Unlock()

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
