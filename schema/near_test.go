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
