package etcd

import (
	"slices"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

// The schema refuses an etcd: setting it does not know when the store is
// opened; it must know every one this engine reads.
func TestKeysMatchSchema(t *testing.T) {
	if got := schema.Config.Field("etcd").Keys; !slices.Equal(got, etcdKeys) {
		t.Errorf("schema's etcd keys %v, engine's %v", got, etcdKeys)
	}
}
