package messages_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// One reader (the same agent name on two machines) reads channel dev on
// one machine and ops on the other between two rounds: after the sync
// both bookmarks are at the newest message of both channels on both
// machines. Before, the bookmark merged field by field and `channels`
// (one field changed on both sides) kept one machine's map: the other
// machine's reads came back as unread, delivered a second time.
func TestBookmarkMergeKeepsBothMachinesReads(t *testing.T) {
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644)
	a.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.SetYAML("sync", "{remote: '"+url+"'}") })
	sync := func(s *docstore.Store) {
		t.Helper()
		sy, err := agents.OpenSyncer(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sy.Close()
		rep, err := sy.Sync(context.Background())
		if err != nil || rep.Offline != "" {
			t.Fatalf("sync: %v %+v", err, rep)
		}
	}
	for _, ch := range []string{"dev", "ops"} {
		if _, err := messages.SendMessage(a, ch, "x", "hello "+ch); err != nil {
			t.Fatal(err)
		}
	}
	// Both machines have read something before (the bookmark exists on
	// both sides with a common base).
	if _, err := messages.Recv(a, "rd", "dev", messages.RecvOptions{}); err != nil {
		t.Fatal(err)
	}
	sync(a)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	b, err := gitsync.Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.Root(), queues.MachineFile), []byte("beta\n"), 0o644)
	for _, ch := range []string{"dev", "ops"} {
		if _, err := messages.SendMessage(a, ch, "x", "second "+ch); err != nil {
			t.Fatal(err)
		}
	}
	sync(a)
	sync(b)
	if m, err := messages.Recv(a, "rd", "dev", messages.RecvOptions{}); err != nil || len(m) != 1 {
		t.Fatalf("a reads dev: %v %v", m, err)
	}
	if m, err := messages.Recv(b, "rd", "ops", messages.RecvOptions{}); err != nil || len(m) != 2 {
		t.Fatalf("b reads ops: %v %v", m, err)
	}
	sync(a)
	sync(b)
	sync(a)
	for name, s := range map[string]*docstore.Store{"a": a, "b": b} {
		for _, ch := range []string{"dev", "ops"} {
			m, err := messages.Recv(s, "rd", ch, messages.RecvOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != 0 {
				t.Errorf("machine %s: %d messages of %s delivered again after the sync: %v", name, len(m), ch, m)
			}
		}
	}
}
