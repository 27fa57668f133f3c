package schema

import "testing"

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
