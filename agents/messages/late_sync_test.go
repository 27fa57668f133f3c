package messages_test

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

// Two machines send to one channel between syncs, in random amounts,
// with chunks of two messages (so chunks roll over and overlap in
// time); a reader on each machine reads at random moments, with a random
// limit. When the machines have synced to rest, each reader has been
// given every message of both machines exactly once.
func TestEveryMessageOnceAcrossMachines(t *testing.T) {
	t.Parallel()
	c := newClones(t, func(d *docstore.Doc) error { return d.Set("chunk_size", 2) })
	a, sync := c.a, func(s *docstore.Store) { c.sync(s) }
	if _, err := messages.CreateChannel(a, "dev", ""); err != nil {
		t.Fatal(err)
	}
	sync(a)
	b := c.clone("beta")

	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	machines := []*docstore.Store{a, b}
	readers := []string{"ra", "rb"} // ra reads on a, rb on b
	got := map[string][]string{}
	var sent []string
	read := func(i int) {
		t.Helper()
		m, err := messages.Recv(machines[i], readers[i], "dev", messages.RecvOptions{Limit: rng.Intn(4)})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range m {
			got[readers[i]] = append(got[readers[i]], x.Text)
		}
	}
	for round := 0; round < 8; round++ {
		for i, s := range machines {
			for k := rng.Intn(4); k > 0; k-- {
				text := fmt.Sprintf("m%d-r%d-%d", i, round, k)
				if _, err := messages.SendMessage(s, "dev", "x", text); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, text)
				if rng.Intn(3) == 0 {
					read(rng.Intn(2))
				}
			}
			read(i)
		}
		for _, i := range rng.Perm(2) {
			sync(machines[i])
		}
	}
	for k := 0; k < 3; k++ {
		sync(a)
		sync(b)
	}
	for i := range machines {
		for n := 0; n < 100; n++ {
			before := len(got[readers[i]])
			read(i)
			if len(got[readers[i]]) == before && n > 3 {
				break
			}
		}
	}
	sort.Strings(sent)
	for _, r := range readers {
		g := append([]string(nil), got[r]...)
		sort.Strings(g)
		if fmt.Sprint(g) != fmt.Sprint(sent) {
			t.Errorf("reader %s (seed %d): got %d messages, want %d\ngot  %v\nwant %v", r, seed, len(g), len(sent), g, sent)
		}
	}
}
