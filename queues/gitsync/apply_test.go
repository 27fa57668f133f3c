package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
	"github.com/tavernhq/tavern/schema"
)

func mustSync(t *testing.T, s *docstore.Store) *Report {
	t.Helper()
	sy, err := Open(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil || rep.Offline != "" {
		t.Fatalf("sync: %v %+v", err, rep)
	}
	return rep
}

func set(t *testing.T, s *docstore.Store, k, v string) {
	t.Helper()
	if _, err := s.Update("agents/ann.md", func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: k, Value: v}, {Key: "updated", Value: time.Now().UTC()}})
	}); err != nil {
		t.Fatal(err)
	}
}

// A document the engine changes locally while a round is between its
// merge and its write is not overwritten: the round defers it, and the
// next round merges the local change with what the first one brought.
func TestApplyDefersConcurrentLocalChange(t *testing.T) {
	srv := gittest.Start(t)
	url := srv.Repo(t, "p")
	root := t.TempDir()
	a, _, err := docstore.Init(filepath.Join(root, "a", ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644)
	a.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.SetYAML("sync", "{remote: '"+url+"'}") })
	d, _ := docstore.New(schema.Agent, []docstore.Field{{Key: schema.VersionField, Value: 1}, {Key: "name", Value: "ann"}, {Key: "updated", Value: time.Now().UTC()}}, nil)
	if err := a.Create("agents/ann.md", d); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	b, err := Clone(filepath.Join(root, "b", ".tavern"), url, "")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b.Root(), queues.MachineFile), []byte("beta\n"), 0o644)
	set(t, b, "model", "x")
	set(t, a, "queue", "q")
	mustSync(t, a)
	testHookBeforeApply = func() { set(t, b, "role", "late") }
	rep := mustSync(t, b)
	testHookBeforeApply = nil
	if len(rep.Deferred) != 1 || rep.Deferred[0] != "agents/ann.md" {
		t.Fatalf("deferred %v", rep.Deferred)
	}
	got, _ := b.Get("agents/ann.md")
	if got.String("role") != "late" || got.String("model") != "x" || got.String("queue") != "" {
		t.Fatalf("b's copy was overwritten:\n%s", got.Bytes())
	}
	mustSync(t, b)
	mustSync(t, a)
	for _, s := range []*docstore.Store{a, b} {
		got, _ := s.Get("agents/ann.md")
		if got.String("role") != "late" || got.String("model") != "x" || got.String("queue") != "q" {
			t.Fatalf("%s after the deferred merge:\n%s", s.Root(), got.Bytes())
		}
	}
}
