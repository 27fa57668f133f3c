package docstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

func writeFile(tb testing.TB, s *Store, rel, data string) {
	tb.Helper()
	full := filepath.Join(s.Root(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// A rule sees every write path (create, update, move) with the document
// before and after, and a refusal writes nothing.
func TestRuleRefusesWrites(t *testing.T) {
	s := initStore(t)
	errNo := errors.New("no spawns above 3")
	var seen []string
	s.AddRule("test", func(w Write) error {
		seen = append(seen, w.Op+" "+w.Path)
		if (w.Op == "create") != (w.Prev == nil) {
			t.Errorf("%s %s: Prev = %v", w.Op, w.Path, w.Prev)
		}
		if n, _ := w.Doc.Int("spawns"); n > 3 && !w.Force {
			return errNo
		}
		return nil
	})
	if !s.HasRule("test") || s.HasRule("other") {
		t.Fatal("HasRule")
	}
	d, _ := NewDoc(schema.Agent, Template{Name: "a", Defaults: true, Fields: []Field{{Key: "spawns", Value: 5}}})
	err := s.Create("agents/a.md", d)
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || !errors.Is(err, errNo) || re.Rule != "test" || re.Path != "agents/a.md" {
		t.Fatalf("create: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "agents", "a.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused create wrote the file")
	}
	d, _ = NewDoc(schema.Agent, Template{Name: "a", Defaults: true})
	if err := s.Create("agents/a.md", d); err != nil {
		t.Fatal(err)
	}
	before := d.Bytes()
	_, err = s.Update("agents/a.md", func(d *Doc) error { return d.Set("spawns", 4) })
	if !errors.Is(err, errNo) {
		t.Fatalf("update: %v", err)
	}
	if got, _ := s.ReadFile("agents/a.md"); string(got) != string(before) {
		t.Fatal("a refused update wrote the file")
	}
	if _, err := s.UpdateWith("agents/a.md", UpdateOptions{Force: true}, func(d *Doc) error { return d.Set("spawns", 4) }); err != nil {
		t.Fatalf("forced update: %v", err)
	}
	l, _ := s.Lock("x")
	_, err = s.Move(l, "agents/a.md", "agents/b.md", func(d *Doc) error { return d.Set("spawns", 9) })
	l.Unlock()
	if !errors.Is(err, errNo) {
		t.Fatalf("move: %v", err)
	}
	want := []string{"create agents/a.md", "create agents/a.md", "update agents/a.md", "update agents/a.md", "move agents/b.md"}
	if !slices.Equal(seen, want) {
		t.Errorf("rule saw %q, want %q", seen, want)
	}
	// A rule of the same name is replaced, not added.
	s.AddRule("test", func(Write) error { return nil })
	if _, err := s.Update("agents/a.md", func(d *Doc) error { return d.Set("spawns", 7) }); err != nil {
		t.Fatal(err)
	}
}

// Walk is the one rule for which files are documents.
func TestWalk(t *testing.T) {
	s := initStore(t)
	for _, rel := range []string{"agents/a.md", "agents/sub/b.md", "agents/notes.txt", "agents/.a.md.swp",
		".tmp/x.md", ".trash/agents__a.md", "events/2026-01-01.jsonl", "events/x.md", "queues/q/.hidden/c.md", "tavern2.md"} {
		writeFile(t, s, rel, "---\nname: x\n---\n")
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(s.Root(), "agents", "passwd.md")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(s.Root(), "queues", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.md", filepath.Join(s.Root(), "agents", "inside.md")); err != nil {
		t.Fatal(err)
	}
	walk := func(dir string) []string {
		var got []string
		if err := s.Walk(dir, func(rel string) error { got = append(got, rel); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []string{"agents/a.md", "agents/inside.md", "agents/passwd.md", "agents/sub/b.md", "queues/evil", "tavern.md", "tavern2.md"}
	if got := walk(""); !slices.Equal(got, want) {
		t.Errorf("Walk: got %q, want %q", got, want)
	}
	if got := walk("agents/sub"); !slices.Equal(got, []string{"agents/sub/b.md"}) {
		t.Errorf("Walk(agents/sub): %q", got)
	}
	if got := walk("nothing"); got != nil {
		t.Errorf("Walk of a missing dir: %q", got)
	}
	if err := s.Walk("../x", func(string) error { return nil }); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("Walk(../x): %v", err)
	}
	// Check reports what Walk passes but cannot be read.
	rep, err := s.Check(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, p := range rep.Problems {
		msgs = append(msgs, p.Message)
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{"agents/passwd.md: path is outside the store", "queues/evil: path is outside the store", "tavern2.md:1:1: not a document of any known kind"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Check lacks %q:\n%s", want, joined)
		}
	}
	if rep.Checked != len(want) || rep.Valid(false) {
		t.Errorf("Check: %d checked, valid %v", rep.Checked, rep.Valid(false))
	}
}

// NewDoc stamps what every new document has, in one order.
func TestNewDoc(t *testing.T) {
	d, err := NewDoc(schema.Agent, Template{ID: "id1", Name: "alice", Defaults: true, Fields: []Field{{Key: "role", Value: "dev"}, {Key: "spawns", Value: 2}}, Body: []byte("# alice\n")})
	if err != nil {
		t.Fatal(err)
	}
	keys := d.Keys()
	want := []string{"schema_version", "id", "name", "role", "spawns", "state", "created", "updated"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if n, _ := d.Int("spawns"); n != 2 || d.String("state") != "idle" || d.String("id") != "id1" || string(d.Body()) != "\n# alice\n" {
		t.Errorf("document:\n%s", d.Bytes())
	}
	if d, _ := NewDoc(schema.Memory, Template{}); d.Has("name") || !d.Has("id") || d.Has("core") {
		t.Errorf("memory without defaults:\n%s", d.Bytes())
	}
	id := NewID()
	if tm, ok := IDTime(id); !ok || tm.IsZero() {
		t.Errorf("IDTime(%s) = %v %v", id, tm, ok)
	}
	if _, ok := IDTime("c1"); ok {
		t.Error("IDTime of a non-UUIDv7")
	}
}

// Migrate writes the migrated lines back and reports invalid results
// without writing them.
func TestMigrateStore(t *testing.T) {
	s := initStore(t)
	writeFile(t, s, "agents/old.md", "---\nname: old\nstatus: working   # old name\n---\n")
	writeFile(t, s, "agents/bad.md", "---\nname: bad\nstatus: sleeping\n---\n")
	writeFile(t, s, "agents/broken.md", "---\nname: [\n---\n")
	d, _ := NewDoc(schema.Agent, Template{Name: "cur", Defaults: true})
	if err := s.Create("agents/cur.md", d); err != nil {
		t.Fatal(err)
	}
	var got []string
	run := func(dry bool) {
		got = nil
		if err := s.Migrate(dry, func(m Migration) error {
			got = append(got, m.Path)
			switch m.Path {
			case "agents/old.md":
				if m.Err != nil || m.Written == dry || !strings.Contains(string(m.After), "state: working   # old name\nschema_version: 1\n") {
					t.Errorf("old: %+v", m)
				}
			case "agents/bad.md":
				if !dry && !errors.Is(m.Err, schema.ErrInvalid) || m.Written {
					t.Errorf("bad: %+v", m)
				}
			case "agents/broken.md":
				if !errors.Is(m.Err, ErrParse) || m.Before != nil {
					t.Errorf("broken: %+v", m)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	run(true)
	if b, _ := s.ReadFile("agents/old.md"); strings.Contains(string(b), "schema_version") {
		t.Fatal("dry run wrote")
	}
	if !slices.Equal(got, []string{"agents/bad.md", "agents/broken.md", "agents/old.md"}) {
		t.Errorf("dry run reported %q", got)
	}
	run(false)
	if b, _ := s.ReadFile("agents/old.md"); !strings.Contains(string(b), "state: working") {
		t.Fatalf("not migrated:\n%s", b)
	}
	if b, _ := s.ReadFile("agents/bad.md"); string(b) != "---\nname: bad\nstatus: sleeping\n---\n" {
		t.Fatalf("invalid result written:\n%s", b)
	}
}

// A run check is made afresh for each Check run: what it gathered about
// the other documents in one run does not leak into the next.
func TestRunCheckIsPerRun(t *testing.T) {
	s := initStore(t)
	writeFile(t, s, "agents/a.md", "---\nname: a\n---\n")
	runs := 0
	s.AddRunCheck("test/per-run", func() Check {
		runs++
		seen := 0
		return func(d *Doc) []error {
			if seen++; seen > 1 {
				return []error{errors.New("seen twice in one run")}
			}
			return nil
		}
	})
	for range 2 {
		rep, err := s.Check([]string{"agents/a.md"}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 0 {
			t.Fatalf("problems %+v: the check of one run saw another's documents", rep.Problems)
		}
	}
	if runs != 2 {
		t.Fatalf("made %d times for 2 runs", runs)
	}
}
