package multi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// heldToken makes two clones (engine mode) with agents ann and bea and a
// token gpu of one slot, which ann holds on the first machine, synced.
func heldToken(t *testing.T, mode string) (c *cluster, a, b *machine) {
	t.Helper()
	c = newCluster(t, mode, 2, 0, time.Minute)
	a, b = c.machines[0], c.machines[1]
	c.ok(a, "agent", "new", "ann")
	c.ok(a, "agent", "new", "bea")
	c.ok(a, "token", "init", "gpu", "--count", "1")
	c.ok(a, "sync")
	c.ok(b, "sync")
	c.ok(a, "token", "acquire", "gpu", "--as", "ann", "--ttl", "5m")
	c.ok(a, "sync")
	c.ok(b, "sync")
	return c, a, b
}

// A token's only slot, held on one machine, is held for every machine,
// whichever copy of the slot they have. The held slot's file sits in
// .taken/, which is not synced, so the other machine's copy of the free
// slot goes away with the next sync: there `token init` with the same
// count (as a script that makes sure the token exists runs it) makes a
// second slot 0, which used to be a second engine key
// (tokens/NAME/<slot id>) and so a second holder of a count-1 token.
func TestMultiTokenInitOnTwoMachines(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"etcd", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c, a, b := heldToken(t, mode)
			c.ok(b, "token", "init", "gpu", "--count", "1")
			if r := b.run(t, "", nil, "token", "acquire", "gpu", "--as", "bea", "--ttl", "5m"); r.code != 3 {
				t.Fatalf("a second holder of a count-1 token, on the other machine (want exit 3, all held): %s", r)
			}
			// Both copies of slot 0 meet in every clone: still one holder.
			c.ok(b, "sync")
			c.ok(a, "sync")
			if r := a.run(t, "", nil, "token", "acquire", "gpu", "--as", "bea", "--ttl", "5m"); r.code != 3 {
				t.Fatalf("a second holder of a count-1 token, with both copies of its slot (want exit 3): %s", r)
			}
		})
	}
}

// A slot held on another machine is a held slot here too, though its
// file (in that machine's .taken/) never arrives: `token ls` lists it
// held, an acquire is refused as busy (not "unknown token", so --wait
// waits), and once two copies of slot 0 meet, slot 0 is listed once.
func TestMultiTokenHeldElsewhere(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"etcd", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c, a, b := heldToken(t, mode)
			wantOneHeld := func(m *machine) {
				t.Helper()
				r := m.run(t, "", nil, "token", "ls", "gpu", "--json")
				if r.code != 0 {
					t.Fatalf("%s: token ls of a token held on another machine: %s", m.name, r)
				}
				var slots []struct {
					Slot    int64   `json:"slot"`
					Free    bool    `json:"free"`
					HeldBy  string  `json:"held_by"`
					Machine string  `json:"machine"`
					Path    *string `json:"path"`
					Epoch   *int64  `json:"epoch"`
				}
				if err := json.Unmarshal([]byte(r.out), &slots); err != nil {
					t.Fatalf("%s: %v: %s", m.name, err, r)
				}
				if len(slots) != 1 || slots[0].Slot != 0 || slots[0].Free || slots[0].HeldBy != "ann" {
					t.Fatalf("%s: got %+v, want slot 0 held by ann, once", m.name, slots)
				}
				// Held on a: data saying so on b (its machine; no path or
				// epoch, which are a's), its own slot file on a.
				nameA, _ := os.ReadFile(filepath.Join(a.store(), ".machine"))
				s := slots[0]
				if m == a && (s.Machine != "" || s.Path == nil || s.Epoch == nil) {
					t.Fatalf("%s: got %+v, want the slot file here (path, epoch, no machine): %s", m.name, s, r)
				}
				if m == b && (s.Machine != strings.TrimSpace(string(nameA)) || s.Path != nil || s.Epoch != nil) {
					t.Fatalf("%s: got %+v, want machine %s and no path or epoch: %s", m.name, s, nameA, r)
				}
			}
			wantOneHeld(b)
			r := b.run(t, "", nil, "token", "acquire", "gpu", "--as", "bea", "--ttl", "5m", "--json")
			var e struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal([]byte(r.err), &e)
			if r.code != 3 || strings.Contains(e.Error, "unknown") || strings.Contains(e.Error, "(0 held)") {
				t.Fatalf("acquire of a slot held on another machine: want exit 3, busy, 1 held: %s", r)
			}
			c.ok(b, "token", "init", "gpu", "--count", "1")
			c.ok(b, "sync")
			c.ok(a, "sync")
			c.ok(b, "sync")
			wantOneHeld(a)
			wantOneHeld(b)
			// A wait on the other machine waits (it returned at once, as
			// for an unknown token) and gets the slot once its release
			// reaches it.
			wait := b.command(nil, tavernBin(t), "token", "acquire", "gpu", "--as", "bea", "--ttl", "5m", "--wait", "60s")
			var wout strings.Builder
			wait.Stdout, wait.Stderr = &wout, &wout
			if err := wait.Start(); err != nil {
				t.Fatal(err)
			}
			// Release once the waiter waits (its token.waiting event).
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(c.ok(b, "log", "--type", "token.waiting", "--json"), "token.waiting"); {
				if time.Now().After(deadline) {
					wait.Process.Kill()
					wait.Wait()
					t.Fatalf("the waiter on the other machine never waited: %s", wout.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			waited := make(chan error, 1)
			go func() { waited <- wait.Wait() }()
			c.ok(a, "token", "release", "gpu", "--as", "ann")
			c.ok(a, "sync")
			// Now the slot is free on the engine and has no file on b: the
			// waiter looks again every second (LivenessPoll) and must go
			// on waiting through a few looks, not call the token unknown.
			select {
			case err := <-waited:
				t.Fatalf("acquire --wait on the other machine ended before the release reached it: %v: %s", err, wout.String())
			case <-time.After(2500 * time.Millisecond):
			}
			c.ok(b, "sync")
			if err := <-waited; err != nil {
				t.Fatalf("acquire --wait on the other machine: %v: %s", err, wout.String())
			}
			// Two machines that make one token before syncing make two
			// copies of its slot 0: one slot, listed once.
			c.ok(a, "token", "init", "tpu", "--count", "1")
			c.ok(b, "token", "init", "tpu", "--count", "1")
			c.ok(a, "sync")
			c.ok(b, "sync")
			c.ok(a, "sync")
			for _, m := range []*machine{a, b} {
				var slots []struct{ Slot int64 }
				if err := json.Unmarshal([]byte(c.ok(m, "token", "ls", "tpu", "--json")), &slots); err != nil || len(slots) != 1 {
					t.Fatalf("%s: slots of tpu made on both machines: %+v (%v), want slot 0 once", m.name, slots, err)
				}
			}
		})
	}
}

// A slot released on another machine whose file has not synced here yet
// is named with that machine (README: "slot N was released on MACHINE"),
// by either engine. Under etcd it said "on another machine": the release
// deletes the claim key, and the machine went with it.
func TestMultiTokenReleasedOnMachine(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"etcd", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c, a, b := heldToken(t, mode)
			c.ok(a, "token", "release", "gpu", "--as", "ann")
			nameA, _ := os.ReadFile(filepath.Join(a.store(), ".machine"))
			want := "slot 0 was released on " + strings.TrimSpace(string(nameA)) + " and has not synced here yet"
			for _, args := range [][]string{{"token", "acquire", "gpu", "--as", "bea"}, {"token", "ls", "gpu"}} {
				r := b.run(t, "", nil, args...)
				if r.code != 3 || !strings.Contains(r.err, want) {
					t.Errorf("tavern %s on the other machine: want exit 3 and %q: %s", strings.Join(args, " "), want, r)
				}
			}
		})
	}
}
