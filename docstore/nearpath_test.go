package docstore

import (
	"slices"
	"testing"
)

func TestNearPath(t *testing.T) {
	s := newTestStore(t)
	if err := s.WriteFile("agents/alice.md", []byte("---\nname: alice\n---\n")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel  string
		want []string
	}{
		{"agnets/", []string{"agents/"}},
		{"agnets", []string{"agents"}},
		{"agnets/alice.md", []string{"agents/alice.md"}},
		{"agents/alcie.md", []string{"agents/alice.md"}},
		{"agents/alcie", []string{"agents/alice"}},
		// What exists, is near nothing, or is outside: nil.
		{"agents/", nil},
		{"agents", nil},
		{"agents/alice", nil},
		{"agents/alice.md", nil},
		{"frobnicate/", nil},
		{"../agnets/", nil},
		{"/agnets/", nil},
	}
	for _, tt := range tests {
		if got := s.NearPath(tt.rel); !slices.Equal(got, tt.want) {
			t.Errorf("NearPath(%q) = %q, want %q", tt.rel, got, tt.want)
		}
	}
}
