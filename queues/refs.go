package queues

import (
	"fmt"
	"path"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// refsCheck is `tavern check`'s check of the names gate documents,
// approval records and plans give of items and gates (InstallChecks):
//
//   - A gate whose item: names no item in any queue is an error (exit
//     5): the engine reads a gate only through its item, so it holds
//     nothing, and approve and reject refuse it. A gate is made by `gate
//     add` for an item that exists and travels with it (a sync brings
//     both), so no other machine explains it: the field was edited, or
//     the item removed (`tavern trash restore` brings it back; `tavern rm
//     gates/ID` drops the gate).
//   - A gate whose item does not list it in its gates: (made by hand:
//     `tavern gate add` lists it, and the write rules refuse one that is
//     not) is an error (ErrGateUnlisted): the engine reads gates only
//     through the item's list, so it gates nothing.
//   - A pending or claimed item whose gates: list names a gate with no
//     document is an error: the engine counts such a gate as pending, so
//     the item never passes it (`gate add` writes the gate and the list
//     together, and a sync brings both; a crash in between leaves it,
//     which doctor's dangling-gate repairs).
//   - An approval record whose gate or item is gone is a warning: it is
//     append-only history of a decision that was made, and stays true
//     after the gate or item is removed.
//   - A plan whose tasks: entry names an item in no queue (removed) is a
//     warning: `tavern plan sync` settles its box (an open box becomes a
//     new item or takes over one of its title), so it is a state the
//     engine knows, not a broken one.
//
// The item ids are listed once per check run, at the first document that
// needs them: one scan of the queues, not one per gate.
func refsCheck(s *docstore.Store) docstore.Check {
	b := &Broker{s: s}
	var once sync.Once
	var ids map[string]bool // nil: a queue could not be listed
	itemExists := func(id string) bool {
		once.Do(func() { ids = b.itemIDs() })
		return ids == nil || ids[id]
	}
	return func(d *docstore.Doc) []error { return docRefs(b, d, itemExists) }
}

func docRefs(b *Broker, d *docstore.Doc, itemExists func(string) bool) []error {
	switch d.Kind {
	case schema.Gate:
		id := d.String("item")
		if schema.ValidName(id) != nil { // the schema reports it
			return nil
		}
		if !itemExists(id) {
			return []error{d.RefAt("item", "item", id, nil,
				fmt.Sprintf("no queue has it (the field edited, or the item removed): the engine never reads this gate and approve refuses it (`tavern trash restore` the item, or `tavern rm gates/%s`)", d.Name), false)}
		}
		// Its item there but not listing it (a gate written by hand):
		// the engine never reads it, though it looks like a gate.
		if loc, err := b.locate(id); err == nil {
			if it, err := b.readItem(loc.path); err == nil {
				if err := unlistedGate(d, it, false); err != nil {
					return []error{err}
				}
			}
		}
	case schema.Item:
		// Only an item still to do waits on its gates.
		if st := path.Base(path.Dir(d.Path)); st != Pending && st != Claimed {
			return nil
		}
		var out []error
		for _, id := range d.Strings("gates") {
			if id != d.Name && schema.ValidName(id) == nil && !b.exists(GatePath(id)) {
				out = append(out, d.RefAt("gates", "gate", id, nil,
					"a gate that has no document is never passed: the item waits for ever (`tavern doctor --fix` removes it from the list; `tavern gate add` makes a gate)", false))
			}
		}
		return out
	case schema.Approval:
		var out []error
		gate, item := d.String("gate"), d.String("item")
		if schema.ValidName(gate) == nil && !b.exists(GatePath(gate)) && !itemExists(gate) {
			out = append(out, d.RefAt("gate", "gate", gate, nil, "the record of a decision at a gate since removed (history: nothing reads it)", true))
		}
		if item != "" && schema.ValidName(item) == nil && !itemExists(item) {
			out = append(out, d.RefAt("item", "item", item, nil, "the record of a decision on an item since removed (history: nothing reads it)", true))
		}
		return out
	case schema.Plan:
		n := d.Get("tasks")
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var out []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			id := n.Content[i].Value
			if schema.ValidName(id) == nil && !itemExists(id) {
				out = append(out, d.RefAt("tasks", "item", id, nil,
					fmt.Sprintf("the item of the box %q is gone (removed); `tavern plan sync %s` settles the box", n.Content[i+1].Value, d.Name), true))
			}
		}
		return out
	}
	return nil
}

// itemIDs lists the ids of the items of every queue, in every state; nil
// if a queue cannot be listed (then every id counts as existing: check
// reports that elsewhere).
func (b *Broker) itemIDs() map[string]bool {
	names, err := b.QueueNames()
	if err != nil {
		return nil
	}
	ids := map[string]bool{}
	for _, q := range names {
		for _, st := range schema.ItemStates {
			got, err := b.listDir(q, st)
			if err != nil {
				return nil
			}
			for _, id := range got {
				ids[id] = true
			}
		}
	}
	return ids
}
