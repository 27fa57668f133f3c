package gitsync_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// A gate another machine moved from one item to another (its item:
// changed, the old item's gates: lost it and the new one's gained it) is
// taken in as one step, under both items' locks. The sync wrote the gate
// and the new item under the new item's lock and the old item in a unit
// of its own: between the two, the old item listed a gate that gated
// another (a gate add on it was answered "already has this gate" by the
// gate that was leaving it), or a gate named an item that did not list
// it (gating nothing).
func TestSyncGateMoveIsOneStep(t *testing.T) {
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a := newOrigin(t, root, "alpha", url)
	ba := openBroker(t, a)
	if _, err := ba.CreateQueue("q", queues.QueueOptions{Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	from, err := ba.Add("q", queues.AddOptions{Title: "old"})
	if err != nil {
		t.Fatal(err)
	}
	// Items whose locks differ (the keys are striped: two items may
	// share one, and then one unit was always enough).
	var to *queues.Item
	for to == nil || queues.ItemLockKey("q", to.ID) == queues.ItemLockKey("q", from.ID) {
		if to, err = ba.Add("q", queues.AddOptions{Title: "new"}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := ba.AddGate(from.ID, queues.GateOptions{Reason: "ok to ship?"})
	if err != nil {
		t.Fatal(err)
	}
	agentSync(t, a)

	// On beta the gate moves: the new item lists it, the gate names it,
	// the old item no longer lists it.
	b := clone(t, root, "beta", url)
	openBroker(t, b)
	if _, err := b.Update(to.Path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "gates", Value: []string{g.ID}}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(g.Path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "item", Value: to.ID}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(from.Path, func(d *docstore.Doc) error { return d.Edit(nil, "gates") }); err != nil {
		t.Fatal(err)
	}
	agentSync(t, b)

	// Another process on alpha, with its own Store.
	a2, err := docstore.Open(a.Root())
	if err != nil {
		t.Fatal(err)
	}
	b2 := openBroker(t, a2)
	var units []string
	defer gitsync.SetTestHookAfterUnit(func(key string, paths []string) {
		if !slices.Contains(paths, g.Path) && !slices.Contains(paths, from.Path) && !slices.Contains(paths, to.Path) {
			return
		}
		units = append(units, key)
		gd, err := a2.Get(g.Path)
		if err != nil {
			t.Errorf("after unit %s: %v", key, err)
			return
		}
		names := gd.String("item")
		for _, it := range []*queues.Item{from, to} {
			cur, err := b2.Get(it.ID)
			if err != nil {
				t.Errorf("after unit %s: %v", key, err)
				continue
			}
			if lists := slices.Contains(cur.Gates, g.ID); lists != (names == it.ID) {
				t.Errorf("after unit %s %v: the gate names %s; item %s lists it: %v", key, paths, names, it.ID, lists)
			}
		}
		// A person on alpha asks for the old item's gate again.
		ng, err := b2.AddGate(from.ID, queues.GateOptions{Reason: g.Reason})
		if err != nil {
			t.Errorf("gate add on %s after unit %s: %v", from.ID, key, err)
		} else if ng.Existing && ng.Item != from.ID {
			t.Errorf("gate add on %s after unit %s: answered \"already has this gate\" with gate %s of item %s", from.ID, key, ng.ID, ng.Item)
		}
	})()
	rep := agentSync(t, a)
	if len(units) != 1 {
		t.Errorf("units with the gate or its items: %v, want one", units)
	}
	if len(rep.Deferred) > 0 {
		t.Errorf("deferred: %v", rep.Deferred)
	}
	if got, err := ba.Get(to.ID); err != nil || !slices.Equal(got.Gates, []string{g.ID}) {
		t.Errorf("the new item's gates after the sync: %v, %v; want [%s]", got.Gates, err, g.ID)
	}
}
