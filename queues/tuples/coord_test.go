package tuples_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	_ "github.com/tavernhq/tavern/queues/etcd"
	"github.com/tavernhq/tavern/queues/etcd/etcdtest"
	"github.com/tavernhq/tavern/queues/tuples"
)

// twoClones makes two copies of one store (as after a sync) whose tokens
// and reservations are arbitrated by one etcd.
func twoClones(t *testing.T) (*tuples.Space, *tuples.Space) {
	t.Helper()
	srv := etcdtest.Start(t)
	root := t.TempDir()
	a := filepath.Join(root, "a", ".tavern")
	s, _, err := docstore.Init(a, "two")
	if err != nil {
		t.Fatal(err)
	}
	cfg := "---\nname: two\ncoordination: etcd\netcd:\n  endpoints: [" + srv.Client + "]\n  lease_ttl: 2s\n---\n"
	if err := os.WriteFile(filepath.Join(a, "tavern.md"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	spa, err := tuples.NewSpace(s, tuples.SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spa.InitToken("gpu", 1); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(root, "b", ".tavern")
	os.MkdirAll(filepath.Dir(b), 0o755)
	if out, err := exec.Command("cp", "-a", a, b).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Remove(filepath.Join(b, queues.MachineFile))
	sb, err := docstore.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	spb, err := tuples.NewSpace(sb, tuples.SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return spa, spb
}

// A token slot held on one machine cannot be acquired on the other, whose
// copy of the slot file still says free; after the release it can.
func TestTokenAcrossMachines(t *testing.T) {
	a, b := twoClones(t)
	tok, err := a.TryAcquire("gpu", tuples.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire("gpu", tuples.AcquireOptions{}); !errors.Is(err, tuples.ErrTokenBusy) {
		t.Fatalf("acquire on the other machine while held: %v, want ErrTokenBusy", err)
	}
	if err := tok.Release(); err != nil {
		t.Fatal(err)
	}
	tb, err := b.TryAcquire("gpu", tuples.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire after the release: %v", err)
	}
	if _, err := a.TryAcquire("gpu", tuples.AcquireOptions{}); !errors.Is(err, tuples.ErrTokenBusy) {
		t.Fatalf("acquire back on the first machine: %v, want ErrTokenBusy", err)
	}
	if err := tb.Release(); err != nil {
		t.Fatal(err)
	}
}

// Reservations made on one machine conflict on the other before any sync.
func TestReservationAcrossMachines(t *testing.T) {
	a, b := twoClones(t)
	if _, err := a.Reserve("alice", []string{"src/**"}, tuples.ReserveOptions{Reason: "refactor"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Reserve("bob", []string{"src/a.go"}, tuples.ReserveOptions{})
	var re *tuples.ReservedError
	if !errors.As(err, &re) || len(re.Conflicts) != 1 || re.Conflicts[0].Held.Agent != "alice" {
		t.Fatalf("overlapping reservation on the other machine: %v", err)
	}
	cs, err := b.CheckPaths("bob", []string{"src/a.go", "docs/x.md"})
	if err != nil || len(cs) != 1 {
		t.Fatalf("guard on the other machine: %v %v", cs, err)
	}
	// Listed on the other machine from the engine: its machine, no path
	// (the file is not there), and its expiry when it has one.
	if _, err := a.Reserve("alice", []string{"docs/**"}, tuples.ReserveOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rs, errs := b.Reservations()
	if len(errs) != 0 || len(rs) != 2 {
		t.Fatalf("Reservations on the other machine = %v, %v; want alice's two", rs, errs)
	}
	for _, r := range rs {
		if r.Machine == "" || r.Path != "" {
			t.Errorf("%s: Machine %q, Path %q; want a machine and no path", r.Glob, r.Machine, r.Path)
		}
		wantTTL := r.Glob == "docs/**"
		if got := !r.Expires.IsZero(); got != wantTTL {
			t.Errorf("%s: Expires %v; want set %v", r.Glob, r.Expires, wantTTL)
		}
		if wantTTL && time.Until(r.Expires.Time) < 50*time.Minute {
			t.Errorf("%s: Expires %v; want about an hour from now", r.Glob, r.Expires)
		}
	}
	if _, err := a.Unreserve("alice", []string{"docs/**"}, tuples.UnreserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Unreserve("alice", nil, tuples.UnreserveOptions{}); err != nil || n != 1 {
		t.Fatalf("unreserve: %d %v", n, err)
	}
	if _, err := b.Reserve("bob", []string{"src/a.go"}, tuples.ReserveOptions{}); err != nil {
		t.Fatalf("reserve after the other machine let go: %v", err)
	}
}

// A reservation renewed on one machine (reserved again with a longer
// TTL) whose older file the other machine has, past that file's expires:
// the other machine used to take it for expired, archive it and release
// its engine key (the fence is the same), so the renewed reservation was
// gone everywhere. It stands, listed with the engine's lease end, and
// still refuses an overlapping reservation there.
func TestReservationRenewedElsewhereNotExpired(t *testing.T) {
	a, b0 := twoClones(t)
	if _, err := a.Reserve("alice", []string{"src/**"}, tuples.ReserveOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The sync brings the first file to b.
	dir := filepath.Join("tuples", tuples.ReservationType)
	ents, err := os.ReadDir(filepath.Join(a.Store().Root(), dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(b0.Store().Root(), dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".md" {
			b, err := os.ReadFile(filepath.Join(a.Store().Root(), dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(b0.Store().Root(), dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := a.Reserve("alice", []string{"src/**"}, tuples.ReserveOptions{TTL: 3 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// b, two hours on: its copy's expires (one hour) has passed.
	later := time.Now().Add(2 * time.Hour)
	b, err := tuples.NewSpace(b0.Store(), tuples.SpaceOptions{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	rs, errs := b.Reservations()
	if len(errs) != 0 || len(rs) != 1 || rs[0].Agent != "alice" {
		t.Fatalf("Reservations on the other machine = %v, %v; want alice's src/**", rs, errs)
	}
	if d := time.Until(rs[0].Expires.Time); d < 3*time.Hour-5*time.Second || d > 3*time.Hour+5*time.Second {
		t.Errorf("Expires %v; want the renewed end, about 3h from now", rs[0].Expires)
	}
	var re *tuples.ReservedError
	if _, err := b.Reserve("bob", []string{"src/a.go"}, tuples.ReserveOptions{}); !errors.As(err, &re) {
		t.Fatalf("overlapping reservation on the other machine: %v, want *ReservedError", err)
	}
	if rs, errs := a.Reservations(); len(errs) != 0 || len(rs) != 1 {
		t.Fatalf("Reservations where it was renewed = %v, %v; want it still", rs, errs)
	}
}
