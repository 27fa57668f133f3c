package view

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher/journal"
)

// EventAction is journaled for every action done through a view, with the
// acting person as the agent: {action, target, face, ok, error}.
const EventAction = "view.action"

func init() { journal.RegisterTypes(EventAction) } // for readers' type filters

// Do performs an action as the view's person, through the library's rules
// only: answering goes through agents.Manager.Answer (which wakes the
// asker), retry and release through the queue broker (release is fenced
// by the claim's attempt, and another's claim needs it), reap through the
// reapers, respawn through the agent state machine, send through agents/messages, edit through
// docstore.Store.SaveEdit (the `tavern edit` check, and only over the
// revision the person edited). Every action, done or refused, is journaled
// as EventAction. It returns a short message for the person.
func (v *View) Do(ctx context.Context, a Action) (string, error) {
	msg, err := v.do(ctx, a)
	data := map[string]any{"action": a.Name, "target": a.Target, "ok": err == nil}
	if v.opt.Face != "" {
		data["face"] = v.opt.Face
	}
	if err != nil {
		data["error"] = err.Error()
	} else if msg != "" {
		// The outcome in full: the faces may show it shortened (the
		// browser's flash cookie has a size limit).
		data["message"] = msg
	}
	ev := journal.Event{Type: EventAction, Agent: v.opt.Person, Data: data}
	if a.Name == ActEdit {
		ev.Path = a.Target
	}
	if _, jerr := v.j.Append(ev); jerr != nil && err == nil {
		err = jerr
	}
	if err != nil {
		return "", &ActionError{Op: a.Name, Path: a.Target, Err: err}
	}
	if v.opt.Watch {
		// Let the projection see the action's writes before the caller
		// renders again (a redirect after a POST).
		_ = v.p.Sync(ctx)
	}
	return msg, nil
}

func (v *View) do(ctx context.Context, a Action) (string, error) {
	text := strings.TrimSpace(a.Text)
	need := func() error {
		if text == "" {
			return ErrNoInput
		}
		return nil
	}
	switch a.Name {
	case ActAnswer:
		if err := need(); err != nil {
			return "", err
		}
		q, err := v.m.Answer(a.Target, text, v.opt.Person)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("answered %s; %s is woken", q.ID, orUser(q.From)), nil
	case ActRetry:
		queue := a.Queue
		if queue == "" {
			v.mu.Lock()
			if loc := v.items.where[a.Target]; loc != nil {
				queue = loc.queue
			}
			v.mu.Unlock()
		}
		if queue == "" {
			// Not on the board: the broker finds it, or says it is no item.
			it, err := v.b.Get(a.Target)
			if err != nil {
				return "", err
			}
			queue = it.Queue
		}
		its, err := v.b.Retry(queue, a.Target)
		if err != nil {
			return "", err
		}
		if len(its) == 0 {
			return "", fmt.Errorf("%s is not dead in %s", a.Target, queue)
		}
		return "retried " + a.Target + ": back in pending", nil
	case ActRelease:
		// As `tavern item release` does for the person: another's claim is
		// released only with its attempt (the button carries it), so a
		// request without one cannot release whatever claim is there now.
		it, err := v.b.ReleaseAs(a.Target, a.Attempt, v.opt.Person)
		if err != nil {
			return "", err
		}
		return "released " + it.ID + ": back in pending", nil
	case ActReap:
		if a.Target == ReapAgents {
			names, invalid, err := v.m.ReapAgents()
			if err != nil {
				return "", err
			}
			skipped := ""
			if len(invalid) > 0 {
				// Reaped all the same; the bad files are check's to show.
				skipped = fmt.Sprintf("; %d agent files skipped, unreadable (tavern check lists them)", len(invalid))
			}
			if len(names) == 0 {
				return "reaped: nothing (every agent's wrapper is alive)" + skipped, nil
			}
			return "reaped: " + strings.Join(names, ", ") + skipped, nil
		}
		rep, err := v.b.Reap(a.Target)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("reaped %s: %d returned, %d dead, %d hung", a.Target, len(rep.Returned), len(rep.Dead), len(rep.Hung)), nil
	case ActSend:
		if err := need(); err != nil {
			return "", err
		}
		// A typed target that names nothing is refused, never created.
		if _, err := messages.Send(v.s, a.Target, v.opt.Person, text, messages.SendOptions{}); err != nil {
			return "", err
		}
		return "sent to " + a.Target, nil
	case ActRespawn:
		ag, err := v.m.Transition(a.Target, agents.Idle, agents.TransitionOptions{By: v.opt.Person, From: agents.Failed, Reason: "respawned by " + v.opt.Person + " from a view"})
		if err != nil {
			return "", err
		}
		return ag.Name + " is idle", nil
	case ActEdit:
		if a.Text == "" {
			return "", ErrNoInput
		}
		if a.Rev == "" {
			// Without the revision the person started from, a save could
			// overwrite a change they never saw.
			return "", fmt.Errorf("%w: the revision the edit is based on", ErrNoInput)
		}
		if err := engineName(a.Target); err != nil {
			return "", err
		}
		if _, err := v.s.SaveEdit(a.Target, a.Rev, []byte(a.Text)); err != nil {
			return "", err
		}
		return "saved " + a.Target, nil
	case ActApprove:
		g, err := v.b.Approve(a.Target, queues.Decision{By: v.opt.Person, Reason: text, Caller: a.Caller})
		if err != nil {
			return "", err
		}
		return "approved the gate of " + g.Item, nil
	case ActReject:
		if err := need(); err != nil {
			return "", err // a rejection says why
		}
		g, err := v.b.Reject(a.Target, queues.Decision{By: v.opt.Person, Reason: text, Caller: a.Caller})
		if err != nil {
			return "", err
		}
		return "rejected the gate of " + g.Item + "; the item is dead", nil
	}
	if fn := v.opt.Actions[a.Name]; fn != nil {
		return fn(ctx, v, a)
	}
	names := []string{ActAnswer, ActApprove, ActEdit, ActReap, ActReject, ActRelease, ActRespawn, ActRetry, ActSend}
	for n := range v.opt.Actions {
		names = append(names, n)
	}
	sort.Strings(names)
	return "", fmt.Errorf("%w %q (actions: %s)", ErrUnknownAction, a.Name, strings.Join(names, ", "))
}
