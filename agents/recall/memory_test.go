package recall

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestMemoryPrivacyAndArchive(t *testing.T) {
	s := newStore(t)
	a, err := AddMemory(s, "alice", "parser", "the parser rewrite uses goldmark", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddMemory(s, "alice", "", "core identity: I review code", true); err != nil {
		t.Fatal(err)
	}
	b, err := AddMemory(s, "bob", "parser", "bob's parser secret", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddMemory(s, "alice", "Not Kebab", "x", false); err == nil {
		t.Error("AddMemory with a non-kebab topic: got nil error")
	}

	list, err := ListMemory(s, "alice", MemoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || !list[0].Core || list[1].Topic != "parser" {
		t.Fatalf("alice's memories: got %+v, want core first then the parser note", list)
	}
	for _, m := range list {
		if m.Agent != "alice" {
			t.Errorf("alice sees %s's memory %s", m.Agent, m.ID)
		}
	}
	// Bob's entry is not found when acting as alice: not by id, not by search.
	if _, err := GetMemory(s, "alice", b.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alice gets bob's memory: got %v, want ErrNotExist", err)
	}
	if _, err := ArchiveMemory(s, "alice", b.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alice archives bob's memory: got %v, want ErrNotExist", err)
	}
	if hits, _ := SearchMemory(s, "alice", "secret", 10); len(hits) != 0 {
		t.Errorf("alice's search finds %v", hits)
	}
	if hits, _ := SearchMemory(s, "bob", "secret", 10); len(hits) != 1 {
		t.Errorf("bob's search: got %d hits, want 1", len(hits))
	}

	// Archive hides but keeps; a prefix of the id is enough.
	if _, err := ArchiveMemory(s, "alice", a.ID[:30]); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListMemory(s, "alice", MemoryFilter{}); len(list) != 1 {
		t.Errorf("after archive: got %d entries, want 1", len(list))
	}
	if hits, _ := SearchMemory(s, "alice", "goldmark parser", 10); len(hits) != 0 {
		t.Errorf("archived entry found by search: %v", hits)
	}
	all, _ := ListMemory(s, "alice", MemoryFilter{Archived: true})
	if len(all) != 2 {
		t.Errorf("with archived: got %d, want 2", len(all))
	}
	if _, err := os.Stat(filepath.Join(s.Root(), a.Path)); err != nil {
		t.Errorf("archived file gone: %v", err)
	}
	if m, err := GetMemory(s, "alice", a.ID); err != nil || !m.Archived || m.Text != "the parser rewrite uses goldmark" {
		t.Errorf("archived entry: %+v %v", m, err)
	}
}

func TestKnowledgeArchiveAndProvenance(t *testing.T) {
	s := newStore(t)
	k, err := AddKnowledge(s, "architecture", "alice", "layering", "cmd imports agents imports queues")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddKnowledge(s, "decision", "bob", "", "we use UUIDv7 ids for time order"); err != nil {
		t.Fatal(err)
	}
	got, err := ListKnowledge(s, KnowledgeFilter{Domains: []string{"architecture"}})
	if err != nil || len(got) != 1 || got[0].Contributor != "alice" || got[0].Title != "layering" {
		t.Fatalf("ListKnowledge(architecture): %+v %v", got, err)
	}
	if _, err := ArchiveKnowledge(s, k.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := ListKnowledge(s, KnowledgeFilter{}); len(got) != 1 {
		t.Errorf("after archive: got %d, want 1", len(got))
	}
	if hits, _ := SearchKnowledge(s, "layering agents", nil, 0); len(hits) != 0 {
		t.Errorf("archived entry found: %v", hits)
	}
	if got, _ := ListKnowledge(s, KnowledgeFilter{Archived: true}); len(got) != 2 {
		t.Errorf("with archived: got %d, want 2", len(got))
	}
}

// The search index over a store: memory search and knowledge inspect rank
// by the same index as the golden test.
func TestMemorySearchAndInspect(t *testing.T) {
	s := newStore(t)
	ids := map[string]string{}
	for _, e := range rankCorpus {
		m, err := AddMemory(s, "alice", e.ID, e.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		ids[m.ID] = e.ID
	}
	hits, err := SearchMemory(s, "alice", "postgres connection", 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, ids[h.ID])
	}
	if len(got) == 0 || got[0] != "pg-pool" {
		t.Errorf("search: got %v, want pg-pool first", got)
	}
	var redisID string
	for id, name := range ids {
		if name == "cache-redis" {
			redisID = id
		}
	}
	m, rel, err := InspectMemory(s, "alice", redisID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ids[m.ID] != "cache-redis" || len(rel) != 1 || ids[rel[0].ID] != "cache-invalidation" {
		t.Errorf("inspect cache-redis: got %v", rel)
	}
}

func TestInspectKnowledgeNotByDomain(t *testing.T) {
	s := newStore(t)
	names := map[string]string{}
	var pgPool string
	for _, e := range rankCorpus {
		k, err := AddKnowledge(s, e.Tags, "alice", e.Title, e.Text)
		if err != nil {
			t.Fatal(err)
		}
		names[k.ID] = e.ID
		if e.ID == "pg-pool" {
			pgPool = k.ID
		}
	}
	_, rel, err := InspectKnowledge(s, pgPool, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range rel {
		got = append(got, names[h.ID])
	}
	if len(got) < 2 || !(got[0] == "pg-choice" || got[0] == "pg-upgrade") || !(got[1] == "pg-choice" || got[1] == "pg-upgrade") {
		t.Errorf("inspect pg-pool: got %v, want the other PostgreSQL entries (other domains) first", got)
	}
	for _, n := range got {
		if n == "chunk-format" || n == "inotify" {
			t.Errorf("inspect pg-pool: %s shares only the architecture domain; got %v", n, got)
		}
	}
}

func newStore(tb testing.TB) *docstore.Store {
	tb.Helper()
	s, _, err := docstore.Init(filepath.Join(tb.TempDir(), ".tavern"), "test")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestAddKnowledgeNearDomain(t *testing.T) {
	s := newStore(t)
	if _, err := AddKnowledge(s, "decision", "alice", "", "we use postgres"); err != nil {
		t.Fatal(err)
	}
	_, err := AddKnowledge(s, "decisoin", "alice", "", "we use sqlite")
	var de *DomainError
	if !errors.As(err, &de) || !errors.Is(err, ErrNearDomain) || !slices.Equal(de.Near, []string{"decision"}) {
		t.Fatalf("near domain: got %v, want a *DomainError near decision", err)
	}
	if exists, _, _ := KnownDomain(s, "decisoin"); exists {
		t.Errorf("the refused entry made its domain")
	}
	if _, err := AddKnowledgeWith(s, "decisoin", "alice", "", "on purpose", KnowledgeOptions{NewDomain: true}); err != nil {
		t.Errorf("--new-domain: %v", err)
	}
	if _, err := AddKnowledge(s, "architecture", "alice", "", "far from any"); err != nil {
		t.Errorf("a domain near none: %v", err)
	}
}
