package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Gates: decisions only a person can make, and "not before" timers.
//
// A gate is a document gates/<id>.md naming an item, a stage (claim:
// the item is not claimed until the gate passes; complete: it is not
// completed) and a type (human, timer). An item lists its gates in
// gates:, and `gate: human` in an item stands for the gate whose id is
// the item's own id (gates/<item-id>.md, created when it is first
// decided), so a hand-written item or a plan line can ask for a person
// without creating a document.
//
// A human gate passes only with a decision record: Approve and Reject
// write approvals/<id>.md (who, when, from which process and its
// parents) and then point the gate's approval: field at it. A gate
// edited by hand to approved (or rejected) without a matching record is
// still pending to the engine, and CheckGate reports it.
//
// Approve and Reject refuse callers that are agents (Caller.Agent): a
// process with TAVERN_AGENT or TAVERN_INSTANCE in its environment, or
// one whose parents include a spawn wrapper or an agent. This keeps an
// agent (or a script it runs) from passing its own gate; it is no
// security boundary against a process of the same Unix user that sets
// out to forge the files (run agents as another user for that).

// Gate stages, types and statuses.
const (
	StageClaim    = "claim"
	StageComplete = "complete"
	GateHuman     = "human"
	GateTimer     = "timer"
	GatePending   = "pending"
	GateApproved  = "approved"
	GateRejected  = "rejected"
)

// Gate event types.
const (
	EventGateAdded    = "gate.added"
	EventGateApproved = "gate.approved"
	EventGateRejected = "gate.rejected"
	EventGateReopened = "gate.reopened"
	EventGateRefused  = "gate.refused" // an agent tried to decide
	// A gate id taken out of its item's gates: because it has no
	// document (doctor's repair of a crash inside AddGate).
	EventGateDropped = "gate.dropped"
)

// Gate errors.
var (
	// ErrGated is returned by Complete (and Resolve) while a gate of the
	// item's complete stage has not passed.
	ErrGated = errors.New("waiting at a gate")
	// ErrRejected is returned when the item's gate was rejected.
	ErrRejected = errors.New("rejected at a gate")
	// ErrNotHuman is returned by Approve and Reject for a caller that is
	// an agent or runs inside one.
	ErrNotHuman = errors.New("an agent cannot pass a gate")
	// ErrDecided is returned for a gate that is already decided.
	ErrDecided = errors.New("gate already decided")
	// ErrForged marks a gate whose decision has no approval record (a hand
	// edit): the engine treats it as pending.
	ErrForged = errors.New("gate decision without its approval record")
)

// GateError names the gate an operation failed on.
type GateError struct {
	Op   string
	Gate string
	Path string
	Err  error
}

func (e *GateError) Error() string {
	where := e.Path
	if where == "" {
		where = e.Gate
	}
	return fmt.Sprintf("%s %s: %v", e.Op, where, e.Err)
}

func (e *GateError) Unwrap() error { return e.Err }

// Gate is a gate as read from its document (or implied by an item's
// gate: human field before its document exists).
type Gate struct {
	ID             string           `json:"id"`
	Item           string           `json:"item"`
	Queue          string           `json:"queue,omitempty"`
	Stage          string           `json:"stage"`
	Type           string           `json:"type"`
	Until          schema.Timestamp `json:"until,omitzero"`
	Status         string           `json:"status"` // as written in the file
	Reason         string           `json:"reason,omitempty"`
	DecidedBy      string           `json:"decided_by,omitempty"`
	DecidedAt      schema.Timestamp `json:"decided_at,omitzero"`
	DecisionReason string           `json:"decision_reason,omitempty"`
	Approval       string           `json:"approval,omitempty"`
	Path           string           `json:"path"`
	// State is what the engine acts on: pending, passed or rejected.
	State string `json:"state"`
	// Problem says why the file's status is not acted on (ErrForged).
	Problem string `json:"problem,omitempty"`
	// Implicit: implied by the item's gate: field, no document yet.
	Implicit bool `json:"implicit,omitempty"`
	// Unlisted: its item does not list it (ErrGateUnlisted), so it gates
	// nothing and waits for no one (Gates fills it).
	Unlisted bool `json:"unlisted,omitempty"`
	// Existing: AddGate found this gate already on the item and added
	// nothing.
	Existing bool `json:"existing,omitempty"`
	// AlreadyDecided: Approve (Reject) found the gate approved (rejected)
	// already and wrote nothing: deciding twice the same way is a no-op.
	AlreadyDecided bool `json:"already_decided,omitempty"`
	// Title and ItemState describe the item (GateList fills them).
	Title     string        `json:"title,omitempty"`
	ItemState string        `json:"item_state,omitempty"`
	Doc       *docstore.Doc `json:"-"`
}

// Engine states of a gate.
const (
	GateStatePending  = "pending"
	GateStatePassed   = "passed"
	GateStateRejected = "rejected"
)

// GatePath is the document path of a gate.
func GatePath(id string) string { return "gates/" + id + ".md" }

// ApprovalPath is the document path of an approval record.
func ApprovalPath(id string) string { return "approvals/" + id + ".md" }

func gateFromDoc(d *docstore.Doc) *Gate {
	g := &Gate{ID: d.Name, Item: d.String("item"), Queue: d.String("queue"), Stage: d.String("stage"), Type: d.String("type"),
		Status: d.String("status"), Reason: d.String("reason"), DecidedBy: d.String("decided_by"),
		DecisionReason: d.String("decision_reason"), Approval: d.String("approval"), Path: d.Path, Doc: d}
	g.Until.Time, _ = d.Time("until")
	g.DecidedAt.Time, _ = d.Time("decided_at")
	if g.Stage == "" {
		g.Stage = StageComplete
	}
	if g.Type == "" {
		g.Type = GateHuman
	}
	if g.Status == "" {
		g.Status = GatePending
	}
	return g
}

// evaluate sets g.State (and g.Problem) from the file and, for a human
// decision, its approval record.
func (b *Broker) evaluate(g *Gate, now time.Time) {
	g.State, g.Problem = GateStatePending, ""
	if g.Type == GateTimer {
		if !g.Until.IsZero() && !now.Before(g.Until.Time) {
			g.State = GateStatePassed
		}
		return
	}
	if g.Status == GatePending || g.Implicit {
		return
	}
	if err := b.checkRecord(g); err != nil {
		g.Problem = err.Error()
		return
	}
	switch g.Status {
	case GateApproved:
		g.State = GateStatePassed
	case GateRejected:
		g.State = GateStateRejected
	}
}

// checkRecord verifies that a decided gate points at an approval record
// of the same decision for this gate.
func (b *Broker) checkRecord(g *Gate) error {
	want := map[string]string{GateApproved: "approved", GateRejected: "rejected"}[g.Status]
	if want == "" {
		return nil
	}
	if g.Approval == "" || schema.ValidName(g.Approval) != nil {
		return fmt.Errorf("%w: status %s but no approval: field naming approvals/<id>.md", ErrForged, g.Status)
	}
	rec, err := b.s.Get(ApprovalPath(g.Approval))
	if err != nil {
		return fmt.Errorf("%w: status %s but %s cannot be read: %v", ErrForged, g.Status, ApprovalPath(g.Approval), err)
	}
	if rec.String("gate") != g.ID || rec.String("decision") != want {
		return fmt.Errorf("%w: %s records %q for gate %q, not %q for %q", ErrForged, rec.Path, rec.String("decision"), rec.String("gate"), want, g.ID)
	}
	return nil
}

// CheckGate is `tavern check`'s semantic check of a gate document: a
// decision without its approval record is reported (and ignored by the
// engine). Other documents give nil.
func CheckGate(s *docstore.Store, d *docstore.Doc) error {
	if d.Kind != schema.Gate {
		return nil
	}
	b := &Broker{s: s}
	g := gateFromDoc(d)
	if g.Type != GateHuman || g.Status == GatePending {
		return nil
	}
	if err := b.checkRecord(g); err != nil {
		line := 0
		if n := d.Get("status"); n != nil {
			line = n.Line + 1 // the frontmatter starts on the file's line 2
		}
		return &GateError{Op: "check", Gate: g.ID, Path: fmt.Sprintf("%s:%d", d.Path, line),
			Err: fmt.Errorf("%w; the engine ignores it (decide with `tavern approve|reject %s`)", err, g.ID)}
	}
	return nil
}

// readGate reads gates/<id>.md; an implied gate (the item's own id) that
// has no document yet comes back Implicit and pending.
func (b *Broker) readGate(id string, it *Item) (*Gate, error) {
	d, err := b.s.Get(GatePath(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && it != nil && id == it.ID && it.Gate == GateHuman {
			return &Gate{ID: id, Item: it.ID, Queue: it.Queue, Stage: StageComplete, Type: GateHuman, Status: GatePending,
				Reason: "gate: human", Path: GatePath(id), Implicit: true}, nil
		}
		return nil, err
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &docstore.ValidationError{Path: d.Path, Errors: errs}
	}
	return gateFromDoc(d), nil
}

// gateIDs lists the ids of an item's gates: its own id for gate: human,
// then the gates: list.
func (it *Item) gateIDs() []string {
	var ids []string
	if it.Gate == GateHuman {
		ids = append(ids, it.ID)
	}
	for _, id := range it.Gates {
		if id != it.ID {
			ids = append(ids, id)
		}
	}
	return ids
}

// ItemGates returns an item's gates, evaluated. A gate document that is
// missing or broken is returned as a pending gate with its Problem set:
// a gate nobody can read is not passed.
func (b *Broker) ItemGates(it *Item) []*Gate {
	now := b.now()
	var out []*Gate
	for _, id := range it.gateIDs() {
		g, err := b.readGate(id, it)
		if err != nil {
			g = &Gate{ID: id, Item: it.ID, Queue: it.Queue, Stage: StageComplete, Type: GateHuman, Status: GatePending,
				Path: GatePath(id), State: GateStatePending, Problem: err.Error()}
			out = append(out, g)
			continue
		}
		b.evaluate(g, now)
		out = append(out, g)
	}
	return out
}

// ClaimGated reports whether a claim-stage gate (a person's, or a timer
// not yet due) keeps it from being claimed now: what Take skips, so that
// a listing of what Take would claim (tavern next) agrees with it.
func (b *Broker) ClaimGated(it *Item) bool { return b.claimGated(it, &Diagnostics{}) }

// claimGate reports whether a claim-stage gate keeps item it from being
// claimed now (Take), noting when a timer will open it.
func (b *Broker) claimGated(it *Item, diag *Diagnostics) bool {
	if it.Gate == "" && len(it.Gates) == 0 {
		return false
	}
	gated := false
	for _, g := range b.ItemGates(it) {
		if g.Stage != StageClaim || g.State == GateStatePassed {
			continue
		}
		gated = true
		if g.Type == GateTimer && g.State == GateStatePending {
			diag.wakeAt(g.Until.Time)
		}
	}
	if gated {
		diag.Gated++
	}
	return gated
}

// completeGate returns ErrGated (or ErrRejected) if a complete-stage
// gate of it has not passed.
func (b *Broker) completeGate(it *Item) error {
	if it.Gate == "" && len(it.Gates) == 0 {
		return nil
	}
	for _, g := range b.ItemGates(it) {
		if g.Stage == StageClaim && g.Type == GateTimer {
			continue // a timer at the claim stage has passed, or the item would not be claimed
		}
		if g.Stage == StageClaim && g.State != GateStateRejected {
			continue
		}
		switch g.State {
		case GateStateRejected:
			return fmt.Errorf("%w: %s by %s: %s", ErrRejected, g.Path, g.DecidedBy, g.DecisionReason)
		case GateStatePending:
			why := "waiting for a person (tavern approve " + g.ID + ")"
			if g.Problem != "" {
				why += "; " + g.Problem
			}
			return fmt.Errorf("%w: %s: %s", ErrGated, g.Path, why)
		}
	}
	return nil
}

// DoneWork is what is left of an item whose work is done (work_done:
// an earlier claim ran its command to success and waited at a
// complete-stage gate, then gave the item back undecided): the gates that
// hold its completion. Whoever claims it next has no work to redo, only
// the gates to see through (Broker.DoneWork).
type DoneWork struct {
	ID     string
	At     time.Time // work_done
	Result string    // work_result
	// Gates are those that keep the item from completing: pending (a
	// person decides) or rejected (it can only fail now). None: the
	// gates have passed, it can be completed.
	Gates []*Gate
}

// DoneWork returns what is left of it when its work is done, nil when it
// is not (a fresh item, or one whose earlier attempt failed: work_done is
// cleared then, and the work is to be done again).
func (b *Broker) DoneWork(it *Item) *DoneWork {
	if it == nil || it.WorkDone.IsZero() {
		return nil
	}
	w := &DoneWork{ID: it.ID, At: it.WorkDone}
	if it.Doc != nil {
		w.Result = it.Doc.String("work_result")
	}
	for _, g := range b.ItemGates(it) {
		// As completeGate: a claim-stage gate holds completion only
		// when it rejected the item.
		if g.State == GateStatePassed || g.Stage == StageClaim && g.State != GateStateRejected {
			continue
		}
		w.Gates = append(w.Gates, g)
	}
	return w
}

// GateIDs lists the ids of the gates that hold the item.
func (w *DoneWork) GateIDs() []string {
	ids := make([]string, 0, len(w.Gates))
	for _, g := range w.Gates {
		ids = append(ids, g.ID)
	}
	return ids
}

// Next says what whoever holds the item does next: the work is not to be
// done again, only the gates decided, then the item completed (or, a
// gate rejected it, failed).
func (w *DoneWork) Next() string {
	var pending, rejected []string
	for _, g := range w.Gates {
		if g.State == GateStateRejected {
			rejected = append(rejected, g.ID)
		} else {
			pending = append(pending, g.ID)
		}
	}
	switch {
	case len(rejected) > 0:
		return fmt.Sprintf("gate %s rejected it: tavern item fail %s", strings.Join(rejected, ", "), w.ID)
	case len(pending) > 0:
		return fmt.Sprintf("do not redo the work: decide gate %s (tavern approve %s, or tavern reject %s), then tavern item done %s",
			strings.Join(pending, ", "), pending[0], pending[0], w.ID)
	}
	return fmt.Sprintf("do not redo the work: its gates have passed: tavern item done %s", w.ID)
}

// GateOptions describe a new gate (AddGate).
type GateOptions struct {
	Reason string
	Stage  string    // claim | complete (default complete; timer gates: claim)
	Until  time.Time // a timer gate: not before this time
	By     string    // who added it (journaled)
}

// AddGate adds a gate to item id (pending or claimed): a human gate, or a
// timer gate when opt.Until is set. It returns the new gate.
//
// It is idempotent: a gate the item already has, of the same type and
// stage, with the same reason and (timer) until, still pending, is
// returned with Existing set and nothing is written. A second identical
// gate would hold nothing more; it would only need a second approval.
// A decided gate is not matched: the same gate again is a new request.
func (b *Broker) AddGate(id string, opt GateOptions) (*Gate, error) {
	typ := GateHuman
	if !opt.Until.IsZero() {
		typ = GateTimer
		if opt.Stage == "" {
			opt.Stage = StageClaim
		}
	}
	if opt.Stage == "" {
		opt.Stage = StageComplete
	}
	if typ == GateHuman && strings.TrimSpace(opt.Reason) == "" {
		// The person is shown the reason to decide on: a gate without
		// one asks nothing.
		return nil, &ItemError{Op: "gate", ID: id, Err: fmt.Errorf("%w: a person's gate needs a reason (what the person decides)", ErrBadOption)}
	}
	if opt.Stage != StageClaim && opt.Stage != StageComplete {
		return nil, &ItemError{Op: "gate", ID: id, Err: fmt.Errorf("%w: stage %q (want claim or complete)%s", ErrBadOption, opt.Stage, schema.ChoiceHint(opt.Stage, []string{StageClaim, StageComplete}))}
	}
	// A timer gate whose time has passed would open as it is made: a
	// typo (-5m for 5m, a past date), never a gate anyone wants.
	if typ == GateTimer && !opt.Until.After(b.now()) {
		return nil, &ItemError{Op: "gate", ID: id, Err: fmt.Errorf("%w: until %s: that time has passed (a timer gate holds the item until a time to come)",
			ErrBadOption, schema.FormatTime(opt.Until))}
	}
	gid := docstore.NewID()
	var out *Gate
	err := b.editItem("gate", id, func(l *docstore.Lock, it *Item) error {
		switch it.State {
		case Done, Dead:
			return &ItemError{Op: "gate", ID: id, Path: it.Path, Err: fmt.Errorf("%w: the item is %s", ErrState, it.State)}
		case Claimed:
			if opt.Stage == StageClaim {
				return &ItemError{Op: "gate", ID: id, Path: it.Path, Err: fmt.Errorf("%w: the item is already claimed; a claim-stage gate comes too late", ErrState)}
			}
		}
		for _, g := range b.ItemGates(it) {
			if sameGate(g, typ, opt) {
				g.Existing = true
				out = g
				return nil
			}
		}
		now := b.now()
		fields := []docstore.Field{{Key: schema.VersionField, Value: schema.Gate.Version}, {Key: "id", Value: gid},
			{Key: "item", Value: it.ID}, {Key: "queue", Value: it.Queue}, {Key: "stage", Value: opt.Stage}, {Key: "type", Value: typ}}
		if typ == GateTimer {
			fields = append(fields, docstore.Field{Key: "until", Value: opt.Until})
		}
		fields = append(fields, docstore.Field{Key: "status", Value: GatePending})
		if opt.Reason != "" {
			fields = append(fields, docstore.Field{Key: "reason", Value: opt.Reason})
		}
		fields = append(fields, docstore.Field{Key: "created", Value: now}, docstore.Field{Key: "updated", Value: now})
		body := "\n" + strings.TrimSpace(opt.Reason) + "\n"
		d, err := docstore.New(schema.Gate, fields, []byte(body))
		if err != nil {
			return err
		}
		// The item's list first: a gate document is only written for an
		// item that lists it (RuleGateItem), as the engine reads gates
		// only through that list. A crash in between leaves the item
		// waiting on a gate with no document (held, and check reports
		// it), never a gate that holds nothing.
		gates := append(append([]string(nil), it.Gates...), gid)
		if _, err := b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
			return d.SetMany([]docstore.Field{{Key: "gates", Value: gates}, {Key: "updated", Value: now}})
		}); err != nil {
			return err
		}
		if err := b.s.CreateWith(GatePath(gid), d, docstore.CreateOptions{Held: []string{l.Key}}); err != nil {
			// Back as it was: the item would wait for ever on a gate
			// with no document.
			prev := it.Gates
			_, _ = b.s.UpdateHeld(l, it.Path, func(d *docstore.Doc) error {
				if len(prev) == 0 {
					return d.Edit(nil, "gates")
				}
				return d.SetMany([]docstore.Field{{Key: "gates", Value: prev}})
			})
			return err
		}
		out = gateFromDoc(d)
		b.evaluate(out, now)
		data := map[string]any{"gate": gid, "stage": opt.Stage, "type": typ}
		if opt.Reason != "" {
			data["reason"] = opt.Reason
		}
		_ = b.gateEvent(EventGateAdded, out, opt.By, data)
		return nil
	})
	return out, err
}

// sameGate reports whether g is the gate opt (of type typ) asks for,
// still pending: AddGate's idempotence. Until is compared as written
// (millisecond precision).
func sameGate(g *Gate, typ string, opt GateOptions) bool {
	if g.Implicit || g.Problem != "" || g.State != GateStatePending || g.Type != typ || g.Stage != opt.Stage || g.Reason != opt.Reason {
		return false
	}
	return typ != GateTimer || schema.FormatTime(g.Until.Time) == schema.FormatTime(opt.Until)
}

func (b *Broker) gateEvent(typ string, g *Gate, agent string, data map[string]any) error {
	_, err := b.j.Append(journal.Event{Type: typ, Kind: "gate", Path: g.Path, Item: g.Item, Queue: g.Queue, Agent: agent, Data: data})
	return err
}

// editItem runs fn under item id's lock with the item read fresh (any
// state).
func (b *Broker) editItem(op, id string, fn func(l *docstore.Lock, it *Item) error) error {
	loc, err := b.locate(id)
	if err != nil {
		return err
	}
	l, err := b.s.Lock(ItemLockKey(loc.queue, id))
	if err != nil {
		return err
	}
	defer l.Unlock()
	loc, err = b.locate(id) // it may have moved while we waited
	if err != nil {
		return err
	}
	it, err := b.readItem(loc.path)
	if err != nil {
		return err
	}
	return fn(l, it)
}

// Gates lists the gate documents (and the implied gates of items with
// gate: human that have none yet), evaluated, with the item's title and
// state. pendingOnly keeps those a decision is still owed for: pending
// human gates of items that are not done or dead.
func (b *Broker) Gates(pendingOnly bool) ([]*Gate, []error) {
	return b.gates(pendingOnly, true)
}

// GateDocs is Gates without the implied gates that have no document yet:
// it reads gates/ and the gated items, never every pending item, so a
// hook can ask. Every gate made through Tavern has its document from the
// start (Add writes it); only a gate: human typed into an item by hand
// is missing until Tavern decides it (Gates, `tavern gate ls` and Needs
// you show it at once).
func (b *Broker) GateDocs(pendingOnly bool) ([]*Gate, []error) {
	return b.gates(pendingOnly, false)
}

func (b *Broker) gates(pendingOnly, implied bool) ([]*Gate, []error) {
	var out []*Gate
	var errs []error
	seen := map[string]bool{}
	now := b.now()
	docs, derrs := b.s.List(schema.Gate)
	errs = append(errs, derrs...)
	items := map[string]*Item{}
	itemOf := func(id string) *Item {
		if it, ok := items[id]; ok {
			return it
		}
		it, err := b.Get(id)
		if err != nil {
			it = nil
		}
		items[id] = it
		return it
	}
	for _, d := range docs {
		if ve := d.Validate(false); len(ve) > 0 {
			errs = append(errs, &docstore.ValidationError{Path: d.Path, Errors: ve})
			continue
		}
		g := gateFromDoc(d)
		b.evaluate(g, now)
		seen[g.ID] = true
		if it := itemOf(g.Item); it != nil {
			g.Title, g.ItemState = it.Title, it.State
			if !slices.Contains(it.gateIDs(), g.ID) {
				g.Unlisted = true
				g.Problem = fmt.Sprintf("%v: its item %s does not list it; `tavern gate add %s` makes a gate", ErrGateUnlisted, it.ID, it.ID)
			}
		}
		out = append(out, g)
	}
	// Items whose gate: human has no document yet.
	var names []string
	if implied {
		var err error
		if names, err = b.QueueNames(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, q := range names {
		for _, st := range []string{Pending, Claimed} {
			// Only items that say gate: are parsed (prime asks at every
			// session start, and most items have no gate).
			docs, _ := b.s.Grep("queues/"+q+"/"+st, "gate")
			for _, d := range docs {
				_, caps, _ := schema.KindOfPath(d.Path)
				id := caps["id"]
				if id == "" || seen[id] || d.String("gate") != GateHuman {
					continue
				}
				it, err := itemFromDoc(d)
				if err != nil {
					continue
				}
				g, err := b.readGate(id, it)
				if err != nil || !g.Implicit {
					continue
				}
				g.State, g.Title, g.ItemState = GateStatePending, it.Title, it.State
				out = append(out, g)
			}
		}
	}
	if pendingOnly {
		keep := out[:0]
		for _, g := range out {
			if g.Type == GateHuman && g.State == GateStatePending && !g.Unlisted && g.ItemState != "" && g.ItemState != Done && g.ItemState != Dead {
				keep = append(keep, g)
			}
		}
		out = keep
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errs
}

// PendingGates lists the human gates waiting for a person: the "needs
// you" list's gates.
func (b *Broker) PendingGates() ([]*Gate, []error) { return b.Gates(true) }

// Decision is a person's approval or rejection at a gate.
type Decision struct {
	By     string  // who decides (default: the caller's user name)
	Reason string  // required for a rejection
	Caller *Caller // the deciding process; nil: CurrentCaller()
}

// Approve passes a human gate. ref is a gate id or an item id with one
// pending human gate. The decision is written as an approval record
// first, then the gate points at it.
func (b *Broker) Approve(ref string, d Decision) (*Gate, error) {
	return b.decide("approve", ref, GateApproved, d)
}

// Reject rejects a human gate; the item goes to dead/ (retry brings it
// back and re-opens the gate), under the same hold of the item's lock as
// the decision.
func (b *Broker) Reject(ref string, d Decision) (*Gate, error) {
	if strings.TrimSpace(d.Reason) == "" {
		return nil, &GateError{Op: "reject", Gate: ref, Err: fmt.Errorf("%w: a rejection needs a reason", ErrBadOption)}
	}
	return b.decide("reject", ref, GateRejected, d)
}

// decideTries bounds how often decide follows a gate that moved to
// another item (a sync) while it waited for the item's lock.
const decideTries = 4

func (b *Broker) decide(op, ref, status string, d Decision) (*Gate, error) {
	c := d.Caller
	if c == nil {
		c = CurrentCaller()
	}
	if why := c.Agent(); why != "" {
		_, _ = b.j.Append(journal.Event{Type: EventGateRefused, Kind: "gate", Path: GatePath(ref), Data: map[string]any{"op": op, "why": why}})
		return nil, &GateError{Op: op, Gate: ref, Err: fmt.Errorf("%w: %s", ErrNotHuman, why)}
	}
	by := d.By
	if by == "" {
		by = c.User
	}
	if by == "" {
		by = "user"
	}
	g, err := b.resolveGate(op, ref)
	if err != nil {
		return nil, err
	}
	if g.Type != GateHuman {
		return nil, &GateError{Op: op, Gate: g.ID, Path: g.Path, Err: fmt.Errorf("%w: a %s gate opens by itself", ErrState, g.Type)}
	}
	// Under the item's lock, the one rm, trash restore, gate add and a
	// sync of the item or its gates hold: checked without it, the item
	// could be removed (or the gate moved to another item) between the
	// checks and the writes, and the decision written for an item that
	// is gone.
	return b.decideGate(op, g, status, by, c, d.Reason)
}

// decideGate decides gate g as resolved, following it to the item it
// names now if a sync moved it meanwhile.
func (b *Broker) decideGate(op string, g *Gate, status, by string, c *Caller, reason string) (*Gate, error) {
	for try := 1; ; try++ {
		out, moved, err := b.decideLocked(op, g, status, by, c, reason)
		if moved == "" || try == decideTries {
			return out, err
		}
		g.Item = moved // a sync moved it while we waited: its new item's lock
	}
}

// decideLocked is decide's checks and writes under the lock of g's item.
// moved is the item the gate names now if that is another (a sync moved
// it meanwhile): nothing is written then.
func (b *Broker) decideLocked(op string, g *Gate, status, by string, c *Caller, reason string) (out *Gate, moved string, err error) {
	// A decision about an item that is gone (removed: in .trash/) decides
	// nothing; saying "approved" would claim it did.
	gone := func() error {
		return &GateError{Op: op, Gate: g.ID, Path: g.Path, Err: fmt.Errorf("%w: item %s is in no queue (removed? `tavern trash` lists it)", ErrGateItemGone, g.Item)}
	}
	loc, err := b.locate(g.Item)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", gone()
	} else if err != nil {
		return nil, "", err
	}
	il, err := b.s.Lock(ItemLockKey(loc.queue, g.Item))
	if err != nil {
		return nil, "", err
	}
	defer il.Unlock()
	if loc, err = b.locate(g.Item); errors.Is(err, fs.ErrNotExist) { // removed while we waited
		return nil, "", gone()
	} else if err != nil {
		return nil, "", err
	}
	it, err := b.readItem(loc.path)
	if err != nil {
		return nil, "", err
	}
	cur, err := b.readGate(g.ID, it)
	if err != nil {
		return nil, "", err
	}
	if cur.Item != it.ID {
		return nil, cur.Item, &GateError{Op: op, Gate: g.ID, Path: g.Path, Err: fmt.Errorf("%w: it moved from item %s to %s while deciding; try again", ErrState, it.ID, cur.Item)}
	}
	// Nor does one of a gate its item does not list: it gates nothing,
	// and a rejection would still send the item to dead/.
	if !slices.Contains(it.gateIDs(), g.ID) {
		return nil, "", &GateError{Op: op, Gate: g.ID, Path: g.Path, Err: fmt.Errorf("%w: its item %s does not list it; `tavern gate add %s` makes a gate", ErrGateUnlisted, g.Item, g.Item)}
	}
	if cur.Implicit {
		if err := b.createImplicit(cur, il.Key); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
	}
	// The gate's document lock too, after the item's: the order rm, a
	// set of the gate and a sync take them in.
	out, err = b.writeDecision(op, g.ID, status, by, c, reason)
	if err != nil || status != GateRejected {
		return out, "", err
	}
	// Rejected: the item goes to dead/ in the same hold, so nothing
	// claims or finishes it in between.
	if it.State == Done || it.State == Dead {
		return out, "", nil
	}
	// An already rejected gate (AlreadyDecided) finishes a move a crash
	// cut short, with the reason that was given then.
	why := fmt.Sprintf("rejected at gate %s by %s: %s", out.ID, out.DecidedBy, out.DecisionReason)
	if err := b.coordSettle(it, "dead", why); err != nil { // several machines (coord.go)
		return out, "", err
	}
	if _, err := b.toDead(il, it, "", why, why); err != nil {
		return out, "", err
	}
	return out, "", nil
}

// writeDecision writes the approval record of gate id and points the gate
// at it, under the gate's document lock; the caller holds its item's.
func (b *Broker) writeDecision(op, id, status, by string, c *Caller, reason string) (*Gate, error) {
	l, err := b.s.Lock(docstore.DocLockKey(GatePath(id)))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	cur, err := b.readGate(id, nil)
	if err != nil {
		return nil, err
	}
	now := b.now()
	b.evaluate(cur, now)
	if cur.State != GateStatePending {
		if cur.Status == status {
			// The same decision again (a script, a second click): it
			// stands as made, by whom it was made; nothing is written.
			cur.AlreadyDecided = true
			return cur, nil
		}
		what := fmt.Sprintf("%s by %s at %s", cur.Status, cur.DecidedBy, schema.FormatTime(cur.DecidedAt.Time))
		switch status {
		case GateApproved: // it was rejected: the item is dead
			q := cur.Queue
			if it, err := b.Get(cur.Item); err == nil {
				q = it.Queue
			}
			what += fmt.Sprintf("; a rejected gate is not approved: `tavern queue retry %s %s` brings the item back with the gate open", q, cur.Item)
		default:
			what += "; an approval stands: the item goes on (a new request is `tavern gate add " + cur.Item + "`)"
		}
		return nil, &GateError{Op: op, Gate: cur.ID, Path: cur.Path, Err: fmt.Errorf("%w: %s", ErrDecided, what)}
	}
	// The record first: a gate never points at a decision that is not on
	// disk. A crash in between leaves an unreferenced record and a
	// pending gate.
	recID := docstore.NewID()
	var anc []string
	for _, p := range c.Ancestry {
		anc = append(anc, p.String())
	}
	fields := []docstore.Field{{Key: schema.VersionField, Value: schema.Approval.Version}, {Key: "id", Value: recID},
		{Key: "gate", Value: cur.ID}, {Key: "item", Value: cur.Item}, {Key: "decision", Value: status}, {Key: "by", Value: by}}
	if reason != "" {
		fields = append(fields, docstore.Field{Key: "reason", Value: reason})
	}
	fields = append(fields, docstore.Field{Key: "uid", Value: c.UID}, docstore.Field{Key: "pid", Value: c.PID}, docstore.Field{Key: "host", Value: c.Host})
	if c.TTY != "" {
		fields = append(fields, docstore.Field{Key: "tty", Value: c.TTY})
	}
	if len(anc) > 0 {
		fields = append(fields, docstore.Field{Key: "ancestry", Value: anc})
	}
	fields = append(fields, docstore.Field{Key: "created", Value: now})
	rec, err := docstore.New(schema.Approval, fields, []byte(fmt.Sprintf("\n%s %s gate %s of item %s.\n", by, status, cur.ID, cur.Item)))
	if err != nil {
		return nil, err
	}
	if err := b.s.Create(ApprovalPath(recID), rec); err != nil {
		return nil, err
	}
	set := []docstore.Field{{Key: "status", Value: status}, {Key: "decided_by", Value: by}, {Key: "decided_at", Value: now}}
	del := []string{}
	if reason != "" {
		set = append(set, docstore.Field{Key: "decision_reason", Value: reason})
	} else {
		del = append(del, "decision_reason")
	}
	set = append(set, docstore.Field{Key: "approval", Value: recID}, docstore.Field{Key: "updated", Value: now})
	doc, err := b.s.UpdateHeld(l, cur.Path, func(doc *docstore.Doc) error { return doc.Edit(set, del...) })
	if err != nil {
		return nil, err
	}
	out := gateFromDoc(doc)
	b.evaluate(out, now)
	typ := EventGateApproved
	if status == GateRejected {
		typ = EventGateRejected
	}
	data := map[string]any{"gate": out.ID, "approval": recID, "by": by}
	if reason != "" {
		data["reason"] = reason
	}
	_ = b.gateEvent(typ, out, "", data)
	return out, nil
}

// resolveGate finds the gate named by ref: a gate id, or an item id
// with exactly one pending human gate.
func (b *Broker) resolveGate(op, ref string) (*Gate, error) {
	if err := schema.ValidName(ref); err != nil {
		return nil, &GateError{Op: op, Gate: ref, Err: err}
	}
	if d, err := b.s.Get(GatePath(ref)); err == nil {
		return gateFromDoc(d), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	it, err := b.Get(ref)
	if errors.Is(err, fs.ErrNotExist) {
		// A unique prefix of a gate's id, else of an item's (as item
		// show takes one): ids are long, and people paste the start.
		if g, perr := b.gateByPrefix(op, ref); g != nil || perr != nil {
			return g, perr
		}
		id, rerr := b.ResolveID(ref)
		switch {
		case rerr == nil:
			it, err = b.Get(id)
		case errors.Is(rerr, docstore.ErrAmbiguous):
			return nil, &GateError{Op: op, Gate: ref, Err: rerr}
		}
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, &GateError{Op: op, Gate: ref, Err: &schema.UnknownError{What: "gate or item", Name: ref, Err: fs.ErrNotExist}}
	}
	var open []*Gate
	for _, g := range b.ItemGates(it) {
		if g.Type == GateHuman && g.State == GateStatePending {
			open = append(open, g)
		}
	}
	switch len(open) {
	case 0:
		// Its one human gate, decided: deciding it again is a no-op or
		// a conflict (decide), as when the gate is named.
		var decided []*Gate
		for _, g := range b.ItemGates(it) {
			if g.Type == GateHuman && !g.Implicit {
				decided = append(decided, g)
			}
		}
		if len(decided) == 1 {
			return decided[0], nil
		}
		return nil, &GateError{Op: op, Gate: ref, Path: it.Path, Err: fmt.Errorf("%w: item %s has no pending human gate", fs.ErrNotExist, ref)}
	case 1:
		return open[0], nil
	}
	var ids []string
	for _, g := range open {
		ids = append(ids, g.ID)
	}
	return nil, &GateError{Op: op, Gate: ref, Path: it.Path, Err: fmt.Errorf("%w: item %s has %d pending gates (%s); name one", docstore.ErrAmbiguous, ref, len(open), strings.Join(ids, ", "))}
}

// GateItem is the id of the item of the gate ref names: the gate's id
// or a unique prefix of it, as approve takes (gate ls lists a gate's id
// first, and trace is given it). fs.ErrNotExist when no gate has it;
// docstore.ErrAmbiguous when several gates do, or another item's id too.
func (b *Broker) GateItem(ref string) (string, error) {
	if err := schema.ValidName(ref); err != nil {
		return "", &GateError{Op: "find", Gate: ref, Err: err}
	}
	d, err := b.s.Get(GatePath(ref))
	if errors.Is(err, fs.ErrNotExist) {
		g, perr := b.gateByPrefix("find", ref)
		if perr != nil {
			return "", perr
		}
		if g == nil {
			return "", &GateError{Op: "find", Gate: ref, Err: &schema.UnknownError{What: "gate", Name: ref, Err: fs.ErrNotExist}}
		}
		return g.Item, nil
	}
	if err != nil {
		return "", err
	}
	return gateFromDoc(d).Item, nil
}

// gateByPrefix is the gate whose id ref is a unique prefix of; nil, nil
// when none is (ref may still be an item's), ErrAmbiguous when several,
// or when ref is also the prefix of another item's id (an item's own
// gate has the item's id: that is one).
func (b *Broker) gateByPrefix(op, ref string) (*Gate, error) {
	names, err := b.s.Names("gates")
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(names))
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, ".md"); ok {
			ids = append(ids, id)
		}
	}
	id, err := docstore.MatchPrefix("gate", ref, ids)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &GateError{Op: op, Gate: ref, Err: err}
	}
	switch item, ierr := b.ResolveID(ref); {
	case errors.Is(ierr, docstore.ErrAmbiguous):
		return nil, &GateError{Op: op, Gate: ref, Err: ierr}
	case ierr == nil && item != id:
		return nil, &GateError{Op: op, Gate: ref, Err: fmt.Errorf("%w: gate %s, item %s", docstore.ErrAmbiguous, id, item)}
	}
	d, err := b.s.Get(GatePath(id))
	if err != nil {
		return nil, err
	}
	return gateFromDoc(d), nil
}

// createImplicit writes the document of an item's gate: human gate. The
// caller holds the item's lock, held.
func (b *Broker) createImplicit(g *Gate, held string) error {
	now := b.now()
	d, err := docstore.New(schema.Gate, []docstore.Field{{Key: schema.VersionField, Value: schema.Gate.Version}, {Key: "id", Value: g.ID},
		{Key: "item", Value: g.Item}, {Key: "queue", Value: g.Queue}, {Key: "stage", Value: StageComplete}, {Key: "type", Value: GateHuman},
		{Key: "status", Value: GatePending}, {Key: "reason", Value: "gate: human"}, {Key: "created", Value: now}, {Key: "updated", Value: now}},
		[]byte("\nThe item says `gate: human`: a person approves it before it is done.\n"))
	if err != nil {
		return err
	}
	return b.s.CreateWith(g.Path, d, docstore.CreateOptions{Held: []string{held}})
}

// Caller describes the process that asks to decide at a gate.
type Caller struct {
	User string
	UID  int
	PID  int
	Host string
	TTY  string
	// Env holds the caller's TAVERN_AGENT and TAVERN_INSTANCE.
	Env map[string]string
	// Ancestry is the caller and its parents, nearest first.
	Ancestry []Proc
	// Unknown says why the calling process could not be identified
	// (PeerCaller); such a caller is refused as an agent would be.
	Unknown string
}

// Proc is one process of a Caller's ancestry.
type Proc struct {
	PID     int
	Command string // its program, never its arguments (programOf)
	// Agent is the TAVERN_AGENT (or TAVERN_INSTANCE) in its environment.
	Agent string
	// Wrapper: the process is a tavern spawn wrapper or pool.
	Wrapper bool
}

func (p Proc) String() string {
	s := fmt.Sprintf("%d %s", p.PID, p.Command)
	if p.Agent != "" {
		s += " (agent " + p.Agent + ")"
	}
	return s
}

// Agent says why the caller counts as an agent ("" for a person).
func (c *Caller) Agent() string {
	if c.Unknown != "" {
		return "cannot tell who sent the request: " + c.Unknown
	}
	for _, k := range []string{"TAVERN_AGENT", "TAVERN_INSTANCE"} {
		if v := c.Env[k]; v != "" {
			return fmt.Sprintf("%s=%s is set", k, v)
		}
	}
	for i, p := range c.Ancestry {
		if i == 0 {
			continue // the caller itself: its environment is Env
		}
		if p.Agent != "" {
			return fmt.Sprintf("runs inside agent %s (process %s)", p.Agent, p)
		}
		if p.Wrapper {
			return fmt.Sprintf("runs inside a spawned process (%s)", p)
		}
	}
	return ""
}

// CurrentCaller describes this process: its user, terminal, TAVERN_*
// identity and its parents up to init (from /proc where there is one).
func CurrentCaller() *Caller {
	c := &Caller{UID: os.Getuid(), PID: os.Getpid(), Env: map[string]string{}}
	c.Host, _ = os.Hostname()
	c.User = os.Getenv("USER")
	if c.User == "" {
		c.User = os.Getenv("LOGNAME")
	}
	for _, k := range []string{"TAVERN_AGENT", "TAVERN_INSTANCE"} {
		if v := os.Getenv(k); v != "" {
			c.Env[k] = v
		}
	}
	if t, err := os.Readlink("/proc/self/fd/0"); err == nil && (strings.HasPrefix(t, "/dev/pts/") || strings.HasPrefix(t, "/dev/tty")) {
		c.TTY = t
	}
	c.Ancestry = ancestry(os.Getpid())
	return c
}

// ancestry walks /proc from pid to init.
func ancestry(pid int) []Proc {
	var out []Proc
	for i := 0; pid > 1 && i < 64; i++ {
		p := Proc{PID: pid}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		p.Command = programOf(args)
		p.Wrapper = isWrapper(args)
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
			for _, kv := range strings.Split(string(env), "\x00") {
				k, v, _ := strings.Cut(kv, "=")
				if (k == "TAVERN_AGENT" || k == "TAVERN_INSTANCE") && v != "" && p.Agent == "" {
					p.Agent = v
				}
			}
		}
		out = append(out, p)
		ppid := parentPID(pid)
		if ppid <= 0 || ppid == pid {
			break
		}
		pid = ppid
	}
	return out
}

// programOf names a process by its program, and a tavern by its
// subcommand too ("bash", "tavern approve"): never by its arguments,
// which can hold a secret (a token given as a flag) and would be kept in
// the approval record, a file git and sync carry.
func programOf(args []string) string {
	if len(args) == 0 || args[0] == "" {
		return "?"
	}
	name := args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if strings.HasPrefix(name, "tavern") {
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if schema.ValidName(a) == nil {
				name += " " + a
			}
			break
		}
	}
	return name
}

// isWrapper reports whether argv is a tavern spawn wrapper or pool
// (their children are agents).
func isWrapper(args []string) bool {
	if len(args) < 2 {
		return false
	}
	base := args[0]
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if !strings.HasPrefix(base, "tavern") {
		return false
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a == "spawn" || a == "pool"
	}
	return false
}

// parentPID reads the parent of pid from /proc/<pid>/stat (0 if unknown).
func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	var state string
	var ppid int
	if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err != nil {
		return 0
	}
	return ppid
}

// InstallChecks adds the queue checks `tavern check` (docstore.Store.Check)
// runs beyond the schema: a gate whose decision has no approval record, a
// gate whose item is gone and approvals of gates or items since removed
// (refsCheck), an
// item on a dependency cycle (cycles.go), an item whose id, queue or
// priority field disagrees with its path (rules.go), and what the engine
// tavern.md's coordination names would refuse of its settings on this
// machine (RegisterEngineCheck).
func InstallChecks(s *docstore.Store) {
	installCycleCheck(s)
	s.AddCheck(RuleItemPath, itemPathCheck)
	s.AddCheck(RuleIDFixed, idPathCheck) // an id that is not the file name
	s.AddCheck("queues/coordination", func(d *docstore.Doc) []error { return coordConfigCheck(s.Root(), d) })
	s.AddRunCheck("queues/refs", func() docstore.Check { return refsCheck(s) })
	s.AddCheck("queues/gates", func(d *docstore.Doc) []error {
		if err := CheckGate(s, d); err != nil {
			return []error{err}
		}
		return nil
	})
}
