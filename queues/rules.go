package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Rule names on a docstore.Store (docstore.Store.AddRule).
const (
	// RuleItemPath: an item's id, queue and priority fields follow its
	// path (PathFields) and cannot be changed by a write.
	RuleItemPath = "queues/item-path"
	// RuleItemCycle: a write may not make a dependency cycle.
	RuleItemCycle = "queues/dependency-cycle"
	// RuleIDFixed: the id of a document named by its id (IDNamed) cannot
	// be changed or removed by a write.
	RuleIDFixed = "queues/id-fixed"
)

// InstallRules makes every write through s (`tavern set`, `tavern edit`,
// the library API) obey the item rules:
//
//   - An item's id, queue and priority come from its path: the file name
//     is the id, the directory two levels up the queue, and the id's
//     pNN- prefix the priority (NewItemID), which orders pending/. A
//     write that sets one of these fields to another value is refused
//     with a *PathFieldError (ErrPathField): an item cannot be renamed,
//     moved to another queue or re-prioritised after `queue add`.
//   - A write that adds dependencies may not close a dependency cycle
//     (ErrCycle), as Add refuses.
//   - A gate written or given another item: names an item that exists
//     (RuleGateItem): a *docstore.RefError, schema.ErrUnknownName.
//   - The id of a document whose file name is its id (IDNamed: gates,
//     approvals, questions, commitments, token slots, reservations, ...)
//     is how items, approvals and commands name it: a write that changes
//     or removes it is refused with an *IDError (ErrIDChanged), as an
//     agent's id is (package agents). A document that has no id may be
//     given one, and one whose id is not its file name (a copied file)
//     may be given its file name's (RuleIDFixed).
//
// A write that leaves such a field as it was is allowed even if a hand
// edit made it disagree (a hand edit never blocks other work): `tavern
// check` reports those (InstallChecks). Open installs the rules on a store
// that has none; install them before sharing the store between
// goroutines.
func InstallRules(s *docstore.Store) {
	s.AddRule(RuleItemPath, itemPathRule)
	s.AddRule(RuleItemCycle, func(w docstore.Write) error { return cycleRule(s, w) })
	s.AddRule(RuleIDFixed, idFixedRule)
	s.AddOwner(OwnerItemGates, func(d *docstore.Doc) []string { return itemGates(s, d) })
	s.AddRule(RuleQueueNotEmpty, func(w docstore.Write) error { return queueRemoveRule(s, w) })
	s.AddRule(RuleClaimedRemove, func(w docstore.Write) error { return claimedRemoveRule(s, w) })
	s.AddRule(RuleGateInUse, func(w docstore.Write) error { return gateRemoveRule(s, w) })
	s.AddRule(RuleGateItem, func(w docstore.Write) error { return gateItemRule(s, w) })
	s.AddLocker(LockerItem, func(rel string, d *docstore.Doc) []string { return itemLocks(s, rel, d) })
	s.AddCreateLocker(LockerItem, func(rel string, d *docstore.Doc) []string { return gateCreateLocks(s, rel, d) })
}

// LockerItem is the docstore.Locker by which a removal or an update
// (set, edit) of an item, or of a gate, holds its item's lock
// (ItemLockKey), which takers, reapers and completions hold for each
// state change: rm checks the item (a claimed one is refused; a gate its
// item waits on is) and renames it with no claim, retry or release in
// between, and a set never writes a pending copy back after a claim moved
// it. A gate's set or edit that gives it another item holds that item's
// lock too, and so does a gate's create (AddCreateLocker: `tavern new
// gate`): the gate-item rule's look at the item holds until the gate is
// written, and an rm of the item in between cannot leave a gate of an
// item that is gone. Engine code that holds the item lock writes with
// UpdateHeld, and creates with CreateOptions.Held.
const LockerItem = "queues/item-lock"

// itemLocks is LockerItem: an item's lock for the item, its gate's item's
// for a gate, read from d if given (a restore: the copy in the trash; an
// update: the document as written), else from rel.
func itemLocks(s *docstore.Store, rel string, d *docstore.Doc) []string {
	var buf [3]string
	if caps, ok := schema.Item.Captures(rel, buf[:0]); ok && len(caps) == 3 { // queue, state, id
		return []string{ItemLockKey(caps[0], caps[2])}
	}
	if caps, ok := schema.Gate.Captures(rel, buf[:0]); ok && len(caps) == 1 {
		if d == nil {
			var err error
			if d, err = s.Get(rel); err != nil {
				return nil // a gate that does not parse names no item
			}
		}
		return gateItemLock(s, d)
	}
	return nil
}

// gateCreateLocks is LockerItem for a create: a gate's item's lock.
func gateCreateLocks(s *docstore.Store, rel string, d *docstore.Doc) []string {
	if d == nil || d.Kind != schema.Gate {
		return nil
	}
	return gateItemLock(s, d)
}

// gateItemLock is the lock of gate d's item: in the queue the gate names
// if the item is there, else in the queue that has it (a gate written by
// hand may name none, or another), as the engine locks an item it has
// located; by the gate's queue if no queue has it.
func gateItemLock(s *docstore.Store, d *docstore.Doc) []string {
	queue, id := d.String("queue"), d.String("item")
	if schema.ValidName(id) != nil {
		return nil
	}
	if schema.ValidName(queue) == nil {
		for _, st := range schema.ItemStates {
			if _, err := s.Stat(ItemPath(queue, st, id)); err == nil {
				return []string{ItemLockKey(queue, id)}
			}
		}
	}
	b := &Broker{s: s, dirRecheck: -1, qcache: map[string]cachedQueue{}, pending: newPendingIndex()}
	defer b.Close()
	if loc, err := b.locate(id); err == nil {
		return []string{ItemLockKey(loc.queue, id)}
	}
	if schema.ValidName(queue) == nil {
		return []string{ItemLockKey(queue, id)}
	}
	return nil
}

// RuleClaimedRemove: a claimed item is not removed under its holder
// (ErrState, exit 4), as git rm refuses a file with changes: its done or
// fail would find no item. A crash leftover (another copy of the item in
// its queue) is removed as before.
const RuleClaimedRemove = "queues/claimed-remove"

func claimedRemoveRule(s *docstore.Store, w docstore.Write) error {
	if w.Op != "delete" {
		return nil
	}
	var buf [3]string
	caps, ok := schema.Item.Captures(w.Path, buf[:0]) // queue, state, id
	if !ok || len(caps) != 3 {
		return nil
	}
	queue, id := caps[0], caps[2]
	if w.Prev == nil && caps[1] != Claimed {
		// Gone from where rm found it: claimed since (rm checked it
		// before), it is refused as a claimed item is.
		if _, err := s.Stat(w.Path); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		rel := ItemPath(queue, Claimed, id)
		d, err := s.Get(rel)
		if err != nil {
			return nil
		}
		return claimedRemoveRule(s, docstore.Write{Op: "delete", Path: rel, Prev: d})
	}
	if w.Prev == nil || w.Prev.Kind != schema.Item || caps[1] != Claimed {
		return nil
	}
	for _, st := range schema.ItemStates {
		if st != Claimed {
			if _, err := s.Stat(ItemPath(queue, st, id)); err == nil {
				return nil // a leftover copy
			}
		}
	}
	holder := w.Prev.String("claimed_by")
	return &ItemError{Op: "remove", ID: id, Path: w.Path, Err: fmt.Errorf("%w: claimed by %s: it would vanish under its holder (release or finish it first: `tavern item release %s --as %s`; `tavern reap` returns it if its holder is gone)",
		ErrState, holder, id, holder)}
}

// RuleGateInUse: a gate is not removed alone while an item still to do
// (pending or claimed) lists it: a gate with no document is never
// passed, so the item could be claimed but never finished (ErrState).
// Removing the item takes its gates with it (OwnerItemGates): the item
// is gone by the time its gates are removed.
const RuleGateInUse = "queues/gate-in-use"

func gateRemoveRule(s *docstore.Store, w docstore.Write) error {
	if w.Op != "delete" || w.Prev == nil || w.Prev.Kind != schema.Gate {
		return nil
	}
	gate, queue, id := w.Prev.Name, w.Prev.String("queue"), w.Prev.String("item")
	if schema.ValidName(queue) != nil || schema.ValidName(id) != nil {
		return nil
	}
	for _, st := range []string{Pending, Claimed} {
		d, err := s.Get(ItemPath(queue, st, id))
		if err != nil {
			continue
		}
		if d.String("gate") == gate || slices.Contains(d.Strings("gates"), gate) {
			return &ItemError{Op: "remove", ID: id, Path: w.Path, Err: fmt.Errorf("%w: item %s is %s and waits on it: a gate with no document is never passed, so it could never be finished (decide it: `tavern approve %s` or `tavern reject %s`; or `tavern rm items/%s`, which takes its gates)",
				ErrState, id, st, gate, gate, id)}
		}
	}
	return nil
}

// RuleGateItem: a gate written (`tavern new gate`, set, edit, the
// library) names an item that exists in some queue and lists the gate in
// its gates: (ErrGateUnlisted; `tavern gate add` is how a gate is made),
// when it is created or its item: changes. A gate is read only through its item, so one of
// no item holds nothing and check reports it (refsCheck); the write is
// refused instead, as a depends_on on no item is (cycleRule), with the
// items near the name. A write that leaves item: as it was goes on: the
// item removed since is check's to report, not a reason to block others.
const RuleGateItem = "queues/gate-item"

func gateItemRule(s *docstore.Store, w docstore.Write) error {
	d := w.Doc
	if d == nil || d.Kind != schema.Gate {
		return nil
	}
	id := d.String("item")
	if w.Prev != nil && w.Op != "move" && w.Prev.Has("item") == d.Has("item") && w.Prev.String("item") == id {
		return nil
	}
	if schema.ValidName(id) != nil {
		return nil // absent or no name: the schema's, or check's, to report
	}
	b := &Broker{s: s, dirRecheck: -1, qcache: map[string]cachedQueue{}, pending: newPendingIndex()}
	defer b.Close()
	loc, err := b.locate(id)
	if err == nil {
		// The engine reads a gate only through its item's gates: list,
		// so one the item does not list would look like a gate and
		// hold nothing. AddGate lists it first, under the item lock.
		it, err := b.readItem(loc.path)
		if err != nil {
			return nil // unreadable: reported where it is read
		}
		if err := unlistedGate(d, it, true); err != nil {
			return err
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil // unreadable (reported where it is read)
	}
	var near []string
	if ids := b.itemIDs(); ids != nil {
		all := make([]string, 0, len(ids))
		for i := range ids {
			all = append(all, i)
		}
		near = schema.Near(id, all)
	}
	return d.RefAt("item", "item", id, near,
		"no queue has it: a gate is read only through its item, so it would hold nothing (`tavern gate add ITEM` makes a gate of an item)", false)
}

// RuleQueueNotEmpty: a queue's queue.md is not removed while items are
// pending or claimed in it (ErrQueueNotEmpty); done and dead items are
// history and do not hold it.
const RuleQueueNotEmpty = "queues/not-empty"

func queueRemoveRule(s *docstore.Store, w docstore.Write) error {
	if w.Op != "delete" {
		return nil
	}
	queue, ok := strings.CutPrefix(w.Path, "queues/")
	if queue, ok = strings.CutSuffix(queue, "/"+queueFile); !ok || strings.Contains(queue, "/") {
		return nil
	}
	count := func(st string) int {
		names, _ := s.Names("queues/" + queue + "/" + st)
		n := 0
		for _, name := range names {
			if strings.HasSuffix(name, ".md") {
				n++
			}
		}
		return n
	}
	pending, claimed := count(Pending), count(Claimed)
	if pending+claimed == 0 {
		return nil
	}
	return &QueueError{Op: "remove", Queue: queue, Err: fmt.Errorf("%w: %d pending and %d claimed items would be left in no queue (finish or remove them first: `tavern ls queues/%s/pending/`, `tavern rm items/ID...`)",
		ErrQueueNotEmpty, pending, claimed, queue)}
}

// OwnerItemGates is the docstore.Owner by which an item owns its gates:
// `tavern rm` of an item moves its gates to .trash/ with it, and `tavern
// trash restore` of the item brings them back. A gate names its item and
// is read only through it, so one left behind would hold nothing, and
// check would report it (refsCheck).
const OwnerItemGates = "queues/item-gates"

// itemGates lists the gate documents of item d: those of its gates
// (gateIDs) whose item: names it, or that are missing (to restore).
// None while another copy of the item is in its queue (a crash leftover
// being removed): the gates are that copy's.
func itemGates(s *docstore.Store, d *docstore.Doc) []string {
	if d.Kind != schema.Item {
		return nil
	}
	var buf [3]string
	caps, ok := schema.Item.Captures(d.Path, buf[:0]) // queue, state, id
	if !ok || len(caps) != 3 {
		return nil
	}
	queue, id := caps[0], caps[2]
	for _, st := range schema.ItemStates {
		if rel := ItemPath(queue, st, id); rel != d.Path {
			if _, err := s.Stat(rel); err == nil {
				return nil
			}
		}
	}
	it := &Item{ID: id, Gate: d.String("gate"), Gates: d.Strings("gates")}
	var out []string
	for _, g := range it.gateIDs() {
		if schema.ValidName(g) != nil {
			continue
		}
		gd, err := s.Get(GatePath(g))
		if err == nil && gd.String("item") != id {
			continue // another item's gate, named here by a hand edit
		}
		out = append(out, GatePath(g))
	}
	return out
}

// PathFields are the fields of the item at rel that its path decides:
// id (the file name), queue (its directory) and, for an id made by
// NewItemID, priority (the id's prefix). Nil if rel is no item path.
func PathFields(rel string) []docstore.Field {
	var buf [3]string
	caps, ok := schema.Item.Captures(rel, buf[:0]) // queue, state, id
	if !ok || len(caps) != 3 {
		return nil
	}
	out := []docstore.Field{{Key: "id", Value: caps[2]}, {Key: "queue", Value: caps[0]}}
	if p, ok := IDPriority(caps[2]); ok {
		out = append(out, docstore.Field{Key: "priority", Value: p})
	}
	return out
}

// PathFieldError is an item field that disagrees with the item's path
// (PathFields): "path:line:col: field: why". It matches ErrPathField (and,
// for the id, ErrIDChanged) and, through a *schema.FieldError,
// schema.ErrInvalid and docstore.Position.
type PathFieldError struct {
	Path      string
	Line, Col int
	Field     string
	Msg       string
}

func (e *PathFieldError) field() *schema.FieldError {
	return &schema.FieldError{Path: e.Path, Line: e.Line, Col: e.Col, Field: e.Field, Msg: e.Msg}
}

func (e *PathFieldError) Error() string { return e.field().Error() }
func (e *PathFieldError) Unwrap() []error {
	if e.Field == "id" { // an id changed, as RuleIDFixed refuses for other kinds
		return []error{ErrPathField, ErrIDChanged, e.field()}
	}
	return []error{ErrPathField, e.field()}
}

// pathFieldErrors lists the fields of item d at rel that disagree with
// its path. prev, when not nil, is the document before a write: a field
// whose value the write did not change is not reported (a hand edit is
// check's to report, not a reason to refuse other changes).
func pathFieldErrors(rel string, d, prev *docstore.Doc) []error {
	var buf [3]string
	caps, ok := schema.Item.Captures(rel, buf[:0])
	if !ok || len(caps) != 3 {
		return nil
	}
	queue, id := caps[0], caps[2]
	changed := func(f string) bool {
		if prev == nil {
			return true
		}
		if d.Has(f) != prev.Has(f) {
			return true
		}
		a, b := d.Get(f), prev.Get(f)
		return a != nil && b != nil && (a.Kind != b.Kind || a.Value != b.Value || a.Tag != b.Tag)
	}
	at := func(f, msg string) error {
		line, col := d.KeyLine(f), 1
		if n := d.Get(f); n != nil && n.Column > 0 {
			col = n.Column
		}
		return &PathFieldError{Path: rel, Line: line, Col: col, Field: f, Msg: msg}
	}
	var out []error
	if d.Has("id") && d.String("id") != id && changed("id") {
		out = append(out, at("id", fmt.Sprintf("%q is not the item's id %s: an item's id is its file name; it cannot be changed", d.String("id"), id)))
	}
	if d.Has("queue") && d.String("queue") != queue && changed("queue") {
		out = append(out, at("queue", fmt.Sprintf("%q is not the item's queue %s: an item's queue is the directory it is in (queues/%s/); it cannot move to another queue", d.String("queue"), queue, queue)))
	}
	if d.Has("priority") && changed("priority") {
		why := "an item's priority is chosen when it is added (`tavern queue add --priority N`) and is part of its id, which orders pending/; it cannot be changed (add a new item instead)"
		got, isInt := d.Int("priority")
		want, fromID := IDPriority(id)
		switch {
		case fromID && (!isInt || got != int64(want)):
			out = append(out, at("priority", fmt.Sprintf("%s is not the priority in the item's id %s (%d): %s", d.String("priority"), id, want, why)))
		case !fromID && prev != nil:
			// A hand-named item's order is its file name: no priority
			// field changes it.
			out = append(out, at("priority", why))
		}
	}
	return out
}

// itemPathRule refuses a write that makes an item's id, queue or
// priority disagree with its path.
func itemPathRule(w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Item {
		return nil
	}
	prev := w.Prev
	if w.Op == "move" {
		prev = nil // a new path: every field must agree with it
	}
	if errs := pathFieldErrors(w.Path, w.Doc, prev); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// IDNamed reports whether documents of kind k are named by their id: the
// file name is the id (gates/<id>.md, questions/<id>.md,
// tuples/<type>/<id>.md, ...), and other documents (an item's gates:, an
// approval's gate:) and commands (`tavern approve ID`, `tavern answer
// ID`, a token handle ID:EPOCH) name them by it. Items are named by their
// id too; their path fields have their own rule (RuleItemPath).
func IDNamed(k *schema.Kind) bool {
	return k != nil && strings.HasSuffix(k.Pattern, "/{id}.md")
}

// idFixedRule refuses a write that changes or removes the id of a
// document named by its id (IDNamed): the file keeps its name, so every
// reference by the field (the engine's reads, listings, --json) would
// name a document that is not there. An item's changed id is
// itemPathRule's to refuse (its removal is this rule's). Only fields the
// write changes are judged: a document that had no id may be given one,
// and one whose id a hand edit made disagree with its file name may be
// given its file name's.
func idFixedRule(w docstore.Write) error {
	d, prev := w.Doc, w.Prev
	if d != nil && prev == nil && w.Op == "create" {
		return idNotPath(w.Op, w.Path, d) // made with another id: named by none
	}
	if d == nil || prev == nil || d.Kind != prev.Kind || !IDNamed(d.Kind) {
		return nil
	}
	was := prev.String("id")
	if was == "" || (d.Has("id") && (d.String("id") == was || d.Kind == schema.Item)) {
		return nil
	}
	if d.Has("id") && d.String("id") == strings.TrimSuffix(path.Base(w.Path), ".md") {
		return nil // a copy's id made its own
	}
	e := &IDError{Op: w.Op, Path: w.Path, Kind: d.Kind.Name, Was: was}
	at, n := d, d.Get("id")
	if d.Has("id") {
		e.Value = d.String("id")
	} else { // removed: at the line it was on
		at, n = prev, prev.Get("id")
	}
	e.Line, e.Col = at.KeyLine("id"), 1
	if n != nil && n.Column > 0 {
		e.Col = n.Column
	}
	return e
}

// idNotPath is the *IDError (ErrIDNotPath) of d at rel, a document named
// by its id whose id is not its file name, or nil. An item's id is
// itemPathRule's (and check's itemPathCheck); a document without an id
// is left alone (the schema says whether it needs one).
func idNotPath(op, rel string, d *docstore.Doc) error {
	if !IDNamed(d.Kind) || d.Kind == schema.Item || !d.Has("id") {
		return nil
	}
	name := strings.TrimSuffix(path.Base(rel), ".md")
	id := d.String("id")
	if id == name {
		return nil
	}
	e := &IDError{Op: op, Path: rel, Kind: d.Kind.Name, Value: id, Name: name}
	e.Line, e.Col = d.KeyLine("id"), 1
	if n := d.Get("id"); n != nil && n.Column > 0 {
		e.Col = n.Column
	}
	return e
}

// idPathCheck is RuleIDFixed's part of `tavern check`: a document named
// by its id whose id a hand edit (or a copied file) made other than its
// file name, which the rule refuses at create.
func idPathCheck(d *docstore.Doc) []error {
	if err := idNotPath("check", d.Path, d); err != nil {
		return []error{err}
	}
	return nil
}

// cycleRule refuses a write of an item whose new dependencies lead back
// to it (an item on a cycle can never be claimed).
func cycleRule(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Item || !w.Doc.Has("depends_on") {
		return nil
	}
	var buf [3]string
	caps, ok := schema.Item.Captures(w.Path, buf[:0])
	if !ok || len(caps) != 3 {
		return nil
	}
	id := caps[2]
	var old []string
	if w.Prev != nil && w.Op != "move" {
		old = w.Prev.Strings("depends_on")
	}
	var added []string
	for _, dep := range w.Doc.Strings("depends_on") {
		if !slices.Contains(old, dep) {
			added = append(added, dep)
		}
	}
	if len(added) == 0 {
		return nil
	}
	b := &Broker{s: s, dirRecheck: -1, qcache: map[string]cachedQueue{}, pending: newPendingIndex()}
	defer b.Close()
	for _, dep := range added {
		if dep == id || w.Op == "move" {
			// A cycle of one is below; a move (a state change) adds
			// nothing, and its dependency may be gone since.
			continue
		}
		// A dependency on no item would block this one for ever: refused
		// as queue add refuses it (a hand edit is check's to report).
		missing := schema.ValidName(dep) != nil
		if !missing {
			_, err := b.locate(dep)
			missing = errors.Is(err, fs.ErrNotExist)
		}
		if missing {
			return &DependencyError{Path: w.Path, Line: w.Doc.KeyLine("depends_on"), Dep: dep}
		}
	}
	for _, dep := range added {
		members := []string{id} // the cycle, from this item
		if dep != id {
			path := b.dependsPath(dep, id, map[string]bool{})
			if path == nil {
				continue
			}
			members = append(members, path[:len(path)-1]...)
		}
		c := Cycle{}
		for _, m := range members {
			c.Members = append(c.Members, CycleMember{ID: m})
		}
		c.Members[0] = CycleMember{ID: id, Queue: caps[0], Path: w.Path, Line: w.Doc.KeyLine("depends_on")}
		return &CycleError{Cycle: c}
	}
	return nil
}

// dependsPath is the chain of depends_on links from item from to item
// to (from ... to), or nil if to is not reachable.
func (b *Broker) dependsPath(from, to string, seen map[string]bool) []string {
	if seen[from] || schema.ValidName(from) != nil {
		return nil
	}
	seen[from] = true
	it, err := b.Get(from)
	if err != nil {
		return nil // missing, or unreadable: no edge (check reports it)
	}
	for _, d := range it.DependsOn {
		if d == to {
			return []string{from, to}
		}
		if p := b.dependsPath(d, to, seen); p != nil {
			return append([]string{from}, p...)
		}
	}
	return nil
}

// itemPathCheck is `tavern check`'s report of an item whose id, queue or
// priority was edited by hand to disagree with its path.
func itemPathCheck(d *docstore.Doc) []error {
	if d.Kind != schema.Item {
		return nil
	}
	return pathFieldErrors(d.Path, d, nil)
}

// unlistedGate is a *GateUnlistedError when item it does not list gate
// document d among its gates (its gates: list, or its own id for gate:
// human), nil when it does.
func unlistedGate(d *docstore.Doc, it *Item, write bool) error {
	if slices.Contains(it.gateIDs(), d.Name) {
		return nil
	}
	at := d.RefAt("item", "item", it.ID, nil, "", false) // where the item: value is
	return &GateUnlistedError{Path: d.Path, Line: at.Line, Col: at.Col, Gate: d.Name, Item: it.ID, Write: write}
}
