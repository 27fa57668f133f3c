package agents

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

// A file and a directory swapped for symlinks out of the store after the
// backup listed them (an agent or a person at work while it runs) are
// skipped and reported: what the links point at is never read. The copy
// used os.ReadFile on the path, which followed the link and put the
// outside file into the backup.
func TestBackupNeverFollowsSwappedSymlink(t *testing.T) {
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "test")
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "bob.md"), []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"agents/alice.md", "agents/bob.md", "knowledge/infra/bob.md"} {
		p := filepath.Join(s.Root(), filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nname: x\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testHookAfterPlan = func() {
		for _, swap := range []struct{ rel, target string }{
			{"agents/bob.md", filepath.Join(outside, "bob.md")},
			{"knowledge/infra", outside},
		} {
			p := filepath.Join(s.Root(), filepath.FromSlash(swap.rel))
			if err := os.RemoveAll(p); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(swap.target, p); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookAfterPlan = nil }()
	res, err := Backup(s, filepath.Join(t.TempDir(), "backups"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var skipped []string
	for _, f := range res.Skipped {
		skipped = append(skipped, f.Path)
		if f.Path == "agents/bob.md" && f.Reason != "symlink to "+filepath.Join(outside, "bob.md")+" (not followed)" {
			t.Errorf("agents/bob.md skipped because %q", f.Reason)
		}
	}
	if want := []string{"agents/bob.md", "knowledge/infra"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	err = filepath.WalkDir(res.Dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if !e.Type().IsRegular() {
			t.Errorf("the backup holds %s, not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), "TOPSECRET") {
			t.Errorf("the backup holds %s with the outside file's content", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "agents", "alice.md")); err != nil {
		t.Error(err)
	}
}
