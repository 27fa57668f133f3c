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
