package tuples

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// waitEvent waits until the journal has an event of type typ.
func waitEvent(tb testing.TB, sp *Space, typ string) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(tupleEvents(tb, sp, typ)) == 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("no %s event within 20s", typ)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// setAgentInstance writes agents/<name>.md recording instance, as the
// spawn wrapper does for each new instance.
func setAgentInstance(tb testing.TB, sp *Space, name, instance string) {
	tb.Helper()
	doc := "---\nschema_version: 1\nname: " + name + "\nstate: working\ninstance: " + instance + "\n---\n"
	path := filepath.Join(sp.Store().Root(), "agents", name+".md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		tb.Fatal(err)
	}
	if got := sp.agentInstance(name); got != instance {
		tb.Fatalf("agent document reads instance %q, want %q", got, instance)
	}
}

// TestTokenUnknownOnlyWhenMissing: a slot released between the scan of
// the free slots and the read of the held ones is seen by neither; that
// is "busy" (look again), never "unknown token" (issue 15: 67-69 of 100
// waiting acquires failed so). A token with no slot is unknown at once,
// also to a waiting Acquire.
func TestTokenUnknownOnlyWhenMissing(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("m", 1); err != nil {
		t.Fatal(err)
	}
	tok, err := sp.TryAcquire("m", AcquireOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tok.Detach()
	afterFreeScan = func() {
		afterFreeScan = nil
		if err := sp.ReleaseToken("m", tok.Handle(), ReleaseOptions{}); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterFreeScan = nil }()
	if _, err := sp.TryAcquire("m", AcquireOptions{}); !errors.Is(err, ErrTokenBusy) {
		t.Fatalf("acquire while the slot changed hands: %v, want ErrTokenBusy", err)
	}
	if tok, err := sp.TryAcquire("m", AcquireOptions{}); err != nil {
		t.Fatalf("acquire after: %v", err)
	} else {
		tok.Release()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := sp.Acquire(ctx, "nope", AcquireOptions{}); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("waiting acquire of a missing token: %v, want ErrUnknownToken", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("a missing token made Acquire wait %s", time.Since(start))
	}
}

// TestTokenReleaseWaitsOutRacers: a release by handle is not refused
// because an acquirer or a reaper holds the slot's lock for a moment.
func TestTokenReleaseWaitsOutRacers(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	sp.InitToken("m", 1)
	tok, err := sp.TryAcquire("m", AcquireOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tok.Detach()
	// A racer holds the lock, as docstore.Claim does while it tries.
	l, err := sp.Store().Lock(tupleLockKey(TokenType, tok.ID))
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(50 * time.Millisecond); l.Unlock() }()
	if err := sp.ReleaseToken("m", tok.Handle(), ReleaseOptions{}); err != nil {
		t.Fatalf("release while a racer held the lock: %v", err)
	}
}

// TestReservationAgentDied: a reservation made for a live agent is tied
// to its liveness like a token: killing the agent's process releases it
// to a waiting ReserveWait within one liveness check, which is told why.
func TestReservationAgentDied(t *testing.T) {
	sp := newSpace(t, SpaceOptions{LivenessPoll: 50 * time.Millisecond, Recheck: time.Hour})
	h := startTupleHelper(t, sp, "agent", "TAVERN_AGENT=alice")
	if got := h.line(t); got != "alive" {
		t.Fatalf("agent helper said %q", got)
	}
	rs, err := sp.Reserve("alice", []string{"src/**"}, ReserveOptions{TTL: time.Hour, Instance: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Hold != HoldAgent || rs[0].Instance != "i1" {
		t.Fatalf("reservation hold %q instance %q, want agent i1", rs[0].Hold, rs[0].Instance)
	}
	if _, err := sp.Reserve("bob", []string{"src/a.go"}, ReserveOptions{}); !errors.Is(err, ErrReserved) {
		t.Fatalf("bob while alice lives: %v, want ErrReserved", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		rs       []*Reservation
		released []Conflict
		err      error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.rs, r.err = sp.ReserveWait(ctx, "bob", []string{"src/a.go"}, ReserveOptions{Released: func(c Conflict) { r.released = append(r.released, c) }})
		done <- r
	}()
	waitEvent(t, sp, "reservation.waiting")
	h.kill(t)
	r := <-done
	if r.err != nil {
		t.Fatalf("bob after alice died: %v", r.err)
	}
	if len(r.released) != 1 || r.released[0].Gone != "agent alice is not alive" || r.released[0].Held.Agent != "alice" {
		t.Fatalf("released = %+v, want alice's, gone because not alive", r.released)
	}
	want := "src/a.go overlaps src/** reserved by alice (holder gone: agent alice is not alive; the reservation is being released)"
	if got := r.released[0].String(); got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if ev := tupleEvents(t, sp, "reservation.reclaimed"); len(ev) != 1 || ev[0].Data["reason"] != "agent alice is not alive" {
		t.Fatalf("journal reservation.reclaimed = %+v", ev)
	}
	if ev := tupleEvents(t, sp, "reservation.conflict"); len(ev) != 1 {
		t.Fatalf("journal has %d reservation.conflict, want 1 (the refusal before the wait)", len(ev))
	}
}

// TestReservationProcessHold: a reservation tied to a process
// (ReserveOptions.Process) goes when the process dies, and when its Space
// is closed.
func TestReservationProcessHold(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	h := startTupleHelper(t, sp, "reserve-process", "TAVERN_AGENT=alice")
	if got := h.line(t); got != "reserved" {
		t.Fatalf("helper said %q", got)
	}
	if _, err := sp.Reserve("bob", []string{"src/a.go"}, ReserveOptions{}); !errors.Is(err, ErrReserved) {
		t.Fatalf("bob while alice's process lives: %v, want ErrReserved", err)
	}
	h.kill(t)
	if _, err := sp.Reserve("bob", []string{"src/a.go"}, ReserveOptions{}); err != nil {
		t.Fatalf("bob after alice's process died: %v", err)
	}
	other, err := NewSpace(sp.Store(), SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := other.Reserve("carol", []string{"doc/**"}, ReserveOptions{Process: true})
	if err != nil || rs[0].Hold != HoldProcess {
		t.Fatalf("process reserve = %+v, %v", rs, err)
	}
	if _, err := sp.Reserve("dave", []string{"doc/x"}, ReserveOptions{}); !errors.Is(err, ErrReserved) {
		t.Fatalf("dave while carol's Space is open: %v, want ErrReserved", err)
	}
	other.Close()
	if _, err := sp.Reserve("dave", []string{"doc/x"}, ReserveOptions{}); err != nil {
		t.Fatalf("dave after carol's Space closed: %v", err)
	}
}

// TestReserveWaitWokenByUnreserve: a waiting reserve is woken by the
// unreserve itself, not by a timer (every safety net is an hour away),
// and its refusals are journaled once, not one by one.
func TestReserveWaitWokenByUnreserve(t *testing.T) {
	sp := newSpace(t, SpaceOptions{LivenessPoll: time.Hour, Recheck: time.Hour})
	mustReserve(t, sp, "alice", "src/**")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := sp.ReserveWait(ctx, "bob", []string{"src/a.go"}, ReserveOptions{})
		done <- err
	}()
	waitEvent(t, sp, "reservation.waiting")
	// Unrelated reservations come and go: the waiter looks and waits on.
	for range 5 {
		mustReserve(t, sp, "carol", "doc/x")
		if _, err := sp.Unreserve("carol", nil, UnreserveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sp.Unreserve("alice", nil, UnreserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("bob's wait: %v", err)
	}
	if n := len(tupleEvents(t, sp, "reservation.waiting")) + len(tupleEvents(t, sp, "reservation.conflict")); n != 1 {
		t.Fatalf("%d refusal events for one wait, want 1", n)
	}
	// A wait that times out says so once, with the conflicts.
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err := sp.ReserveWait(short, "carol", []string{"src/**"}, ReserveOptions{})
	var re *ReservedError
	if !errors.As(err, &re) || len(re.Conflicts) != 1 || re.Conflicts[0].Held.Agent != "bob" {
		t.Fatalf("timed-out wait: %v, want bob's conflict", err)
	}
	if n := len(tupleEvents(t, sp, "reservation.conflict")); n != 1 {
		t.Fatalf("%d reservation.conflict after a timed-out wait, want 1", n)
	}
}

// TestInstanceFencing: an unreserve or token release by name from an
// instance other than the holder's changes nothing and says so; release
// by handle or id still works.
func TestInstanceFencing(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	sp.InitToken("merge", 1)
	h := startTupleHelper(t, sp, "agent", "TAVERN_AGENT=alice")
	if got := h.line(t); got != "alive" {
		t.Fatalf("agent helper said %q", got)
	}
	tok, err := sp.TryAcquire("merge", AcquireOptions{As: "alice", Instance: "i-new"})
	if err != nil {
		t.Fatal(err)
	}
	tok.Detach()
	rs, err := sp.Reserve("alice", []string{"src/**"}, ReserveOptions{Instance: "i-new"})
	if err != nil {
		t.Fatal(err)
	}
	late := ReleaseOptions{As: "alice", Instance: "i-old"}
	if _, err := sp.ReleaseAgentTokens("merge", late); !errors.Is(err, ErrFenced) {
		t.Fatalf("release --as alice from i-old: %v, want ErrFenced", err)
	}
	if err := sp.ReleaseToken("merge", tok.ID, ReleaseOptions{Instance: "i-old"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("release by bare id from i-old: %v, want ErrFenced", err)
	}
	if _, err := sp.Unreserve("alice", nil, UnreserveOptions{Instance: "i-old"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("unreserve from i-old: %v, want ErrFenced", err)
	}
	var fe *FencedError
	if _, err := sp.Unreserve("alice", []string{"src/**"}, UnreserveOptions{Instance: "i-old"}); !errors.As(err, &fe) || fe.Holder != "i-new" || fe.Instance != "i-old" {
		t.Fatalf("unreserve error = %v, want a FencedError naming both instances", err)
	}
	slots, _ := sp.TokenSlots("merge")
	if len(slots) != 1 || slots[0].Free || slots[0].Instance != "i-new" {
		t.Fatalf("slots after fenced releases = %+v, want held by i-new", slots)
	}
	if live, _ := sp.Reservations(); len(live) != 1 || live[0].ID != rs[0].ID {
		t.Fatalf("reservations after a fenced unreserve = %+v", live)
	}
	// By handle and by id: allowed, whatever the instance.
	if err := sp.ReleaseToken("merge", tok.Handle(), ReleaseOptions{Instance: "i-old"}); err != nil {
		t.Fatalf("release by handle: %v", err)
	}
	// By id, another agent's is refused naming its holder (it exists:
	// not ErrNotReserved).
	var he *HeldByError
	if err := sp.UnreserveID(rs[0].ID, "bob"); !errors.As(err, &he) || he.Holder != "alice" || he.As != "bob" || errors.Is(err, ErrNotReserved) {
		t.Fatalf("unreserve by id as bob: %v, want a HeldByError naming alice", err)
	}
	if err := sp.UnreserveID(rs[0].ID, ""); err != nil {
		t.Fatalf("unreserve by id: %v", err)
	}
	if err := sp.UnreserveID(rs[0].ID, ""); !errors.Is(err, ErrNotReserved) {
		t.Fatalf("second unreserve by id: %v, want ErrNotReserved", err)
	}
	// The holder's own instance releases by name.
	tok, _ = sp.TryAcquire("merge", AcquireOptions{As: "alice", Instance: "i-new"})
	tok.Detach()
	if n, err := sp.ReleaseAgentTokens("merge", ReleaseOptions{As: "alice", Instance: "i-new"}); err != nil || n != 1 {
		t.Fatalf("release by the holding instance = %d, %v", n, err)
	}
}

// TestSupersededInstance: once the agent document names a newer instance
// (a respawn), what the old instance holds is released even though the
// agent's liveness lock is held (by the successor), and the old instance
// can take nothing more.
func TestSupersededInstance(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	sp.InitToken("merge", 1)
	setAgentInstance(t, sp, "alice", "i-old")
	h := startTupleHelper(t, sp, "agent", "TAVERN_AGENT=alice")
	if got := h.line(t); got != "alive" {
		t.Fatalf("agent helper said %q", got)
	}
	tok, err := sp.TryAcquire("merge", AcquireOptions{As: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	tok.Detach()
	if tok.Instance != "i-old" {
		t.Fatalf("slot instance %q, want the agent's current i-old", tok.Instance)
	}
	if _, err := sp.Reserve("alice", []string{"src/**"}, ReserveOptions{Instance: "i-old"}); err != nil {
		t.Fatal(err)
	}
	setAgentInstance(t, sp, "alice", "i-new") // respawned
	if _, err := sp.TryAcquire("merge", AcquireOptions{As: "alice", Instance: "i-old"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("acquire by the replaced instance: %v, want ErrFenced", err)
	}
	if _, err := sp.Reserve("alice", []string{"doc/**"}, ReserveOptions{Instance: "i-old"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("reserve by the replaced instance: %v, want ErrFenced", err)
	}
	tok2, err := sp.TryAcquire("merge", AcquireOptions{As: "alice", Instance: "i-new"})
	if err != nil {
		t.Fatalf("the new instance cannot have the slot the old one held: %v", err)
	}
	tok2.Detach()
	if _, err := sp.Reserve("bob", []string{"src/a.go"}, ReserveOptions{}); err != nil {
		t.Fatalf("bob against the replaced instance's reservation: %v", err)
	}
	if ev := tupleEvents(t, sp, "token.reclaimed"); len(ev) != 1 || ev[0].Data["reason"] != "instance i-old of agent alice was replaced by i-new" {
		t.Fatalf("journal token.reclaimed = %+v", ev)
	}
}

// TestHolderNames: every holder name goes through the one agent name rule
// (issue 13): a newline, '/', an empty name, "@../x", upper case, a
// space or '@' are refused before anything is written.
func TestHolderNames(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	sp.InitToken("merge", 1)
	for _, name := range []string{"a\nb", "a/b", "@../x", "@user", "Alice", "a b", "-a"} {
		if _, err := sp.TryAcquire("merge", AcquireOptions{As: name, TTL: time.Hour}); !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("acquire --as %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := sp.Reserve(name, []string{"x"}, ReserveOptions{TTL: time.Hour}); !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("reserve --as %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := sp.Unreserve(name, nil, UnreserveOptions{}); !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("unreserve --as %q: %v, want ErrInvalidName", name, err)
		}
		if _, err := sp.ReleaseAgentTokens("merge", ReleaseOptions{As: name}); !errors.Is(err, schema.ErrInvalidName) {
			t.Errorf("release --as %q: %v, want ErrInvalidName", name, err)
		}
	}
	if _, err := sp.Reserve("", []string{"x"}, ReserveOptions{TTL: time.Hour}); !errors.Is(err, schema.ErrInvalidName) {
		t.Errorf("reserve with no agent: %v, want ErrInvalidName", err)
	}
	if live, _ := sp.Reservations(); len(live) != 0 {
		t.Fatalf("%d reservations written", len(live))
	}
	if slots, _ := sp.TokenSlots("merge"); !slots[0].Free {
		t.Fatalf("slot taken: %+v", slots[0])
	}
}

// TestTokenInitRefusedLeavesNothing: a token init refused before any
// slot is made (a new name that breaks the name rule, a count of 0 for
// a token that has none) leaves no lock file named after the typo in
// .locks/tokens/ ("nothing created", as the exit table promises).
func TestTokenInitRefusedLeavesNothing(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("DB", 1); err == nil {
		t.Fatal("InitToken DB: want the name rule's refusal")
	}
	if _, err := sp.InitToken("nope", 0); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("InitToken nope 0: %v, want ErrUnknownToken", err)
	}
	for _, n := range []string{"DB", "nope"} {
		p := filepath.Join(sp.Store().Root(), ".locks", "tokens", n+".lock")
		if _, err := os.Stat(p); err == nil {
			t.Errorf("refused init left %s", p)
		}
	}
}
