package docstore

import (
	"errors"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

func TestSaveEdit(t *testing.T) {
	s := newTestStore(t)
	orig := []byte("---\nname: alice\nstate: idle\n---\nbody\n")
	if err := s.WriteFile("agents/alice.md", orig); err != nil {
		t.Fatal(err)
	}
	d, err := s.Get("agents/alice.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
		rev  string
		want error
	}{
		{"bad yaml", "---\nname: [\n---\n", d.Rev, ErrParse},
		{"invalid state", "---\nname: alice\nstate: dancing\n---\n", d.Rev, schema.ErrInvalid},
		{"stale base", "---\nname: alice\nstate: working\n---\n", "0000", ErrConflict},
		{"valid", "---\nname: alice\nstate: working\n---\nnew body\n", d.Rev, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := s.ReadFile("agents/alice.md")
			_, err := s.SaveEdit("agents/alice.md", tt.rev, []byte(tt.data))
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			after, _ := s.ReadFile("agents/alice.md")
			if tt.want != nil && string(after) != string(before) {
				t.Fatalf("a refused edit changed the file:\n%s", after)
			}
			if tt.want == nil && string(after) != tt.data {
				t.Fatalf("got %q, want %q", after, tt.data)
			}
		})
	}
}

// TestSaveEditRepairsUnparsable checks that a document that does not parse
// can be replaced by a valid one (compared by the revision of its bytes),
// and that a stale revision or an invalid replacement is still refused.
func TestSaveEditRepairsUnparsable(t *testing.T) {
	s := newTestStore(t)
	broken := []byte("---\nname: [alice\n---\n")
	if err := s.WriteFile("agents/alice.md", broken); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveEdit("agents/alice.md", "0000", []byte("---\nname: alice\n---\n")); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale revision: got %v, want ErrConflict", err)
	}
	if err := CheckEdit("agents/alice.md", []byte("---\nstate: 3x\n---\n")); !errors.Is(err, schema.ErrInvalid) {
		t.Fatalf("CheckEdit of an invalid agent: got %v, want ErrInvalid", err)
	}
	fixed := "---\nname: alice\nstate: idle\n---\n"
	if _, err := s.SaveEdit("agents/alice.md", Revision(broken), []byte(fixed)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadFile("agents/alice.md"); string(got) != fixed {
		t.Fatalf("got %q, want %q", got, fixed)
	}
}

// TestUpdateWithBadRev checks that an IfRev that is no revision at all is
// bad input (ErrBadRev, not ErrConflict: a retry would never match) and
// that a well-formed stale one is still a conflict; neither writes.
func TestUpdateWithBadRev(t *testing.T) {
	s := newTestStore(t)
	orig := []byte("---\nname: alice\nstate: idle\n---\n")
	if err := s.WriteFile("agents/alice.md", orig); err != nil {
		t.Fatal(err)
	}
	set := func(d *Doc) error { return d.SetYAML("spawns", "2") }
	tests := []struct {
		rev       string
		want, not error
	}{
		{"bad", ErrBadRev, ErrConflict},
		{"0000", ErrBadRev, ErrConflict},
		{"3F2A9C0D1E2B4A5C", ErrBadRev, ErrConflict},
		{"3f2a9c0d1e2b4a5c", ErrConflict, ErrBadRev},
	}
	for _, tt := range tests {
		_, err := s.UpdateWith("agents/alice.md", UpdateOptions{IfRev: tt.rev}, set)
		if !errors.Is(err, tt.want) || errors.Is(err, tt.not) {
			t.Errorf("IfRev %q: got %v, want %v", tt.rev, err, tt.want)
		}
		var re *RevError
		if errors.As(err, &re) && re.Path != "agents/alice.md" {
			t.Errorf("IfRev %q: RevError.Path = %q", tt.rev, re.Path)
		}
		if got, _ := s.ReadFile("agents/alice.md"); string(got) != string(orig) {
			t.Fatalf("IfRev %q: a refused update changed the file:\n%s", tt.rev, got)
		}
	}
	if !ValidRevision(Revision(orig)) {
		t.Errorf("ValidRevision(Revision(...)) = false")
	}
}

// TestUnsetAbsent checks that unsetting a field the document does not
// have changes nothing and says so, with the fields near it.
func TestUnsetAbsent(t *testing.T) {
	d, err := Parse("agents/alice.md", []byte("---\nname: alice\nspawns: 3\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := string(d.Bytes())
	err = d.Unset("spwans")
	var ne *NoFieldError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNoField) {
		t.Fatalf("Unset(spwans) = %v, want a *NoFieldError", err)
	}
	if len(ne.Near) != 1 || ne.Near[0] != "spawns" || ne.Path != "agents/alice.md" {
		t.Errorf("got %+v, want Near [spawns] at agents/alice.md", ne)
	}
	if got := string(d.Bytes()); got != before {
		t.Errorf("Unset of an absent field changed the document:\n%s", got)
	}
	if err := d.Unset("spawns"); err != nil || d.Has("spawns") {
		t.Errorf("Unset(spawns) = %v, has it: %v", err, d.Has("spawns"))
	}
}
