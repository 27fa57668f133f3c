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
