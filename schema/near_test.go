package schema

import (
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
	}
	for _, tt := range tests {
		if got := NearNew(tt.name, tt.names); !slices.Equal(got, tt.want) {
			t.Errorf("NearNew(%q, %q) = %q, want %q", tt.name, tt.names, got, tt.want)
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
