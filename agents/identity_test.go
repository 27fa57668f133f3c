package agents

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// A copied agent file keeps the original's name and id. Check reports
// both at their positions, every run seeing the files as they are then
// (a run check, not one computed once per Store); writes through the
// store refuse to make the disagreement but not to touch a document that
// has it.
func TestAgentIdentity(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "alice"})
	mustAgent(t, m, AgentSpec{Name: "carol"})
	s := m.Store
	// alice made long ago: a create looks for an id only when it was not
	// just minted (justMinted). By hand: a write may not change an
	// agent's id (TestAgentIDFixed).
	const aliceID = "01890000-0000-7000-8000-00000000a11c"
	data, err := os.ReadFile(filepath.Join(s.Root(), "agents/alice.md"))
	if err != nil {
		t.Fatal(err)
	}
	data = regexp.MustCompile(`(?m)^id: .*$`).ReplaceAll(data, []byte("id: "+aliceID))
	if err := os.WriteFile(filepath.Join(s.Root(), "agents/alice.md"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root(), "agents/bob.md"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := s.Check(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	type found struct {
		path, field string
		line, col   int
		err         error
	}
	var got []found
	for _, p := range rep.Problems {
		var ie *IdentityError
		if !errors.As(p.Err, &ie) {
			t.Fatalf("problem %s: not an *IdentityError", p.Message)
		}
		path, line, col := docstore.Position(p.Err)
		if path != p.Path || line != p.Line || col != p.Col || !errors.Is(p.Err, schema.ErrInvalid) {
			t.Errorf("problem %s: position %s:%d:%d, want its own, matching schema.ErrInvalid", p.Message, path, line, col)
		}
		got = append(got, found{p.Path, ie.Field, p.Line, p.Col, ie.Err})
	}
	want := []found{
		{"agents/alice.md", "id", 3, 5, ErrDuplicateID},
		{"agents/bob.md", "id", 3, 5, ErrDuplicateID},
		{"agents/bob.md", "name", 4, 7, ErrNameNotPath},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("check found %+v, want %+v", got, want)
	}

	// Other writes of the copy go on.
	if _, err := s.Update("agents/bob.md", func(d *docstore.Doc) error { return d.Set("role", "reviewer") }); err != nil {
		t.Fatalf("a write that leaves name and id alone: %v", err)
	}
	// Writes that make the disagreement are refused.
	for _, c := range []struct {
		rel, field, value string
		want              error
	}{
		{"agents/carol.md", "name", "alice", ErrNameNotPath},
		{"agents/bob.md", "name", "dave", ErrNameNotPath},
		{"agents/carol.md", "id", aliceID, ErrDuplicateID},
	} {
		_, err := s.Update(c.rel, func(d *docstore.Doc) error { return d.Set(c.field, c.value) })
		var re *docstore.RefusedError
		var ie *IdentityError
		if !errors.As(err, &re) || !errors.As(err, &ie) || !errors.Is(err, c.want) || ie.Path != c.rel || ie.Field != c.field {
			t.Errorf("set %s %s=%s: %v, want refused with %v", c.rel, c.field, c.value, err, c.want)
		}
	}
	d, err := docstore.NewDoc(schema.Agent, docstore.Template{ID: aliceID, Name: "dave"})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Create("agents/dave.md", d), ErrDuplicateID)
	// A fresh id is not looked for, and is no one else's.
	if !justMinted(docstore.NewID()) || justMinted(aliceID) || justMinted("x") {
		t.Error("justMinted: want true for a new id only")
	}
	if _, err := m.CreateAgent(AgentSpec{Name: "dave"}); err != nil {
		t.Fatal(err)
	}

	// Fixed: its own name and a fresh id. The next run sees it.
	if _, err := s.Update("agents/bob.md", func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "name", Value: "bob"}, {Key: "id", Value: docstore.NewID()}})
	}); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(nil, false); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check after the fix: %v %+v, want no problem", err, rep)
	}
}

// An agent's id is its identity: a write through the store that changes
// or removes it is refused (ErrIDChanged) and leaves the file as it was;
// other writes go on.
func TestAgentIDFixed(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "alice"})
	s := m.Store
	before, err := os.ReadFile(filepath.Join(s.Root(), "agents/alice.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*docstore.Doc) error{
		"set":   func(d *docstore.Doc) error { return d.Set("id", docstore.NewID()) },
		"unset": func(d *docstore.Doc) error { return d.Delete("id") },
	} {
		_, err := s.Update("agents/alice.md", edit)
		var ie *IdentityError
		if !errors.As(err, &ie) || !errors.Is(err, ErrIDChanged) || !errors.Is(err, docstore.ErrRefused) || ie.Field != "id" || ie.Line != 3 {
			t.Errorf("%s id: %v, want refused with ErrIDChanged at line 3", name, err)
		}
	}
	after, err := os.ReadFile(filepath.Join(s.Root(), "agents/alice.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("refused writes changed the file:\n%s\nwant\n%s", after, before)
	}
	if _, err := s.Update("agents/alice.md", func(d *docstore.Doc) error { return d.Set("role", "reviewer") }); err != nil {
		t.Fatalf("a write that leaves the id alone: %v", err)
	}
}
