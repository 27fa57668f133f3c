package queues

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// A gate that a sync moved to another item while decide waited for the
// old item's lock is not decided there (nothing written), and decide
// follows it to its new item. decideLocked is given the gate as
// resolveGate read it before the move.
func TestDecideFollowsMovedGate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".tavern")
	s, _, err := docstore.Init(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateQueue("q", QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	from, err := b.Add("q", AddOptions{Title: "old"})
	if err != nil {
		t.Fatal(err)
	}
	to, err := b.Add("q", AddOptions{Title: "new"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.AddGate(from.ID, GateOptions{Reason: "ok?"})
	if err != nil {
		t.Fatal(err)
	}
	stale := *g
	// The move, as a sync applies it: the new item lists the gate, the
	// gate names it, the old item no longer lists it.
	if _, err := s.Update(to.Path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "gates", Value: []string{g.ID}}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(g.Path, func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "item", Value: to.ID}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(from.Path, func(d *docstore.Doc) error { return d.Edit(nil, "gates") }); err != nil {
		t.Fatal(err)
	}
	c := &Caller{User: "ann", Env: map[string]string{}}
	out, moved, err := b.decideLocked("approve", &stale, GateApproved, "ann", c, "")
	if out != nil || moved != to.ID || !errors.Is(err, ErrState) {
		t.Fatalf("decideLocked of the moved gate = %v, %q, %v; want nil, %q, ErrState", out, moved, err, to.ID)
	}
	if names, _ := s.Names("approvals"); len(names) != 0 {
		t.Fatalf("approvals written for the old item: %v", names)
	}
	cur, err := b.readGate(g.ID, nil)
	if err != nil || cur.Status != GatePending {
		t.Fatalf("the gate after: %+v, %v; want pending", cur, err)
	}
	// decide from the stale view: it follows the gate to its new item.
	got, err := b.decideGate("approve", &stale, GateApproved, "ann", c, "")
	if err != nil || got.Item != to.ID || got.State != GateStatePassed {
		t.Fatalf("Approve after the move = %+v, %v; want passed, item %s", got, err, to.ID)
	}
}
