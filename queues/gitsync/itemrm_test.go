package gitsync_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// openBroker opens s's queues (installing their rules: an item owns its
// gates, its removal holds its lock); closed at the end of the test.
func openBroker(t *testing.T, s *docstore.Store) *queues.Broker {
	t.Helper()
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// itemRemovedOnBeta makes queue q on alpha with an item waiting on a
// person's gate, clones it on beta, and removes the item there (`tavern
// rm items/ID`: the item and its gate) and syncs beta: alpha's next round
// takes the removal in. It returns alpha's store and the item and gate.
func itemRemovedOnBeta(t *testing.T) (a *docstore.Store, it *queues.Item, g *queues.Gate) {
	t.Helper()
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a = newOrigin(t, root, "alpha", url)
	ba := openBroker(t, a)
	if _, err := ba.CreateQueue("q", queues.QueueOptions{Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	it, err := ba.Add("q", queues.AddOptions{Title: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	if g, err = ba.AddGate(it.ID, queues.GateOptions{Reason: "ok to ship?"}); err != nil {
		t.Fatal(err)
	}
	agentSync(t, a)
	b := clone(t, root, "beta", url)
	openBroker(t, b)
	removed, err := b.DeleteAll(it.Path)
	if err != nil || !slices.Equal(removed, []string{it.Path, g.Path}) {
		t.Fatalf("rm on beta: %v %v", removed, err)
	}
	agentSync(t, b)
	return a, it, g
}

// An item removed on another machine is taken in with its gates as `tavern
// rm` takes them out: in one step under the item's lock. The sync applied
// the gate under its document lock and the item under the item's lock,
// one after the other (the gate first): a claim in between (the hook)
// took the item whose gate was gone, a claimed item that could never be
// finished (a gate with no document is never passed). Now the claim finds
// nothing and an approval no gate, at any point between two units.
func TestSyncItemRemovalIsOneStep(t *testing.T) {
	a, it, g := itemRemovedOnBeta(t)
	// Another process on alpha, with its own Store.
	a2, err := docstore.Open(a.Root())
	if err != nil {
		t.Fatal(err)
	}
	b2 := openBroker(t, a2)
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(a.Root(), filepath.FromSlash(rel)))
		return err == nil
	}
	var units, claimed []string
	var approved []error
	defer gitsync.SetTestHookAfterUnit(func(key string, paths []string) {
		if !slices.Contains(paths, it.Path) && !slices.Contains(paths, g.Path) {
			return
		}
		units = append(units, key)
		if i, gt := exists(it.Path), exists(g.Path); i != gt {
			t.Errorf("after unit %s %v: item there %v, its gate there %v", key, paths, i, gt)
		}
		if c, err := b2.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); err == nil {
			claimed = append(claimed, c.ID)
		} else if !errors.Is(err, queues.ErrEmpty) {
			t.Errorf("claim after unit %s: %v", key, err)
		}
		if _, err := b2.Approve(g.ID, queues.Decision{Caller: human()}); err == nil {
			approved = append(approved, nil)
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("approve after unit %s: %v", key, err)
		}
	})()
	rep := agentSync(t, a)
	if len(units) != 1 || units[0] != queues.ItemLockKey("q", it.ID) {
		t.Errorf("units with the item or its gate: %v, want one, under the item's lock %s", units, queues.ItemLockKey("q", it.ID))
	}
	if len(claimed) > 0 || len(approved) > 0 {
		t.Errorf("between the removal's steps: claimed %v, %d approvals, want none", claimed, len(approved))
	}
	if len(rep.Deferred) > 0 {
		t.Errorf("deferred: %v", rep.Deferred)
	}
	for _, p := range []string{it.Path, g.Path, queues.ItemPath("q", queues.Claimed, it.ID)} {
		if exists(p) {
			t.Errorf("%s is left after the removal came in", p)
		}
	}
}

// human is a person's approval (not an agent's, which is refused).
func human() *queues.Caller {
	return &queues.Caller{User: "ann", UID: 1000, PID: 4242, Host: "h", Env: map[string]string{},
		Ancestry: []queues.Proc{{PID: 4242, Command: "tavern approve"}, {PID: 4000, Command: "bash"}}}
}
