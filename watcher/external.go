package watcher

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// externals decides which observed changes no engine call made, and
// journals each of them once as TypeExternal.
//
// The truth it decides from is the journal's per-path state
// (journal.Heads), never the index cache. An observation (a path's new
// revision, or its removal, with the time its content was read) waits
// Options.ExternalGrace, since the engine journals a mutation right after
// writing the file; then, under the journal's file lock and with the
// heads caught up with every process's appends, it is external unless
// the journal accounts for it: the head of the path is that state, or a
// record of that state was current after this watcher's previous
// observation of the path (the engine wrote it, or another watcher
// journaled it). Decisions are made in the order of observation, so a
// field toggled back and forth is journaled at every save.
type externals struct {
	p *Projection
	j *journal.Journal
	h *journal.Heads

	mu      sync.Mutex
	queue   []*observation   // in observation order
	last    map[string]int64 // path: seen of its last observation, unix ns (a third of a time.Time)
	start   time.Time        // observations before this have no previous one
	timer   *time.Timer
	saved   time.Time // last checkpoint of h
	stopped bool
	busy    sync.WaitGroup // a decision batch in flight
	// dmu keeps decision batches in observation order: the timer's and
	// settle's may run at once.
	dmu sync.Mutex
}

// observation is one change the projection saw.
type observation struct {
	path    string
	kind    string
	present bool
	entry   *Entry    // the new state (present)
	prev    *Entry    // the last valid state projected before it, if known
	seen    time.Time // when its content was read (or its absence seen)
	after   time.Time // seen of the previous observation of the path
}

func newExternals(p *Projection, j *journal.Journal, h *journal.Heads, start time.Time) *externals {
	return &externals{p: p, j: j, h: h, last: map[string]int64{}, start: start, saved: time.Now()}
}

// observe queues a change for its decision. The projection calls it
// under p.mu (the order is p.mu, then x.mu), so x.mu is never held while
// calling into the projection.
func (x *externals) observe(o *observation) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return
	}
	if t, ok := x.last[o.path]; ok {
		o.after = time.Unix(0, t).UTC()
	} else {
		o.after = x.start
	}
	if o.seen.After(o.after) {
		x.last[o.path] = o.seen.UnixNano()
	}
	x.queue = append(x.queue, o)
	if x.timer == nil {
		x.arm()
	}
}

// arm sets the timer for the oldest queued observation; x.mu is held.
func (x *externals) arm() {
	if len(x.queue) == 0 {
		x.timer = nil
		return
	}
	wait := time.Until(x.queue[0].seen.Add(x.p.opt.ExternalGrace))
	x.busy.Add(1)
	x.timer = time.AfterFunc(max(wait, 0), func() {
		defer x.busy.Done()
		x.decide()
	})
}

// decide journals the observations whose grace has passed.
func (x *externals) decide() {
	x.dmu.Lock()
	defer x.dmu.Unlock()
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		return
	}
	now := time.Now()
	n := 0
	for n < len(x.queue) && !x.queue[n].seen.Add(x.p.opt.ExternalGrace).After(now) {
		n++
	}
	batch := slices.Clone(x.queue[:n])
	x.queue = slices.Delete(x.queue, 0, n)
	x.mu.Unlock()

	if len(batch) > 0 {
		evs := make([]journal.Event, len(batch))
		for i, o := range batch {
			evs[i] = journal.Event{Type: journal.TypeExternal, Kind: o.kind, Path: o.path}
		}
		i := 0
		_, err := x.j.AppendIf(x.h, evs, func(e *journal.Event) bool {
			o := batch[i]
			i++
			return x.decideOne(o, e)
		})
		if err != nil {
			x.p.publish(journal.Event{Type: journal.TypeError, Time: schema.TimeOf(time.Now().UTC()), Data: map[string]any{"error": err.Error()}})
		}
		// Journaled now, or by the engine: either way the state the
		// journal records, whose fields later changes compare with.
		for _, o := range batch {
			x.seenState(o)
		}
		if time.Since(x.saved) > time.Minute {
			x.saved = time.Now()
			_ = x.h.Save()
		}
	}

	x.mu.Lock()
	x.timer = nil
	if !x.stopped {
		x.arm()
	}
	x.mu.Unlock()
}

// decideOne fills in e for o and reports whether o is external. It runs
// under the journal's lock with the heads current (AppendIf).
func (x *externals) decideOne(o *observation, e *journal.Event) bool {
	rev := ""
	if o.present {
		rev = o.entry.Rev
	}
	if x.h.Explained(o.path, rev, o.present, o.after) {
		return false
	}
	// What the journal said when the change was seen: records of later
	// changes (an engine update right after a hand edit) do not count.
	head, _ := x.h.HeadAt(o.path, o.seen)
	e.Rev = rev
	e.Data = map[string]any{"seen": schema.FormatTime(o.seen)}
	switch {
	case !o.present:
		e.Data["op"] = journal.TypeRemoved
	case !o.entry.Valid:
		e.Data["op"] = journal.TypeInvalid
		pr := o.entry.Errors[0]
		e.Data["error"], e.Data["line"], e.Data["col"] = pr.Msg, pr.Line, pr.Col
	case head.LastValid == "":
		// Never valid since it appeared (or first seen invalid): the
		// valid state creates the document.
		e.Data["op"] = journal.TypeCreated
	default:
		e.Data["op"] = journal.TypeUpdated
		// The changed fields are relative to the last valid state the
		// journal recorded, when its fields are known: projected before
		// this change, or seen by a watcher before (the heads keep a
		// digest). Otherwise the list is left out rather than guessed.
		var ch []string
		known := true
		if o.prev != nil && o.prev.Rev == head.LastValid {
			ch = journal.ChangedFields(o.prev.Fields, o.entry.Fields)
		} else if d, ok := x.h.FieldsOf(o.path, head.LastValid); ok {
			ch = d.Changed(o.entry.Fields)
		} else {
			known = false
		}
		if known && len(ch) > 0 {
			e.Data["changed"] = ch
		}
	}
	return true
}

// seenState records the fields of a state the journal accounts for, so
// a later change (even one made while no watcher runs) can list its
// changed fields.
func (x *externals) seenState(o *observation) {
	if o.present && o.entry.Valid && o.entry.Fields != nil {
		x.h.SetFields(o.path, o.entry.Rev, o.entry.Fields)
	}
}

// settle waits until every change observed so far is past its grace and
// decided (journaled if external), or until ctx is done.
func (x *externals) settle(ctx context.Context) {
	x.mu.Lock()
	if x.stopped || len(x.queue) == 0 {
		x.mu.Unlock()
		x.dmu.Lock() // a batch in flight is journaled
		x.dmu.Unlock()
		return
	}
	due := x.queue[len(x.queue)-1].seen.Add(x.p.opt.ExternalGrace)
	x.mu.Unlock()
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	x.decide()
}

// stop cancels the decisions not yet due and waits for one in flight.
func (x *externals) stop() {
	x.mu.Lock()
	x.stopped = true
	if x.timer != nil && x.timer.Stop() {
		x.busy.Done()
	}
	x.timer = nil
	x.queue = nil
	x.mu.Unlock()
	x.busy.Wait()
	_ = x.h.Save()
}

// maxReplaced bounds the replaced states kept per path between saves: the
// one the journal last recorded valid is the latest engine write, which
// a few hand edits at most follow.
const maxReplaced = 8

// keepReplaced remembers old, a valid entry the index cache holds, which
// a change replaces; p.mu is held. Called only by a projection that does
// not journal externals: once its SaveCache writes the index, nothing
// else knows old's fields, and a hand edit that the next watcher journals
// would have no changed fields.
func (p *Projection) keepReplaced(path string, old *Entry) {
	if p.replaced == nil {
		p.replaced = map[string][]*Entry{}
	}
	olds := append(p.replaced[path], old)
	if len(olds) > maxReplaced {
		olds = slices.Delete(olds, 0, len(olds)-maxReplaced)
	}
	p.replaced[path] = olds
}

// saveReplaced records in the journal's heads the fields of the replaced
// states the journal last recorded valid and no watcher saw, so the next
// watcher's external entry for the change lists the changed fields.
// The heads are loaded only when there are any: a one-shot ls that found
// nothing changed reads no journal.
func (p *Projection) saveReplaced(replaced map[string][]*Entry) error {
	if len(replaced) == 0 {
		return nil
	}
	h, err := journal.LoadHeads(p.root)
	if err != nil {
		return err
	}
	set := false
	for path, olds := range replaced {
		hd, ok := h.Get(path)
		if !ok || hd.LastValid == "" || h.HasFields(path, hd.LastValid) {
			continue
		}
		for _, old := range slices.Backward(olds) {
			if old.Rev == hd.LastValid {
				v := old.view()
				h.SetFields(path, v.Rev, v.Fields)
				set = true
				break
			}
		}
	}
	if !set && !h.Stale() {
		return nil // after engine writes: their records are the heads
	}
	return h.Save()
}
