package agents

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher/journal"
)

// newManager returns a Manager on a fresh store in a temp dir.
func newManager(tb testing.TB) *Manager {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := NewManager(s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// newRelaxedManager is newManager on a store with durability: relaxed
// (atomic renames, no fsync): for tests of concurrency at scale, where
// fsync only costs time and proves nothing.
func newRelaxedManager(tb testing.TB) *Manager {
	tb.Helper()
	m := newManager(tb)
	if _, err := m.Store.Update(docstore.ConfigFile, func(d *docstore.Doc) error { return d.Set("durability", "relaxed") }); err != nil {
		tb.Fatal(err)
	}
	s, err := docstore.Open(m.Store.Root())
	if err != nil {
		tb.Fatal(err)
	}
	m.Store = s
	return m
}

func mustAgent(tb testing.TB, m *Manager, spec AgentSpec) *Agent {
	tb.Helper()
	a, err := m.CreateAgent(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// events reads the journal and returns the events of the given type.
func events(tb testing.TB, m *Manager, typ string) []journal.Event {
	tb.Helper()
	var out []journal.Event
	_, err := journal.Read(m.Store.Root(), journal.Filter{Types: []string{typ}}, func(e journal.Event, err error) bool {
		if err != nil {
			tb.Errorf("journal: %v", err)
			return true
		}
		out = append(out, e)
		return true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("err = %v, want %v", err, target)
	}
}
