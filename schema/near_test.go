package schema

import (
	"errors"
	"slices"
	"testing"
)

func TestNearList(t *testing.T) {
	for _, tc := range []struct {
		near []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, `"a"`},
		{[]string{"a", "b"}, `"a" or "b"`},
		{[]string{"a", "b", "c", "d"}, `"a", "b" or "c"`},
	} {
		if got := NearList(tc.near); got != tc.want {
			t.Errorf("NearList(%q) = %s, want %s", tc.near, got, tc.want)
		}
	}
}

func TestFieldHint(t *testing.T) {
	tests := []struct {
		field, value string
		eq           bool
		want         bool
	}{
		{"state", "idle", true, false},
		{"state", "idel", true, true},
		{"state", "idel", false, false}, // != and ~ may mean anything
		{"stat", "", false, true},
		{"sate", "", false, true},
		{"satte", "", false, true},   // a swap is one edit
		{"status", "", false, false}, // two edits: a field of one's own
		{"role", "", false, false},
		{"rol", "", false, false}, // too short to tell
		{"bookmarks.general", "", false, false},
	}
	for _, tt := range tests {
		err := Agent.FieldHint(tt.field, tt.value, tt.eq)
		if got := err != nil; got != tt.want {
			t.Errorf("FieldHint(%q, %q, %v) = %v, want a hint: %v", tt.field, tt.value, tt.eq, err, tt.want)
		}
	}
}

func TestNearNew(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{"dialy", []string{"daily"}, []string{"daily"}},
		{"gpsu", []string{"gpus"}, []string{"gpus"}},
		{"team-2", []string{"team-1"}, nil},         // a numbered series
		{"tpu", []string{"gpu", "cpu"}, nil},        // short names one letter apart
		{"gpu", []string{"gpus"}, []string{"gpus"}}, // another length: a typo
		{"decisoin", []string{"decision"}, []string{"decision"}},
		{"bbo", []string{"bob"}, []string{"bob"}}, // a swap of short names: a typo
		{"ab", []string{"ba"}, []string{"ba"}},
		{"tpu", []string{"tup"}, []string{"tup"}},
		// An existing name plus an optional '-' or '_' and digits is the
		// next of a series, either way round: builders-2 beside builders.
		{"builders-2", []string{"builders"}, nil},
		{"builders2", []string{"builders"}, nil},
		{"gpus_3", []string{"gpus"}, nil},
		{"builders", []string{"builders-2"}, nil},
		{"drones-12", []string{"drones"}, nil},
		{"drones3", []string{"drones-2"}, nil},
		{"drones3", []string{"dornes", "drones", "drones-2"}, nil},
		// Real typos stay refused; so does a suffix that is not a number.
		{"drnoes", []string{"drones"}, []string{"drones"}},
		{"wroker", []string{"worker"}, []string{"worker"}},
		{"gpsu", []string{"gpus"}, []string{"gpus"}},
		{"builders-", []string{"builders"}, []string{"builders"}},
		{"builders-x", []string{"builders"}, []string{"builders"}},
		{"builder-2", []string{"builders"}, []string{"builders"}},
	}
	for _, tt := range tests {
		if got := NearNew(tt.name, tt.names); !slices.Equal(got, tt.want) {
			t.Errorf("NearNew(%q, %q) = %q, want %q", tt.name, tt.names, got, tt.want)
		}
	}
}

func TestNear(t *testing.T) {
	tests := []struct {
		name       string
		candidates []string
		want       []string
	}{
		{"bbo", []string{"bob"}, []string{"bob"}}, // a swap is one edit
		{"wroking", []string{"waiting", "working"}, []string{"working"}},
		{"agnets", []string{"agents", "queues"}, []string{"agents"}},
		// A swap ranks with one edit, before two.
		{"stae", []string{"tsea", "sate"}, []string{"sate", "tsea"}},
		{"cpu", []string{"gpu"}, []string{"gpu"}},
		{"abc", []string{"cba"}, nil}, // two edits: too far for three letters
		{"ab", []string{"ba"}, []string{"ba"}},
		{"a", []string{"b"}, nil},
	}
	for _, tt := range tests {
		if got := Near(tt.name, tt.candidates); !slices.Equal(got, tt.want) {
			t.Errorf("Near(%q, %q) = %q, want %q", tt.name, tt.candidates, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"bob", "bbo", 1},
		{"working", "wroking", 1},
		{"agents", "agnets", 1},
		{"ab", "ba", 1},
		{"abc", "ca", 3}, // optimal string alignment: no edit of a swapped pair
		{"kitten", "sitting", 3},
		{"éa", "aé", 1}, // letters, not bytes
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := EditDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestLookupNear checks that an unknown kind is answered with each kind
// near it once, by its nearest name (a swap is one edit).
func TestLookupNear(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"agnet", []string{"agent"}},
		{"agnets", []string{"agents"}},
		{"itmes", []string{"items"}},
		{"agentz", []string{"agents"}}, // a tie: the plural
		{"frobnicate", nil},
	}
	for _, tt := range tests {
		_, err := Lookup(tt.name)
		var ke *UnknownKindError
		if !errors.As(err, &ke) {
			t.Fatalf("Lookup(%q) = %v, want an *UnknownKindError", tt.name, err)
		}
		if !slices.Equal(ke.Near, tt.want) {
			t.Errorf("Lookup(%q).Near = %q, want %q", tt.name, ke.Near, tt.want)
		}
	}
}

func TestNearDirs(t *testing.T) {
	tests := []struct {
		dir  string
		want []string
	}{
		{"queues/build/pendin", []string{"queues/build/pending"}},
		{"queus/build/pending", []string{"queues/build/pending"}},
		{"queues/build/zzzzzzz", nil},
		{"nothing/here", nil},
	}
	for _, tt := range tests {
		if got := NearDirs(tt.dir); !slices.Equal(got, tt.want) {
			t.Errorf("NearDirs(%q) = %q, want %q", tt.dir, got, tt.want)
		}
	}
}
