package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// QueueWork is the WorkSource of package queues: items are taken as
// AgentLock claims, alive while the spawn wrapper holds the agent's
// liveness lock (schema.AgentLockKey).
func QueueWork(b *queues.Broker) WorkSource { return queueWork{b} }

type queueWork struct{ b *queues.Broker }

// GuardTake makes a take for an agent (opt.Liveness AgentLock, opt.As
// the agent) obey CheckTaker before every attempt to claim, along with
// the guard opt has: whoever takes for an agent — queue take --as, next
// --take, MCP's next, a spawn — is refused an agent that is down.
func GuardTake(s *docstore.Store, opt *queues.TakeOptions) {
	if opt.Liveness != queues.AgentLock || opt.As == "" {
		return
	}
	prev, agent := opt.Guard, opt.As
	opt.Guard = func() error {
		if err := CheckTaker(s, agent); err != nil {
			return err
		}
		if prev != nil {
			return prev()
		}
		return nil
	}
}

// CheckTaker returns an *AgentError wrapping ErrAgentDown when agent
// may claim no item: it is failed, or in working or waiting while the
// spawn wrapper of this host its document names is gone (dead, not
// reaped yet). The error says how to revive it. A document that cannot
// be read is not refused here (an unknown agent is ResolveActor's, a
// broken one check's).
func CheckTaker(s *docstore.Store, agent string) error {
	d, err := s.Get(AgentPath(agent))
	if err != nil {
		return nil
	}
	a := agentFromDoc(d)
	revive := fmt.Sprintf("tavern agent state %s idle, or tavern spawn --name %s", agent, agent)
	switch st := a.Effective(); {
	case st == Failed:
		return &AgentError{Op: "take", Path: AgentPath(agent), Err: fmt.Errorf("%w: %s is failed: it claims nothing until revived (%s)", ErrAgentDown, agent, revive)}
	case running(st) && deadSpawn(s, a):
		return &AgentError{Op: "take", Path: AgentPath(agent), Err: fmt.Errorf("%w: %s is %s but its spawn wrapper (pid %d) is gone: it claims nothing until revived (tavern agent reap marks it failed; then %s)",
			ErrAgentDown, agent, st, a.PID, revive)}
	}
	return nil
}

// deadSpawn reports whether a's document names a spawn instance of this
// host whose wrapper and process tree are gone: neither the agent's lock
// nor the instance's is held. An agent in working without an instance (a
// hooked session's) is no spawn's, and never dead here.
func deadSpawn(s *docstore.Store, a *Agent) bool {
	host, _ := os.Hostname()
	if a.Host == "" || a.Host != host || a.Instance == "" || schema.ValidName(a.Instance) != nil {
		return false
	}
	for _, key := range []string{schema.InstanceLockKey(a.Instance), schema.AgentLockKey(a.Name)} {
		if free, err := s.LockFree(key); err != nil || !free {
			return false
		}
	}
	return true
}

func (w queueWork) Take(ctx context.Context, qs []string, agent, lockKey string, steal bool, wait time.Duration, guard func() error) (WorkClaim, error) {
	if lockKey != schema.AgentLockKey(agent) {
		return nil, fmt.Errorf("take: liveness lock %q is not the agent lock %q", lockKey, schema.AgentLockKey(agent))
	}
	return w.TakeFor(ctx, qs, agent, "", steal, wait, guard)
}

// TakeFor claims for a spawn instance: the claim records the instance and
// lives as long as its lock (schema.InstanceLockKey) is held, by the
// wrapper or any process of its child's tree.
func (w queueWork) TakeFor(ctx context.Context, qs []string, agent, instance string, steal bool, wait time.Duration, guard func() error) (WorkClaim, error) {
	opt := queues.TakeOptions{Queues: qs, Steal: steal, As: agent, Instance: instance, Liveness: queues.AgentLock, Wait: wait, Guard: guard}
	GuardTake(w.b.Store(), &opt)
	c, err := w.b.Take(ctx, opt)
	if errors.Is(err, queues.ErrEmpty) {
		return nil, fmt.Errorf("%w: %w", ErrNoWork, err)
	}
	if err != nil {
		return nil, err
	}
	lease := 5 * time.Minute
	if q, err := w.b.Queue(c.Item.Queue); err == nil && q.Lease > 0 {
		lease = q.Lease
	}
	return &queueClaim{c: c, b: w.b, lease: lease, stolen: !slices.Contains(qs, c.Item.Queue)}, nil
}

type queueClaim struct {
	c      *queues.Claim
	b      *queues.Broker
	lease  time.Duration
	stolen bool
}

// ownDone reports whether a stale-attempt refusal only means that the
// item was completed by this very claim: the child ran `tavern item done
// "$TAVERN_ITEM"` itself. Its completion stands, and is no failure of the
// wrapper.
func (q *queueClaim) ownDone(err error) bool {
	if !errors.Is(err, queues.ErrStale) {
		return false
	}
	it, gerr := q.b.Get(q.c.ID)
	return gerr == nil && q.doneBy(it)
}

// ownEnd reports how this claim was ended by someone other than the
// wrapper — its child (`tavern item fail|release "$TAVERN_ITEM"`), or a
// person acting on the current claim — while it ran: OutcomeFailed (the
// item back in pending/ with the attempt counted, or in dead/; reason is
// its last_error) or OutcomeReleased (in pending/ with the attempt given
// back). "" when the claim is on, was completed (ownDone), or the item
// was claimed again since (the attempt moved on).
func (q *queueClaim) ownEnd() (outcome, reason string) {
	it, err := q.b.Get(q.c.ID)
	if err != nil || it.ClaimAttempt != q.c.Attempt {
		return "", ""
	}
	switch {
	case it.State == queues.Dead:
		return OutcomeFailed, it.LastError
	case it.State == queues.Pending && it.Attempts < q.c.Item.Attempts:
		return OutcomeReleased, ""
	case it.State == queues.Pending:
		return OutcomeFailed, it.LastError
	}
	return "", ""
}

// doneBy reports whether it is the item of this claim, done by it.
func (q *queueClaim) doneBy(it *queues.Item) bool {
	return it.State == queues.Done && it.ClaimAttempt == q.c.Attempt && it.ClaimedBy == q.c.ClaimedBy
}

func (q *queueClaim) ItemID() string       { return q.c.ID }
func (q *queueClaim) Queue() string        { return q.c.Item.Queue }
func (q *queueClaim) Path() string         { return q.c.Path }
func (q *queueClaim) Attempt() int         { return q.c.Attempt }
func (q *queueClaim) Title() string        { return q.c.Title }
func (q *queueClaim) Stolen() bool         { return q.stolen }
func (q *queueClaim) Lease() time.Duration { return q.lease }
func (q *queueClaim) Body() []byte {
	if q.c.Doc == nil {
		return nil
	}
	return bytes.TrimLeft(q.c.Doc.Body(), "\n")
}
func (q *queueClaim) Renew() error {
	if _, err := q.c.Renew(); err != nil && !q.ownDone(err) {
		return err
	}
	return nil
}

// Complete, Fail and Release leave an item the child completed itself as
// it is (see ownDone).
func (q *queueClaim) Complete(result string) error {
	if _, err := q.c.Complete(result); err != nil && !q.ownDone(err) {
		return err
	}
	return nil
}

func (q *queueClaim) Fail(reason string) error {
	if _, err := q.c.Fail(reason); err != nil && !q.ownDone(err) {
		return err
	}
	return nil
}

func (q *queueClaim) Release(string) error {
	if _, err := q.c.Release(); err != nil && !q.ownDone(err) {
		return err
	}
	return nil
}
