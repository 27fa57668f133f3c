package messages_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/queues/gitsync/gittest"
)

// clones is a store on machine "alpha" that syncs through a fresh git
// remote, and the clones made of it, as a team's machines.
type clones struct {
	t    *testing.T
	root string
	url  string
	a    *docstore.Store
}

// newClones makes store a; config, if not nil, edits its tavern.md
// further (before the first sync).
func newClones(t *testing.T, config func(*docstore.Doc) error) *clones {
	t.Helper()
	srv := gittest.Start(t)
	c := &clones{t: t, root: t.TempDir(), url: srv.Repo(t, "p")}
	a, _, err := docstore.Init(filepath.Join(c.root, "a", ".tavern"), "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Root(), queues.MachineFile), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Update(docstore.ConfigFile, func(d *docstore.Doc) error {
		if err := d.SetYAML("sync", "{remote: '"+c.url+"'}"); err != nil || config == nil {
			return err
		}
		return config(d)
	}); err != nil {
		t.Fatal(err)
	}
	c.a = a
	return c
}

// clone makes the clone of machine name (after a has synced).
func (c *clones) clone(name string) *docstore.Store {
	c.t.Helper()
	if err := os.MkdirAll(filepath.Join(c.root, name), 0o755); err != nil {
		c.t.Fatal(err)
	}
	s, err := gitsync.Clone(filepath.Join(c.root, name, ".tavern"), c.url, "")
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), queues.MachineFile), []byte(name+"\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// sync runs one round of s's sync, as `tavern sync` does (agents'
// mergers and hooks), failing the test on an error, an offline round or
// a problem.
func (c *clones) sync(s *docstore.Store) *gitsync.Report {
	c.t.Helper()
	sy, err := agents.OpenSyncer(s, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer sy.Close()
	rep, err := sy.Sync(context.Background())
	if err != nil || rep.Offline != "" || len(rep.Problems) > 0 {
		c.t.Fatalf("sync: %v %+v", err, rep)
	}
	return rep
}
