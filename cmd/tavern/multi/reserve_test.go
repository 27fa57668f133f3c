package multi

import (
	"encoding/json"
	"testing"
	"time"
)

// An `unreserve --as x` on a machine that x's reservation file has not
// reached yet frees x's engine record; the file, arriving later, is a
// reservation the engine no longer has. Every clone drops it (journaled
// as reservation.reclaimed) instead of keeping it beside the overlapping
// reservation the engine then granted to y.
func TestMultiUnreserveBeforeSync(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"etcd", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, mode, 2, 0, time.Minute)
			a, b := c.machines[0], c.machines[1]
			c.ok(a, "agent", "new", "xia")
			c.ok(a, "agent", "new", "yan")
			c.ok(a, "sync")
			c.ok(b, "sync")
			c.ok(a, "reserve", "src/**", "--as", "xia", "--ttl", "1h")
			c.ok(b, "unreserve", "--as", "xia")
			c.ok(b, "reserve", "src/a/**", "--as", "yan", "--ttl", "1h")
			c.ok(a, "sync")
			c.ok(b, "sync")
			c.ok(a, "sync")
			for _, m := range []*machine{a, b} {
				var rs []struct {
					Agent string `json:"agent"`
					Glob  string `json:"glob"`
				}
				out := c.ok(m, "reservations", "--json")
				if err := json.Unmarshal([]byte(out), &rs); err != nil {
					t.Fatalf("%s: %v: %s", m.name, err, out)
				}
				if len(rs) != 1 || rs[0].Agent != "yan" {
					t.Fatalf("%s: reservations %+v, want yan's only (xia's was unreserved)", m.name, rs)
				}
			}
		})
	}
}

// A reservation renewed on another machine (reserved again there with a
// longer --ttl) ends when the renewal says, on every machine, before the
// renewed file has synced: `reservations` there showed the first expiry
// (etcd: the record's, as etcd's List did not say the lease's end; and a
// keep-alive renewed the lease for its first TTL only, so the engine
// itself would have let it go then). One reservation's first file has
// synced to the other machine (a local copy with the old expires), the
// other's has not (known from the engine only).
func TestMultiReservationRenewedElsewhere(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"etcd", "git"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, mode, 2, 0, time.Minute)
			a, b := c.machines[0], c.machines[1]
			c.ok(a, "agent", "new", "xia")
			c.ok(a, "reserve", "src/**", "--as", "xia", "--ttl", "1h")
			c.ok(a, "sync")
			c.ok(b, "sync")
			c.ok(a, "reserve", "doc/**", "--as", "xia", "--ttl", "1h")
			c.ok(a, "reserve", "src/**", "--as", "xia", "--ttl", "3h")
			c.ok(a, "reserve", "doc/**", "--as", "xia", "--ttl", "3h")
			type res struct {
				Glob    string    `json:"glob"`
				Expires time.Time `json:"expires"`
				Machine string    `json:"machine"`
			}
			list := func(m *machine) map[string]res {
				var rs []res
				out := c.ok(m, "reservations", "--json")
				if err := json.Unmarshal([]byte(out), &rs); err != nil {
					t.Fatalf("%s: %v: %s", m.name, err, out)
				}
				byGlob := map[string]res{}
				for _, r := range rs {
					byGlob[r.Glob] = r
				}
				return byGlob
			}
			want := list(a)
			got := list(b)
			for _, glob := range []string{"src/**", "doc/**"} {
				w, g := want[glob], got[glob]
				if w.Expires.IsZero() {
					t.Fatalf("%s: %s not listed with an expiry on %s: %+v", mode, glob, a.name, want)
				}
				// etcd knows a lease's end to the second.
				if d := w.Expires.Sub(g.Expires); d > 2*time.Second || d < -2*time.Second {
					t.Errorf("%s: %s on %s expires %v, on %s (where it was renewed) %v", mode, glob, b.name, g.Expires, a.name, w.Expires)
				}
			}
		})
	}
}
