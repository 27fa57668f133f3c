package recall

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// The fixed corpus of the ranking golden test: ids are short names so the
// golden file reads well.
var searchCorpus = []IndexEntry{
	{"lock-files", "Lock files live under .locks and are never deleted while held; acquirers re-check the inode after flock."},
	{"flock-nfs", "On NFS flock is emulated with POSIX locks; a partitioned client can lose its lock. Use fencing tokens."},
	{"claim-rename", "A claim is a rename from pending to claimed; exactly one racer wins the rename, losers get ENOENT."},
	{"durable-write", "Durable write: temp file, fsync, rename, fsync the directory. A crash leaves old or new file."},
	{"chunk-format", "Message chunks hold up to one hundred messages; each message is a section with its id."},
	{"tfidf", "The keyword index weighs words by TF-IDF and ranks entries by cosine similarity."},
	{"inotify", "inotify does not recurse and its queue overflows; the watcher rescans on overflow."},
	{"lease", "A lease expires unless renewed by a heartbeat; the fencing token rejects a stale holder's writes."},
}

func TestSearchRankingGolden(t *testing.T) {
	ix := BuildIndex(searchCorpus)
	var b strings.Builder
	for _, q := range []string{"lock", "fsync rename crash", "fencing token", "the and of", "watcher overflow rescan", "nothing matches zebra"} {
		fmt.Fprintf(&b, "search %q\n", q)
		for _, h := range ix.Search(q, 5) {
			fmt.Fprintf(&b, "  %-14s %.4f\n", h.ID, h.Score)
		}
	}
	for _, id := range []string{"lock-files", "lease", "durable-write"} {
		fmt.Fprintf(&b, "inspect %s (keywords %v)\n", id, ix.Keywords(id, 4))
		for _, h := range ix.Related(id, 3) {
			fmt.Fprintf(&b, "  %-14s %.4f\n", h.ID, h.Score)
		}
	}
	golden := filepath.Join("testdata", "search.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("ranking changed:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestTokenize(t *testing.T) {
	got := strings.Join(Tokenize("The parser's re-write: UUIDv7 ids, a B-tree and 42 Öl!"), " ")
	if want := "parser write uuidv7 ids tree 42 öl"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The search index over a store: memory search ranks by the same index.
func TestMemorySearchAndInspect(t *testing.T) {
	s := newStore(t)
	ids := map[string]string{}
	for _, e := range searchCorpus {
		m, err := AddMemory(s, "alice", e.ID, e.Text, false)
		if err != nil {
			t.Fatal(err)
		}
		ids[m.ID] = e.ID
	}
	hits, err := SearchMemory(s, "alice", "fencing token", 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, ids[h.ID])
	}
	if fmt.Sprint(got) != "[lease flock-nfs]" {
		t.Errorf("search: got %v, want [lease flock-nfs]", got)
	}
	var leaseID string
	for id, name := range ids {
		if name == "lease" {
			leaseID = id
		}
	}
	m, rel, err := InspectMemory(s, "alice", leaseID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ids[m.ID] != "lease" || len(rel) != 1 || ids[rel[0].ID] != "flock-nfs" {
		t.Errorf("inspect lease: got %v", rel)
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
