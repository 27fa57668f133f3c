package multi

import (
	"testing"
	"time"
)

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
			c := newCluster(t, mode, 2, 0, time.Minute)
			a, b := c.machines[0], c.machines[1]
			c.ok(a, "agent", "new", "ann")
			c.ok(a, "agent", "new", "bea")
			c.ok(a, "token", "init", "gpu", "--count", "1")
			c.ok(a, "sync")
			c.ok(b, "sync")
			c.ok(a, "token", "acquire", "gpu", "--as", "ann", "--ttl", "5m")
			c.ok(a, "sync")
			c.ok(b, "sync")
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
