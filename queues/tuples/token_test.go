package tuples

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func TestTokenInitAcquireRelease(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.TryAcquire("merge", AcquireOptions{}); !errors.Is(err, ErrUnknownToken) {
		t.Fatalf("acquire of an unknown token: %v", err)
	}
	if n, err := sp.InitToken("merge", 2); err != nil || n != 2 {
		t.Fatalf("init = %d, %v", n, err)
	}
	if n, err := sp.InitToken("merge", 2); err != nil || n != 0 {
		t.Fatalf("init again = %d, %v; want idempotent", n, err)
	}
	a, err := sp.TryAcquire("merge", AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sp.TryAcquire("merge", AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Hold != HoldProcess {
		t.Fatalf("slots %s %s hold %s", a.ID, b.ID, a.Hold)
	}
	if _, err := sp.TryAcquire("merge", AcquireOptions{}); !errors.Is(err, ErrTokenBusy) {
		t.Fatalf("third acquire: %v, want ErrTokenBusy", err)
	}
	// A held slot is not a match for anyone reading the space.
	if ts, _ := sp.List(TokenType, pattern(t, "token=merge")); len(ts) != 0 {
		t.Fatalf("ls shows %d free slots, want 0", len(ts))
	}
	slots, err := sp.TokenSlots("merge")
	if err != nil || len(slots) != 2 || slots[0].Free || slots[0].HeldBy == "" {
		t.Fatalf("slots = %+v, %v", slots, err)
	}
	// Cannot shrink below what is held.
	if _, err := sp.InitToken("merge", 1); !errors.Is(err, ErrTokenCount) {
		t.Fatalf("shrink while held: %v, want ErrTokenCount", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("double release: %v, want ErrNotHolder", err)
	}
	if n, err := sp.InitToken("merge", 1); err != nil || n != -1 {
		t.Fatalf("shrink to 1 = %d, %v", n, err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	c, err := sp.TryAcquire("merge", AcquireOptions{})
	if err != nil || c.ID != b.ID || c.Epoch != b.Epoch+1 {
		t.Fatalf("reacquire = %+v, %v; want slot %s epoch %d", c, err, b.ID, b.Epoch+1)
	}
	c.Release()
	var types []string
	for _, e := range tupleEvents(t, sp, "token.") {
		types = append(types, e.Type)
	}
	want := []string{"token.init", "token.init", "token.acquired", "token.acquired", "token.released", "token.init", "token.released", "token.acquired", "token.released"}
	if len(types) != len(want) {
		t.Fatalf("journal = %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("journal = %v, want %v", types, want)
		}
	}
}

func TestTokenLease(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := newSpace(t, SpaceOptions{Now: clock})
	sp.InitToken("quota", 1)
	tok, err := sp.TryAcquire("quota", AcquireOptions{As: "bob", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Hold != HoldLease || tok.HeldBy != "bob" {
		t.Fatalf("hold %s by %s, want a lease by bob", tok.Hold, tok.HeldBy)
	}
	tok.Detach()
	if _, err := sp.TryAcquire("quota", AcquireOptions{}); !errors.Is(err, ErrTokenBusy) {
		t.Fatalf("acquire within the lease: %v", err)
	}
	// Another agent cannot release bob's slot; bob can, by agent name.
	if _, err := sp.ReleaseAgentTokens("quota", ReleaseOptions{As: "carol"}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("carol releasing bob's slot: %v", err)
	}
	if err := sp.ReleaseToken("quota", tok.ID, ReleaseOptions{As: "carol"}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("carol releasing bob's slot by id: %v", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	tok2, err := sp.TryAcquire("quota", AcquireOptions{As: "carol", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire after the lease ran out: %v", err)
	}
	tok2.Detach()
	if ev := tupleEvents(t, sp, "token.reclaimed"); len(ev) != 1 || ev[0].Data["reason"] != "lease expired" {
		t.Fatalf("journal token.reclaimed = %+v", ev)
	}
	if n, err := sp.ReleaseAgentTokens("quota", ReleaseOptions{As: "carol"}); err != nil || n != 1 {
		t.Fatalf("carol releases = %d, %v", n, err)
	}
}

func TestTokenReleaseErrors(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	sp.InitToken("merge", 1)
	sp.InitToken("other", 1)
	tok, _ := sp.TryAcquire("merge", AcquireOptions{TTL: time.Hour})
	tok.Detach()
	for _, tt := range []struct{ name, handle string }{
		{"other", tok.Handle()}, // wrong token
		{"merge", tok.ID + ":99"},
	} {
		if err := sp.ReleaseToken(tt.name, tt.handle, ReleaseOptions{}); !errors.Is(err, ErrNotHolder) {
			t.Errorf("release %s %s: %v, want ErrNotHolder", tt.name, tt.handle, err)
		}
	}
	// An ID that is no slot at all (here the slot's number) is not a slot
	// someone else holds: ErrNoSlot, with the handle the number meant.
	for _, h := range []string{"0190aaaa-0000-7000-8000-000000000000", "0:1"} {
		err := sp.ReleaseToken("merge", h, ReleaseOptions{})
		var nse *NoSlotError
		if !errors.As(err, &nse) || errors.Is(err, ErrNotHolder) {
			t.Fatalf("release merge %s: %v, want ErrNoSlot", h, err)
		}
		if want := map[string]string{"0:1": tok.Handle()}[h]; nse.Near != want || len(nse.Handles) != 1 {
			t.Errorf("release merge %s: near %q, handles %v; want near %q", h, nse.Near, nse.Handles, want)
		}
	}
	if err := sp.ReleaseToken("merge", tok.ID+":x", ReleaseOptions{}); !errors.Is(err, ErrBadTuple) {
		t.Errorf("release with a bad handle: %v", err)
	}
	if err := sp.ReleaseToken("merge", tok.Handle(), ReleaseOptions{}); err != nil {
		t.Fatalf("release by handle: %v", err)
	}
}

// TestSlotsDoesNotReap checks that Slots only looks: a slot whose lease
// ran out stays held (and no token.reclaimed is journaled) until
// TokenSlots, which reaps, is called.
func TestSlotsDoesNotReap(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := newSpace(t, SpaceOptions{Now: clock})
	sp.InitToken("quota", 1)
	tok, err := sp.TryAcquire("quota", AcquireOptions{As: "bob", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tok.Detach()
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	slots, err := sp.Slots("quota")
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 || slots[0].Free || slots[0].HeldBy != "bob" {
		t.Fatalf("Slots = %+v, want one slot held by bob", slots)
	}
	if ev := tupleEvents(t, sp, "token.reclaimed"); len(ev) != 0 {
		t.Fatalf("Slots reclaimed: %+v", ev)
	}
	slots, err = sp.TokenSlots("quota")
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 || !slots[0].Free {
		t.Fatalf("TokenSlots = %+v, want the expired slot free", slots)
	}
}

// TestInitTokenWhileSlotsChangeHands: re-initialising a token to the count
// it has never fails while its slot is acquired and released by others. A
// slot acquired between InitToken's read of the free and the held slots
// was counted twice, so InitToken(name, 1) tried to drop one and failed
// with ErrTokenCount (the merge queue's "make the token on first use");
// one acquired and released again between them was not counted at all,
// and InitToken added a second slot. Run it many times, under load and
// with -race: the window is microseconds wide.
func TestInitTokenWhileSlotsChangeHands(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("m", 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var cycles atomic.Int64
	go func() {
		defer close(done)
		for cycles.Load() < 60 {
			tok, err := sp.TryAcquire("m", AcquireOptions{})
			if err != nil {
				continue
			}
			cycles.Add(1)
			if err := tok.Release(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if n, err := sp.InitToken("m", 1); err != nil || n != 0 {
			t.Fatalf("InitToken(m, 1) with one slot: got %d, %v; want 0, nil", n, err)
		}
	}
}

// TestLivenessProbesNeverLookAlive: a probe of an agent's liveness lock
// (another process asking "is it alive?" at the same instant) is not a
// live agent. Before probes shared the lock, `token acquire --as root`
// from a shell, racing another process's probe of root's lock, was held
// as root's liveness (HoldAgent) instead of a lease, and the next reaper
// reclaimed the slot under its holder (TestStressTokens in CI: "stale
// epoch 1 (now 2)").
func TestLivenessProbesNeverLookAlive(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("m", 1); err != nil {
		t.Fatal(err)
	}
	// Another process probing: its own Store, so its own open file
	// description of the lock file.
	other, err := docstore.Open(sp.store.Root())
	if err != nil {
		t.Fatal(err)
	}
	probe, err := NewSpace(other, SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				probe.lockHeld(schema.AgentLockKey("root"))
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		tok, err := sp.TryAcquire("m", AcquireOptions{As: "root", TTL: time.Minute})
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if got, want := tok.Hold, HoldLease; got != want {
			t.Fatalf("acquire %d: hold %s, want %s: a probe was taken for a live agent", i, got, want)
		}
		if err := tok.Release(); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
}

// A token that has no slots is a name that names nothing for every call:
// a release, a count of zero and a waiting acquire say ErrUnknownToken,
// at once, and create nothing (not even tuples/token/). A blocking read
// or take of a tuple type nobody wrote waits without creating the type.
func TestUnknownNamesCreateNothing(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	root := sp.Store().Root()
	absent := func(rel string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(root, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want it absent", rel, err)
		}
	}
	if _, err := sp.ReleaseAgentTokens("nosuch", ReleaseOptions{As: "alice"}); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("release --as of an unknown token: %v, want ErrUnknownToken", err)
	}
	if err := sp.ReleaseToken("nosuch", "01a0:1", ReleaseOptions{}); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("release by handle of an unknown token: %v, want ErrUnknownToken", err)
	}
	if _, err := sp.InitToken("typo", 0); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("init --count 0 of an unknown token: %v, want ErrUnknownToken", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := sp.Acquire(ctx, "typo", AcquireOptions{TTL: time.Minute}); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("waiting acquire of an unknown token: %v, want ErrUnknownToken", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("waiting acquire of an unknown token took %s, want at once", d)
	}
	absent("tuples/token")
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	var nt *NoTupleError
	if _, err := sp.In(short, "nosuch", nil); !errors.As(err, &nt) {
		t.Errorf("In of a type nobody wrote: %v, want a *NoTupleError after the wait", err)
	}
	absent("tuples/nosuch")

	// A token that exists: a release by someone holding nothing is not a
	// typo (ErrNotHolder), and count 0 retires its free slots.
	if _, err := sp.InitToken("merge", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.ReleaseAgentTokens("merge", ReleaseOptions{As: "alice"}); !errors.Is(err, ErrNotHolder) {
		t.Errorf("release of a token alice does not hold: %v, want ErrNotHolder", err)
	}
	if n, err := sp.InitToken("merge", 0); err != nil || n != -1 {
		t.Errorf("init --count 0 of merge = %d, %v; want -1", n, err)
	}
}

// TestInitTokenNear: a new token near an existing one is a likely typo
// (init creates or changes) and is refused with nothing written, unless
// New; numbered siblings are a series.
func TestInitTokenNear(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("gpus", 3); err != nil {
		t.Fatal(err)
	}
	_, err := sp.InitToken("gpsu", 3)
	var ne *NearTokenError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNearToken) {
		t.Fatalf("InitToken(gpsu) = %v, want a *NearTokenError", err)
	}
	if got, want := strings.Join(ne.Near, ","), "gpus"; got != want {
		t.Errorf("Near = %q, want %q", got, want)
	}
	if slots, err := sp.Slots("gpsu"); err != nil || len(slots) != 0 {
		t.Fatalf("gpsu slots after the refusal: %d, %v; want none", len(slots), err)
	}
	if n, err := sp.InitToken("gpus", 4); err != nil || n != 1 {
		t.Fatalf("InitToken(gpus, 4) = %d, %v; want 1, nil", n, err)
	}
	if n, err := sp.InitTokenWith("gpsu", 2, InitTokenOptions{New: true}); err != nil || n != 2 {
		t.Fatalf("InitTokenWith(gpsu, New) = %d, %v; want 2, nil", n, err)
	}
	for _, name := range []string{"node-1", "node-2"} {
		if _, err := sp.InitToken(name, 1); err != nil {
			t.Fatalf("InitToken(%s) = %v, want nil (a numbered series)", name, err)
		}
	}
}

// TestHeldLive: a slot counts as held while its process holder keeps its
// lock, and not once the lock is gone, even before anything reaps it.
func TestHeldLive(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("merge", 1); err != nil {
		t.Fatal(err)
	}
	held := func(when string, want bool) {
		t.Helper()
		got, err := sp.HeldLive("merge")
		if err != nil || got != want {
			t.Fatalf("%s: HeldLive = %v, %v; want %v", when, got, err, want)
		}
	}
	held("free", false)
	tok, err := sp.TryAcquire("merge", AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held("held by this process", true)
	// The slot file still says held, but nothing holds its lock: the
	// holder is gone (as after a crash; no reap has run).
	tok.lock.Unlock()
	held("lock dropped", false)
}
