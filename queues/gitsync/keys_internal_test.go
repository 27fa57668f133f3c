package gitsync

import (
	"slices"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

// The schema refuses a sync: setting it does not know when the store is
// opened; it must know every one the sync reads.
func TestKeysMatchSchema(t *testing.T) {
	got := slices.Sorted(slices.Values(schema.Config.Field("sync").Keys))
	var want []string
	for k := range syncKeys {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("schema's sync keys %v, the sync's %v", got, want)
	}
}
