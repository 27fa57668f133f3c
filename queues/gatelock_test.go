package queues_test

import (
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// A decision and an rm of its item are one after the other, never one
// inside the other. approve and reject checked that the gate's item was
// there without its lock, then wrote the record and the gate: an rm (in
// another process) between the check and the writes removed the item,
// and the decision was written, "approved", for an item that was gone.
// The hook runs as the decision record is written, after the checks; it
// lets an rm from another process go as far as the locks let it.
func TestDecideHoldsItemLockAgainstRm(t *testing.T) {
	for _, op := range []string{"approve", "reject"} {
		t.Run(op, func(t *testing.T) {
			s := newStore(t, true)
			var hook func()
			s.AddRule("test/decide-hook", func(w docstore.Write) error {
				if w.Op == "create" && strings.HasPrefix(w.Path, "approvals/") && hook != nil {
					h := hook
					hook = nil
					h()
				}
				return nil
			})
			b := newBroker(t, s, nil)
			mustQueue(t, b, "q", queues.QueueOptions{})
			it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy"})
			g, err := b.AddGate(it.ID, queues.GateOptions{Reason: "review"})
			if err != nil {
				t.Fatal(err)
			}
			// Another process: its own Store on the same directory.
			s2, err := docstore.Open(s.Root())
			if err != nil {
				t.Fatal(err)
			}
			newBroker(t, s2, nil) // its rules: rm takes the item's lock and its gates
			removed := make(chan struct{})
			s2.Observe(func(m docstore.Mutation) {
				if m.Op == "delete" && m.Path == it.Path {
					close(removed)
				}
			})
			rm := make(chan error, 1)
			hook = func() {
				l, free, err := s2.TryLock(queues.ItemLockKey("q", it.ID))
				if err != nil {
					t.Error(err)
					return
				}
				if free {
					l.Unlock()
				}
				go func() {
					_, err := s2.DeleteAll(it.Path)
					rm <- err
				}()
				if free {
					<-removed // nothing holds the rm back: it takes the item
				}
				if _, err := s.Stat(it.Path); err != nil {
					t.Errorf("%s: the decision is being written for an item that is gone: %v", op, err)
				}
			}
			d := queues.Decision{Reason: "no", Caller: human()}
			if op == "approve" {
				_, err = b.Approve(g.ID, d)
			} else {
				_, err = b.Reject(g.ID, d)
			}
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			// The rm, after the decision: a rejected item is in dead/
			// by then, and its pending copy is not there to remove.
			rmErr := <-rm
			switch {
			case op == "approve" && rmErr != nil:
				t.Fatalf("rm after the approval: %v", rmErr)
			case op == "reject" && !errors.Is(rmErr, fs.ErrNotExist):
				t.Fatalf("rm of the pending copy after the rejection: %v, want not exist", rmErr)
			case op == "reject":
				if got := stateOf(t, b, it.ID); got != queues.Dead {
					t.Errorf("rejected item is %s, want dead", got)
				}
			}
		})
	}
}

// An item added with gate: human, and an rm of it, are one after the
// other. Add wrote the item, then its gate's document without the item's
// lock: an rm between the two (the gate-item rule had seen the item)
// removed the item before its gate was there to go with it, and the gate
// was written for an item that was gone. The hook runs as the gate is
// written, after the write rules looked at the item.
func TestAddHumanGateHoldsItemLockAgainstRm(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	s2, err := docstore.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	newBroker(t, s2, nil)
	rm := make(chan error, 1)
	var rel string
	hook := true
	// After the queue rules (installed by newBroker): the gate-item rule
	// has passed when it runs.
	s.AddRule("test/add-hook", func(w docstore.Write) error {
		if w.Op != "create" || !strings.HasPrefix(w.Path, "gates/") || !hook {
			return nil
		}
		hook = false
		id := w.Doc.String("item")
		rel = queues.ItemPath("q", queues.Pending, id)
		l, free, err := s2.TryLock(queues.ItemLockKey("q", id))
		if err != nil {
			t.Error(err)
			return nil
		}
		if free {
			l.Unlock()
			_, err := s2.DeleteAll(rel) // nothing holds it back
			rm <- err
			return nil
		}
		go func() {
			_, err := s2.DeleteAll(rel)
			rm <- err
		}()
		return nil
	})
	it := mustAdd(t, b, "q", queues.AddOptions{Title: "deploy", Gate: queues.GateHuman})
	if err := <-rm; err != nil {
		t.Fatalf("rm: %v", err)
	}
	if _, err := s.Stat(rel); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the removed item: %v", err)
	}
	if _, err := s.Stat(queues.GatePath(it.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the gate of the removed item is left (its item in no queue): Stat = %v", err)
	}
}

// A gate written by hand (`tavern new gate`, `set gates/G item=B`, `edit`)
// and an rm of the item it names are one after the other. The write
// checked that the item listed the gate (the gate-item rule) without the
// item's lock, which rm holds: an rm between the check and the write
// removed the item, and the gate was written for an item that was gone
// (a gate in no queue, which check reports). The hook runs as the gate is
// written, after the rules looked at the item, and lets an rm from
// another process go as far as the locks let it.
func TestHandGateWriteHoldsItemLockAgainstRm(t *testing.T) {
	for _, op := range []string{"create", "set", "edit"} {
		t.Run(op, func(t *testing.T) {
			s := newStore(t, true)
			b := newBroker(t, s, nil)
			mustQueue(t, b, "q", queues.QueueOptions{})
			a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
			it := mustAdd(t, b, "q", queues.AddOptions{Title: "b"})
			g, err := b.AddGate(a.ID, queues.GateOptions{Reason: "review"})
			if err != nil {
				t.Fatal(err)
			}
			gid := g.ID
			if op == "create" {
				gid = "g2"
			}
			// The item lists the gate, as the rule wants of a gate's item.
			if _, err := s.Update(it.Path, func(d *docstore.Doc) error { return d.Set("gates", []string{gid}) }); err != nil {
				t.Fatal(err)
			}
			s2, err := docstore.Open(s.Root())
			if err != nil {
				t.Fatal(err)
			}
			newBroker(t, s2, nil) // its rules: rm takes the item's lock and its gates
			rm := make(chan error, 1)
			hook := true
			// After the queue rules (installed by newBroker): the gate-item
			// rule has passed when it runs.
			s.AddRule("test/hand-gate-hook", func(w docstore.Write) error {
				if w.Doc == nil || w.Path != queues.GatePath(gid) || w.Doc.String("item") != it.ID || !hook {
					return nil
				}
				hook = false
				if op != "create" { // the item it leaves: held as for any gate write
					l, free, err := s2.TryLock(queues.ItemLockKey("q", a.ID))
					if err != nil {
						t.Error(err)
						return nil
					}
					if free {
						l.Unlock()
						t.Errorf("%s: the lock of the gate's old item is free while the gate is written", op)
					}
				}
				l, free, err := s2.TryLock(queues.ItemLockKey("q", it.ID))
				if err != nil {
					t.Error(err)
					return nil
				}
				if free {
					l.Unlock()
					_, err := s2.DeleteAll(it.Path) // nothing holds it back
					rm <- err
					return nil
				}
				go func() {
					_, err := s2.DeleteAll(it.Path)
					rm <- err
				}()
				return nil
			})
			rel := queues.GatePath(gid)
			switch op {
			case "create":
				d, err := docstore.NewDoc(schema.Gate, docstore.Template{ID: gid, Defaults: true,
					Fields: []docstore.Field{{Key: "item", Value: it.ID}, {Key: "queue", Value: "q"}}})
				if err != nil {
					t.Fatal(err)
				}
				err = s.Create(rel, d)
				if err != nil {
					t.Fatalf("create: %v", err)
				}
			case "set":
				if _, err := s.Update(rel, func(d *docstore.Doc) error { return d.Set("item", it.ID) }); err != nil {
					t.Fatalf("set: %v", err)
				}
			case "edit":
				data, err := s.ReadFile(rel)
				if err != nil {
					t.Fatal(err)
				}
				edited := strings.Replace(string(data), "item: "+a.ID, "item: "+it.ID, 1)
				if _, err := s.SaveEdit(rel, docstore.Revision(data), []byte(edited)); err != nil {
					t.Fatalf("edit: %v", err)
				}
			}
			if err := <-rm; err != nil {
				t.Fatalf("rm: %v", err)
			}
			if _, err := s.Stat(it.Path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the removed item: %v", err)
			}
			if d, err := s.Get(rel); err == nil && d.String("item") == it.ID {
				t.Errorf("%s: the gate of the removed item is left (its item in no queue)", op)
			}
		})
	}
}

// Two gates set to each other's items at once each need both items'
// locks: each holds its own item's and tries the other's, and the one
// that finds it busy lets go and takes both in order (docstore's
// relock), so neither waits for ever on the other.
func TestHandGateSetsCrossingItemsDoNotDeadlock(t *testing.T) {
	s := newStore(t, true)
	b := newBroker(t, s, nil)
	mustQueue(t, b, "q", queues.QueueOptions{})
	a := mustAdd(t, b, "q", queues.AddOptions{Title: "a"})
	c := mustAdd(t, b, "q", queues.AddOptions{Title: "c"})
	ga, err := b.AddGate(a.ID, queues.GateOptions{Reason: "a"})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := b.AddGate(c.ID, queues.GateOptions{Reason: "c"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []*queues.Item{a, c} {
		if _, err := s.Update(it.Path, func(d *docstore.Doc) error { return d.Set("gates", []string{ga.ID, gc.ID}) }); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := docstore.Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	newBroker(t, s2, nil)
	var wg sync.WaitGroup
	run := func(st *docstore.Store, g *queues.Gate, from, to string) {
		defer wg.Done()
		for i := range 50 {
			item := to
			if i%2 == 1 {
				item = from
			}
			if _, err := st.Update(queues.GatePath(g.ID), func(d *docstore.Doc) error { return d.Set("item", item) }); err != nil {
				t.Error(err)
				return
			}
		}
	}
	wg.Add(2)
	go run(s, ga, a.ID, c.ID)
	go run(s2, gc, c.ID, a.ID)
	wg.Wait()
}
