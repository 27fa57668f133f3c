package journal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tavernhq/tavern/watcher/journal"
)

// Other machines' journals arrive through the sync as
// events/<machine>/<day>.jsonl: ReadOthers reads them, machine by
// machine in name order, with the filter; this machine's own journal and
// dot directories are not among them.
func TestReadOthers(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, journal.Dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	line := func(id, typ, path string) string {
		return `{"id":"` + id + `","time":"2026-11-24T10:00:00Z","writer":"w","seq":1,"type":"` + typ + `","path":"` + path + `"}` + "\n"
	}
	write("2026-11-24.jsonl", line("01a20000-0000-7000-8000-000000000001", "commitment.added", "own.md"))
	write("beta/2026-11-24.jsonl", line("01a20000-0000-7000-8000-000000000002", "commitment.added", "b.md")+line("01a20000-0000-7000-8000-000000000003", "doc.updated", "x.md"))
	write("alpha/2026-11-23.jsonl", line("01a20000-0000-7000-8000-000000000004", "commitment.added", "a-old.md"))
	write("alpha/2026-11-24.jsonl", line("01a20000-0000-7000-8000-000000000005", "commitment.added", "a.md"))
	write(".tmp/2026-11-24.jsonl", line("01a20000-0000-7000-8000-000000000006", "commitment.added", "hidden.md"))
	var got []string
	err := journal.ReadOthers(root, journal.Filter{Types: []string{"commitment.added"}}, func(m string, e journal.Event, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m+":"+e.Path)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alpha:a-old.md", "alpha:a.md", "beta:b.md"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	n := 0
	journal.ReadOthers(root, journal.Filter{}, func(string, journal.Event, error) bool { n++; return false })
	if n != 1 {
		t.Fatalf("fn returning false: called %d times, want 1", n)
	}
}
