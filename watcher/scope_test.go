package watcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

func itemDoc(queue string, prio int) string {
	return fmt.Sprintf("---\nqueue: %s\ntitle: t\npriority: %d\n---\nbody\n", queue, prio)
}

// freshKind is what a fresh full scan says about one kind.
func freshKind(tb testing.TB, s *docstore.Store, kind string, where ...string) []Entry {
	tb.Helper()
	p, err := Open(s, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	return query(tb, p, kind, where...)
}

func query(tb testing.TB, p *Projection, kind string, where ...string) []Entry {
	tb.Helper()
	var conds []docstore.Cond
	for _, w := range where {
		c, err := docstore.ParseWhere(w)
		if err != nil {
			tb.Fatal(err)
		}
		conds = append(conds, c)
	}
	es, err := p.Query(Query{Kind: kind, Where: conds})
	if err != nil {
		tb.Fatal(err)
	}
	return es
}

// scopedQuery is `tavern ls KIND --where ...`: a one-shot projection of
// one kind with the cache.
func scopedQuery(tb testing.TB, s *docstore.Store, kind string, where ...string) []Entry {
	tb.Helper()
	p, err := Open(s, Options{Cache: true, Kinds: []string{kind}})
	if err != nil {
		tb.Fatal(err)
	}
	es := query(tb, p, kind, where...)
	if err := p.Close(); err != nil {
		tb.Fatal(err)
	}
	return es
}

// TestScopedCache: projections scoped to one kind read, stat and cache
// only that kind, and still always answer what a fresh full scan does,
// whatever happened to the other kinds' files and sections in between.
func TestScopedCache(t *testing.T) {
	s := newStore(t)
	for i := range 20 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), []string{"idle", "working"}[i%2]))
	}
	writeDoc(t, s, "queues/q/queue.md", "---\nname: q\n---\n")
	for i := range 30 {
		writeDoc(t, s, fmt.Sprintf("queues/q/pending/i%02d.md", i), itemDoc("q", i%3))
	}
	writeDoc(t, s, "agents/broken.md", "---\nname: [\n---\n")
	writeDoc(t, s, "agents/sub/x.md", agentDoc("x", "idle")) // no kind: never an agent
	check := func(t *testing.T) {
		t.Helper()
		for _, q := range []struct {
			kind  string
			where []string
		}{
			{"agents", []string{"state=working"}},
			{"agents", nil},
			{"items", []string{"priority=1"}},
			{"items", nil},
			{"queues", nil},
			{"channels", nil},
		} {
			assertSameEntries(t, scopedQuery(t, s, q.kind, q.where...), freshKind(t, s, q.kind, q.where...))
		}
	}
	check(t) // cold: builds the sections
	for _, k := range []string{"agent", "item", "queue", "channel"} {
		if _, err := loadSection(s.Root(), k); err != nil {
			t.Fatalf("section %s not written: %v", k, err)
		}
	}
	t.Run("warm", check)
	t.Run("agents only read agents", func(t *testing.T) {
		ageCache(t, s.Root())
		var reads int
		testOpenHook = func(p string) (*os.File, error) {
			reads++
			return os.OpenFile(p, openFlags, 0)
		}
		writeDoc(t, s, "queues/q/pending/i00.md", itemDoc("q", 2)) // not an agent
		writeDoc(t, s, "agents/a01.md", agentDoc("a01", "done"))
		got := scopedQuery(t, s, "agents", "state=working")
		testOpenHook = nil
		if reads != 1 {
			t.Errorf("agents query read %d documents, want 1 (the edited agent)", reads)
		}
		assertSameEntries(t, got, freshKind(t, s, "agents", "state=working"))
	})
	t.Run("edits renames deletes", func(t *testing.T) {
		writeDoc(t, s, "agents/a02.md", agentDoc("a02", "working"))                                   // in place
		os.Rename(filepath.Join(s.Root(), "agents/a03.md"), filepath.Join(s.Root(), "agents/z03.md")) // rename
		os.Remove(filepath.Join(s.Root(), "agents/a04.md"))
		writeDoc(t, s, "agents/new.md", agentDoc("new", "working"))
		os.MkdirAll(filepath.Join(s.Root(), "queues/q/done"), 0o755)
		os.Rename(filepath.Join(s.Root(), "queues/q/pending/i01.md"), filepath.Join(s.Root(), "queues/q/done/i01.md"))
		// Across kinds: an agent file becomes a channel.
		os.MkdirAll(filepath.Join(s.Root(), "channels"), 0o755)
		os.Rename(filepath.Join(s.Root(), "agents/a05.md"), filepath.Join(s.Root(), "channels/a05.md"))
		check(t)
	})
	t.Run("one corrupt section", func(t *testing.T) {
		path := filepath.Join(s.Root(), CacheFile, "agent")
		data, _ := os.ReadFile(path)
		data[len(data)/2] ^= 0xff
		os.WriteFile(path, data, 0o644)
		itemsBefore, _ := os.Stat(filepath.Join(s.Root(), CacheFile, "item"))
		writeDoc(t, s, "agents/a06.md", agentDoc("a06", "working"))
		assertSameEntries(t, scopedQuery(t, s, "agents"), freshKind(t, s, "agents"))
		if _, err := loadSection(s.Root(), "agent"); err != nil {
			t.Errorf("agent section not rebuilt: %v", err)
		}
		itemsAfter, _ := os.Stat(filepath.Join(s.Root(), CacheFile, "item"))
		if !itemsAfter.ModTime().Equal(itemsBefore.ModTime()) {
			t.Errorf("an agents query rewrote the item section")
		}
		check(t)
	})
	t.Run("old single-file cache", func(t *testing.T) {
		dir := filepath.Join(s.Root(), CacheFile)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(dir, []byte("tavern-index\x00v2\x00whatever"), 0o644)
		check(t)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf(".index not replaced by a directory: %v", err)
		}
	})
	t.Run("full projection after scoped ones", func(t *testing.T) {
		p := openProj(t, s, Options{Cache: true})
		got, err := p.Query(Query{})
		if err != nil {
			t.Fatal(err)
		}
		assertSameEntries(t, got, freshEntries(t, s))
	})
	t.Run("out of scope", func(t *testing.T) {
		p := openProj(t, s, Options{Kinds: []string{"agents"}})
		if _, err := p.Query(Query{Kind: "items"}); !errors.Is(err, ErrOutOfScope) {
			t.Errorf("items on an agents projection: got %v, want ErrOutOfScope", err)
		}
		if _, err := p.Query(Query{}); !errors.Is(err, ErrOutOfScope) {
			t.Errorf("all kinds on an agents projection: got %v, want ErrOutOfScope", err)
		}
	})
	t.Run("touched file saved", func(t *testing.T) {
		// A stat change without a content change is re-read, and its
		// new state saved: else it would be re-read on every run.
		ageCache(t, s.Root())
		past := time.Now().Add(-time.Hour).Truncate(time.Second)
		os.Chtimes(filepath.Join(s.Root(), "agents/a07.md"), past, past)
		scopedQuery(t, s, "agents")
		cd, err := loadSection(s.Root(), "agent")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cd.Records {
			if r.Entry.Path == "agents/a07.md" && r.State.MTime != past.UnixNano() {
				t.Errorf("saved mtime %v, want %v", time.Unix(0, r.State.MTime), past)
			}
		}
	})
}
