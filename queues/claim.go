package queues

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

// Liveness says what keeps a claim alive.
type Liveness int

const (
	// LeaseOnly claims live as long as their lease (renewed with Renew).
	// For processes that exit right after claiming, like `tavern queue
	// take`: their own lock could not outlive them.
	LeaseOnly Liveness = iota
	// HoldLock claims are tied to this process: their liveness_lock is the
	// Broker's holder lock (HolderLockKey), which the Broker takes at its
	// first HoldLock claim and holds until Close. When the process dies
	// the kernel drops the lock and the next reaper returns all its
	// claimed items to pending at once, without waiting for their leases.
	// One lock per process, not per claim: no lock file is created or
	// removed per claim (inode churn is the dominant cost on some disks).
	HoldLock
	// AgentLock claims are tied to the agent named by TakeOptions.As: the
	// item stays claimed while some process (the agent's spawn wrapper)
	// holds schema.AgentLockKey(As). If nobody holds that lock when the claim is
	// made, the agent is not running and the claim is LeaseOnly.
	AgentLock
)

// Lock keys. Lock files live under .tavern/.locks/<key>.lock.

// ItemLockKey serialises every state change of one item (claim, done,
// fail, renew, release, reap, retry), in any state. It is held only for
// the duration of one change. Keys are striped (256 per queue, by a hash
// of the id) so lock files are created once and reused, never one per
// item; two items sharing a stripe only make a taker skip to the next
// candidate, or a done wait a few microseconds.
func ItemLockKey(queue, id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("items/%s/%02x", queue, h.Sum32()&0xff)
}

// HolderLockKey is the liveness lock of one Broker's HoldLock claims:
// holders/<host>-<pid>-<random>.
func HolderLockKey(host string, pid int, nonce string) string {
	return fmt.Sprintf("holders/%s-%d-%s", host, pid, nonce)
}

// Claim is a claimed item. Attempt is its fencing token: Complete, Fail,
// Renew and Release check it against the file and refuse (ErrStale) if
// the item was reaped or re-claimed since.
type Claim struct {
	*Item
	Attempt int
	// Notes lists what Take saw on the way: invalid item files it
	// skipped, items blocked by a dead dependency.
	Notes *Diagnostics

	b        *Broker
	held     bool   // HoldLock: the Broker's holder lock keeps it alive
	instance string // the instance the claim was made for: its fence
	// doc is the claimed copy as written at claim time (Item.Doc). The
	// first Complete takes it: if the file's bytes are still these, it
	// is used instead of parsing the file again, and edited in place.
	doc atomic.Pointer[docstore.Doc]
}

// Held reports whether this process keeps the claim alive by its lock.
func (c *Claim) Held() bool { return c.held && c.b.holderHeld() }

// Complete moves the item to done/ with result (see Broker.Complete) and
// drops the claim lock.
//
// It reuses the document read at claim time when the file is unchanged
// (byte for byte), so afterwards c.Item.Doc holds the done copy.
func (c *Claim) Complete(result string) (*Item, error) {
	return c.b.complete(c.Queue, c.ID, c.Attempt, c.instance, "", result, c.doc.Swap(nil))
}

// Fail records reason and returns the item to pending/ with a backoff, or
// moves it to dead/ past max_attempts (see Broker.Fail).
func (c *Claim) Fail(reason string) (*Item, error) {
	return c.b.fail(c.ID, c.Attempt, c.instance, "", reason)
}

// Release gives the item back to pending/ without counting the attempt.
func (c *Claim) Release() (*Item, error) {
	return c.b.release(c.ID, c.Attempt, c.instance, "")
}

// MarkWorkDone records on the claimed item that its work is done (its
// command succeeded, result is what it produced) and that only its
// complete-stage gates hold it: work_done and work_result. The claim
// goes on. Should it end before a person decides (released: the wrapper
// was interrupted at the gate; reaped: it died there), the next claim
// finds the work done and waits at the gate without doing it again.
// Failing, dying or completing clears them: a next attempt redoes the
// work (a failed merge needs a new run).
func (c *Claim) MarkWorkDone(result string) (*Item, error) {
	b := c.b
	it, err := b.fencedIn("work done", c.Queue, c.ID, c.Attempt, c.instance, "", nil, func(l *docstore.Lock, it *Item) (*Item, error) {
		now := b.now()
		d, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
			if result == "" {
				return editFields(d, []docstore.Field{{Key: "work_done", Value: now}, {Key: "updated", Value: now}}, "work_result")
			}
			return setFields(d, docstore.Field{Key: "work_done", Value: now}, docstore.Field{Key: "work_result", Value: result}, docstore.Field{Key: "updated", Value: now})
		})
		if err != nil {
			return nil, err
		}
		out, err := itemFromDoc(d)
		if err != nil {
			return nil, err
		}
		_ = b.journal(EventAnnotated, out, "", map[string]any{"fields": "work_done,work_result"})
		return out, nil
	})
	if err == nil {
		c.Item = it
	}
	return it, err
}

// workDone is the fields of MarkWorkDone that it has, for an end of its
// attempt other than a release (or a reap back to pending) to take
// away; none for the many items that have none (no edit to make).
func workDone(it *Item) []string {
	if it.WorkDone.IsZero() && !it.Doc.Has("work_result") {
		return nil
	}
	return []string{"work_done", "work_result"}
}

// Renew extends the lease by the queue's lease duration.
func (c *Claim) Renew() (*Item, error) {
	it, err := c.b.renew(c.ID, c.Attempt, c.instance, "")
	if err == nil {
		c.Item = it
	}
	return it, err
}

// KeepAlive renews the lease every third of the queue's lease until ctx
// is done or a renewal fails (the error is returned: ErrStale means the
// claim is lost and the work should stop).
func (c *Claim) KeepAlive(ctx context.Context) error {
	q, err := c.b.Queue(c.Queue)
	if err != nil {
		return err
	}
	every := q.Lease / 3
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := c.Renew(); err != nil {
				return err
			}
		}
	}
}

// fenced runs fn on the claimed copy of item id under the item lock, after
// checking that attempt is its current claim (attempt 0 accepts any),
// when instance is set, that the claim is that instance's, and when as
// is set and attempt is 0, that the claim is as's (see CompleteAs).
func (b *Broker) fenced(op, id string, attempt int, instance, as string, fn func(l *docstore.Lock, it *Item) (*Item, error)) (*Item, error) {
	return b.fencedIn(op, "", id, attempt, instance, as, nil, fn)
}

// fencedIn is fenced for a caller that knows the item's queue (a Claim):
// no search of every queue's state directories for the id. cached, if
// not nil, is a valid claimed copy this process wrote: used when the file
// holds exactly its bytes.
func (b *Broker) fencedIn(op, queue, id string, attempt int, instance, as string, cached *docstore.Doc, fn func(l *docstore.Lock, it *Item) (*Item, error)) (*Item, error) {
	if queue == "" {
		loc, err := b.locate(id)
		if err != nil {
			return nil, err
		}
		queue = loc.queue
	} else if err := validID(id); err != nil {
		return nil, &ItemError{Op: op, ID: id, Err: err}
	}
	l, err := b.s.Lock(ItemLockKey(queue, id))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	rel := ItemPath(queue, Claimed, id)
	var it *Item
	fromClaim := false
	if cached != nil && cached.Path == rel {
		if data, rerr := b.readFile(rel); rerr == nil && cached.EqualBytes(data) {
			if cit, cerr := itemFromDoc(cached); cerr == nil {
				it, fromClaim = cit, true
			}
		}
	}
	if it == nil {
		it, err = b.readItem(rel)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Named where the item is now (done/, pending/...), not the
			// claimed/ path it is not at; by its id when it is nowhere here.
			state, at := "gone", ""
			if loc, err := b.locate(id); err == nil {
				state, at = loc.state, loc.path
			}
			if where := b.elsewhere(queue, id); where != "" {
				return nil, &ItemError{Op: op, ID: id, Path: at, Err: fmt.Errorf("%w: the item is %s", ErrStale, where)}
			}
			if attempt == 0 { // no attempt named: the item is simply not claimed
				return nil, &ItemError{Op: op, ID: id, Path: at, Err: fmt.Errorf("%w: the item is not claimed, it is %s", ErrStale, state)}
			}
			return nil, &ItemError{Op: op, ID: id, Path: at, Err: fmt.Errorf("%w: attempt %d is over, the item is %s", ErrStale, attempt, state)}
		}
		return nil, err
	}
	// A claimed file still byte for byte what this claim wrote cannot be
	// a crash leftover beside a done/ or dead/ copy: the claim checked
	// there was none, and a later state of the item would have been
	// written by a later claim (another attempt, other bytes) or by a
	// person. Two lookups less per completion.
	if !fromClaim && b.leftover(it) {
		return nil, &ItemError{Op: op, ID: id, Path: rel, Err: fmt.Errorf("%w: the item is already done or dead", ErrStale)}
	}
	if attempt != 0 && it.ClaimAttempt != attempt {
		return nil, &ItemError{Op: op, ID: id, Path: rel, Err: fmt.Errorf("%w: attempt %d, the current claim is attempt %d by %s", ErrStale, attempt, it.ClaimAttempt, it.ClaimedBy)}
	}
	if instance != "" && it.Instance != instance {
		holder := "no instance"
		if it.Instance != "" {
			holder = "instance " + it.Instance
		}
		return nil, &ItemError{Op: op, ID: id, Path: rel, Err: fmt.Errorf("%w: the claim (attempt %d by %s) belongs to %s, not to instance %s", ErrStale, it.ClaimAttempt, it.ClaimedBy, holder, instance)}
	}
	if as != "" && attempt == 0 && it.ClaimedBy != as {
		// Named, without the token: most likely the wrong item, or an
		// agent acting on another's claim by mistake. The attempt,
		// given on purpose, is the deliberate takeover.
		return nil, &ItemError{Op: op, ID: id, Path: rel, Err: &HolderError{Holder: it.ClaimedBy, Attempt: it.ClaimAttempt, As: as}}
	}
	return fn(l, it)
}

// Complete moves a claimed item to done/, recording completed and the
// result. A result longer than one line or 200 bytes is appended to the
// body under "## Result" and its first line kept in the result field.
func (b *Broker) Complete(id string, attempt int, result string) (*Item, error) {
	return b.complete("", id, attempt, b.inst, "", result, nil)
}

// CompleteAs is Complete for a caller that named who it acts as (an
// agent, or the person, named by --as or $TAVERN_AGENT): with attempt 0
// it refuses, with a *HolderError (ErrNotHolder), a claim held by
// anyone else; with the claim's attempt given it is a deliberate
// takeover and goes ahead. FailAs, RenewAs and ReleaseAs obey the same
// rule. as "" is Complete: fenced by the attempt only.
func (b *Broker) CompleteAs(id string, attempt int, as, result string) (*Item, error) {
	return b.complete("", id, attempt, b.inst, as, result, nil)
}

func (b *Broker) complete(queue, id string, attempt int, instance, as, result string, cached *docstore.Doc) (*Item, error) {
	var out *Item
	_, err := b.fencedIn("complete", queue, id, attempt, instance, as, cached, func(l *docstore.Lock, it *Item) (*Item, error) {
		if err := b.completeGate(it); err != nil {
			return nil, &ItemError{Op: "complete", ID: id, Path: it.Path, Err: err}
		}
		if err := b.coordEnd("done", it, result, 0); err != nil {
			return nil, err
		}
		now := b.now()
		d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Done, id), func(d *docstore.Doc) error {
			summary, full := resultText(result)
			if err := editFields(d, []docstore.Field{{Key: "completed", Value: now}, {Key: "updated", Value: now}, {Key: "result", Value: summary}}, append([]string{"lease_until", "hung_since"}, workDone(it)...)...); err != nil {
				return err
			}
			if full != "" {
				d.SetBody(append(append([]byte(nil), d.Body()...), []byte("\n## Result\n\n"+full+"\n")...))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out, err = itemFromDoc(d)
		if err != nil {
			return nil, err
		}
		_ = b.journal(EventCompleted, out, it.ClaimedBy, takenOver(map[string]any{"attempt": it.ClaimAttempt}, it, as))
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func resultText(r string) (summary, full string) {
	r = strings.TrimRight(r, "\n")
	if r == "" {
		return "", ""
	}
	first, _, multi := strings.Cut(r, "\n")
	if !multi && len(r) <= 200 {
		return r, ""
	}
	if len(first) > 200 {
		first = first[:200]
	}
	return first + " …", r
}

// Fail records reason as last_error and returns the item to pending/ with
// not_before = now + backoff·2^(attempts-1) (capped at backoff_max); if
// the item has used max_attempts it moves to dead/ with dead_reason. The
// returned item says which (State).
func (b *Broker) Fail(id string, attempt int, reason string) (*Item, error) {
	return b.fail(id, attempt, b.inst, "", reason)
}

// FailAs is Fail fenced by who acts as well (see CompleteAs).
func (b *Broker) FailAs(id string, attempt int, as, reason string) (*Item, error) {
	return b.fail(id, attempt, b.inst, as, reason)
}

func (b *Broker) fail(id string, attempt int, instance, as, reason string) (*Item, error) {
	var out *Item
	_, err := b.fenced("fail", id, attempt, instance, as, func(l *docstore.Lock, it *Item) (*Item, error) {
		q, err := b.Queue(it.Queue)
		if err != nil {
			return nil, err
		}
		now := b.now()
		if reason == "" {
			reason = "failed"
		}
		max := q.MaxAttempts
		if it.MaxAttempts > 0 {
			max = it.MaxAttempts
		}
		if it.Attempts >= max {
			if err := b.coordEnd("dead", it, reason, 0); err != nil {
				return nil, err
			}
			out, err = b.toDead(l, it, as, reason, fmt.Sprintf("failed %d of %d attempts; last error: %s", it.Attempts, max, reason))
			return out, err
		}
		if err := b.coordEnd("fail", it, reason, 0); err != nil {
			return nil, err
		}
		delay := backoff(q, it.Attempts)
		d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Pending, id), func(d *docstore.Doc) error {
			if err := editFields(d, []docstore.Field{{Key: "last_error", Value: reason}, {Key: "not_before", Value: now.Add(delay)}, {Key: "updated", Value: now}}, workDone(it)...); err != nil {
				return err
			}
			return clearClaim(d)
		})
		if err != nil {
			return nil, err
		}
		if out, err = itemFromDoc(d); err != nil {
			return nil, err
		}
		_ = b.journal(EventFailed, out, it.ClaimedBy, takenOver(map[string]any{"attempt": it.ClaimAttempt, "error": reason, "retry_in": delay.String()}, it, as))
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// backoff is the delay before attempt n+1 after n failed attempts:
// backoff doubled per attempt, capped at backoff_max (a cap of 0 retries
// at once).
func backoff(q *Queue, n int) time.Duration {
	d := q.Backoff
	for i := 1; i < n && d < q.BackoffMax; i++ {
		d *= 2
	}
	if d > q.BackoffMax {
		d = q.BackoffMax
	}
	return d
}

// toDead moves a claimed item to dead/; as is who asked (see takenOver).
func (b *Broker) toDead(l *docstore.Lock, it *Item, as, lastErr, why string) (*Item, error) {
	now := b.now()
	d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Dead, it.ID), func(d *docstore.Doc) error {
		f := []docstore.Field{{Key: "last_error", Value: lastErr}, {Key: "dead_reason", Value: why}, {Key: "updated", Value: now}}
		if it.ClaimedBy != "" {
			f = append(f, docstore.Field{Key: "last_claimed_by", Value: it.ClaimedBy}) // who to escalate from (on_dead)
		}
		if err := editFields(d, f, workDone(it)...); err != nil {
			return err
		}
		return clearClaim(d)
	})
	if err != nil {
		return nil, err
	}
	out, err := itemFromDoc(d)
	if err != nil {
		return nil, err
	}
	_ = b.journal(EventDead, out, it.ClaimedBy, takenOver(map[string]any{"attempt": it.ClaimAttempt, "reason": why}, it, as))
	return out, nil
}

// Release returns a claimed item to pending/ at once; the attempt is not
// counted against max_attempts (the fencing token still advances).
func (b *Broker) Release(id string, attempt int) (*Item, error) {
	return b.release(id, attempt, b.inst, "")
}

// ReleaseAs is Release fenced by who acts as well (see CompleteAs).
func (b *Broker) ReleaseAs(id string, attempt int, as string) (*Item, error) {
	return b.release(id, attempt, b.inst, as)
}

func (b *Broker) release(id string, attempt int, instance, as string) (*Item, error) {
	var out *Item
	_, err := b.fenced("release", id, attempt, instance, as, func(l *docstore.Lock, it *Item) (*Item, error) {
		if err := b.coordEnd("release", it, "", 0); err != nil {
			return nil, err
		}
		now := b.now()
		d, err := b.moveDoc(l, it.Doc, ItemPath(it.Queue, Pending, id), func(d *docstore.Doc) error {
			n := it.Attempts - 1
			if n < 0 {
				n = 0
			}
			if err := setFields(d, docstore.Field{Key: "attempts", Value: n}, docstore.Field{Key: "updated", Value: now}); err != nil {
				return err
			}
			return clearClaim(d)
		})
		if err != nil {
			return nil, err
		}
		if out, err = itemFromDoc(d); err != nil {
			return nil, err
		}
		_ = b.journal(EventReleased, out, it.ClaimedBy, takenOver(map[string]any{"attempt": it.ClaimAttempt}, it, as))
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Renew sets lease_until to now + the queue's lease.
func (b *Broker) Renew(id string, attempt int) (*Item, error) {
	return b.renew(id, attempt, b.inst, "")
}

// RenewAs is Renew fenced by who acts as well (see CompleteAs).
func (b *Broker) RenewAs(id string, attempt int, as string) (*Item, error) {
	return b.renew(id, attempt, b.inst, as)
}

func (b *Broker) renew(id string, attempt int, instance, as string) (*Item, error) {
	return b.fenced("renew", id, attempt, instance, as, func(l *docstore.Lock, it *Item) (*Item, error) {
		q, err := b.Queue(it.Queue)
		if err != nil {
			return nil, err
		}
		if err := b.coordEnd("renew", it, "", q.Lease); err != nil {
			return nil, err
		}
		now := b.now()
		d, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
			if err := setFields(d, docstore.Field{Key: "lease_until", Value: now.Add(q.Lease)}, docstore.Field{Key: "updated", Value: now}); err != nil {
				return err
			}
			return delFields(d, "hung_since")
		})
		if err != nil {
			return nil, err
		}
		return itemFromDoc(d)
	})
}

// Retry moves dead items of a queue back to pending/ with attempts reset
// (all of them if ids is empty). It returns the items moved.
func (b *Broker) Retry(queue string, ids ...string) ([]*Item, error) {
	if _, err := b.Queue(queue); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		names, err := b.listDir(queue, Dead)
		if err != nil {
			return nil, err
		}
		ids = names
	} else {
		// Every id is checked before any is retried: a typo in the last
		// one retried the others and then said "read .../dead/X.md: no
		// such file or directory".
		var err error
		if ids, err = b.deadIDs(queue, ids); err != nil {
			return nil, err
		}
	}
	var out []*Item
	for _, id := range ids {
		it, err := b.retryOne(queue, id)
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
	return out, nil
}

// deadIDs resolves the ids retry was given: a dead item's id, a unique
// prefix of one in queue, QUEUE/ID or the item's file (ResolveID). An item that is not dead (or in another queue)
// is retryOne's error; an id that names no item is an unknown item.
func (b *Broker) deadIDs(queue string, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if strings.ContainsAny(id, "/\\") {
			// QUEUE/ID as ls prints it, or the item's file: the item it
			// names, as every ID argument takes it.
			full, err := b.ResolveID(id)
			if errors.Is(err, docstore.ErrAmbiguous) {
				return nil, &ItemError{Op: "retry", ID: id, Err: err}
			}
			if err == nil {
				id = full
			}
		}
		if err := validID(id); err != nil {
			return nil, &ItemError{Op: "retry", ID: id, Err: err}
		}
		if b.exists(ItemPath(queue, Dead, id)) {
			out = append(out, id)
			continue
		}
		if _, err := b.locate(id); err == nil {
			_, err := b.retryOne(queue, id) // says where it is; moves nothing
			if err == nil {
				return nil, &ItemError{Op: "retry", ID: id, Err: fmt.Errorf("%w: the item was retried meanwhile", ErrState)}
			}
			return nil, err
		}
		full, err := b.ResolveID(queue + "/" + id)
		switch {
		case err == nil && b.exists(ItemPath(queue, Dead, full)):
			out = append(out, full)
		case err == nil:
			if _, err := b.retryOne(queue, full); err != nil {
				return nil, err // not dead: says what it is; moves nothing
			}
			return nil, &ItemError{Op: "retry", ID: full, Err: fmt.Errorf("%w: the item was retried meanwhile", ErrState)}
		case errors.Is(err, docstore.ErrAmbiguous):
			return nil, &ItemError{Op: "retry", ID: id, Err: err}
		default:
			return nil, &ItemError{Op: "retry", ID: id, Err: unknownItem(id)}
		}
	}
	return out, nil
}

func (b *Broker) retryOne(queue, id string) (*Item, error) {
	if err := validID(id); err != nil {
		return nil, &ItemError{Op: "retry", ID: id, Err: err}
	}
	l, err := b.s.Lock(ItemLockKey(queue, id))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	rel := ItemPath(queue, Dead, id)
	it, err := b.readItem(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if loc, lerr := b.locate(id); lerr == nil {
				if loc.queue != queue {
					// Not in the queue named: not found there, and where it is.
					return nil, &ItemError{Op: "retry", ID: id, Path: loc.path, Err: fmt.Errorf("%w: the item is %s in queue %s, not in %s", fs.ErrNotExist, loc.state, loc.queue, queue)}
				}
				return nil, &ItemError{Op: "retry", ID: id, Path: loc.path, Err: fmt.Errorf("%w: the item is %s, not dead", ErrState, loc.state)}
			}
		}
		return nil, err
	}
	if err := b.coordReopen(it); err != nil {
		return nil, err
	}
	now := b.now()
	d, err := b.move(l, rel, ItemPath(queue, Pending, id), func(d *docstore.Doc) error {
		if err := setFields(d, docstore.Field{Key: "attempts", Value: 0}, docstore.Field{Key: "updated", Value: now}); err != nil {
			return err
		}
		return delFields(d, append([]string{"dead_reason", "not_before", "cancelled"}, workDone(it)...)...)
	})
	if err != nil {
		return nil, err
	}
	out, err := itemFromDoc(d)
	if err != nil {
		return nil, err
	}
	_ = b.journal(EventRetried, out, "", map[string]any{"last_error": it.LastError})
	b.reopenGates(out)
	return out, nil
}

// takenOver adds "by" to an event's data when as, who ended the claim,
// is not its holder (a takeover at the current attempt, CompleteAs): the
// event's agent stays the holder whose claim it was.
func takenOver(data map[string]any, it *Item, as string) map[string]any {
	if as != "" && as != it.ClaimedBy {
		data["by"] = as
	}
	return data
}

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
		return fmt.Errorf("invalid item id %q", id)
	}
	return nil
}

func setFields(d *docstore.Doc, fields ...docstore.Field) error {
	return d.SetMany(fields) // one re-parse, not one per field
}

// editFields sets fields and deletes keys with one re-parse.
func editFields(d *docstore.Doc, fields []docstore.Field, del ...string) error {
	return d.Edit(fields, del...)
}

func delFields(d *docstore.Doc, keys ...string) error {
	for _, k := range keys {
		if err := d.Delete(k); err != nil { // no-op when absent
			return err
		}
	}
	return nil
}

// clearClaim removes the fields of the claim that ended. claim_attempt
// stays: it is the fencing counter and only ever grows.
func clearClaim(d *docstore.Doc) error {
	return delFields(d, "claimed_by", "claim_kind", "liveness_lock", "instance", "lease_until", "started", "hung_since", "claim_machine", "claim_lease")
}
