package messages_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// Two machines send to one channel between syncs, in random amounts,
// with chunks of two messages (so chunks roll over and overlap in
// time); a reader on each machine reads at random moments, with a random
// limit. When the machines have synced to rest, each reader has been
// given every message of both machines exactly once.
func TestEveryMessageOnceAcrossMachines(t *testing.T) {
	t.Parallel()
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644)
	if _, err := a.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		if err := d.SetYAML("sync", "{remote: '"+url+"'}"); err != nil {
			return err
		}
		return d.Set("chunk_size", 2)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := messages.CreateChannel(a, "dev", ""); err != nil {
		t.Fatal(err)
	}
	sync := func(s *docstore.Store) {
		t.Helper()
		sy, err := agents.OpenSyncer(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sy.Close()
		rep, err := sy.Sync(context.Background())
		if err != nil || rep.Offline != "" || len(rep.Problems) > 0 {
			t.Fatalf("sync: %v %+v", err, rep)
		}
	}
	sync(a)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	b, err := gitsync.Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.Root(), queues.MachineFile), []byte("beta\n"), 0o644)

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
