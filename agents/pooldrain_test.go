package agents

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// DrainPool of a pool that does not run says so (no error: nothing of it
// claims); of a name no pool has, an unknown pool with the names near it.
// The drain of a running pool is pool_drain_command.txtar's (the binary).
func TestDrainPoolNotRunning(t *testing.T) {
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{OnEmpty: "terminate"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.RunPool(ctx, PoolOptions{Name: "builders", Queues: []string{"work"}, Broker: b,
		Drone: func(string, time.Duration) *exec.Cmd { return exec.Command("true") }}); err != nil {
		t.Fatal(err)
	}
	got, err := m.DrainPool("builders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Running || got.State != "stopped" || got.Was != "stopped" {
		t.Errorf("DrainPool(stopped pool) = %+v, want not running, stopped", got)
	}
	if err := m.WaitPoolStopped(ctx, "builders"); err != nil {
		t.Errorf("WaitPoolStopped(stopped pool) = %v, want nil", err)
	}

	for _, tt := range []struct {
		name string
		near []string
	}{{"biulders", []string{"builders"}}, {"nope", nil}} {
		_, err := m.DrainPool(tt.name)
		var ue *schema.UnknownError
		if !errors.Is(err, schema.ErrUnknownName) || !errors.As(err, &ue) || !slices.Equal(ue.Near, tt.near) {
			t.Errorf("DrainPool(%q) = %v, want an unknown pool near %q", tt.name, err, tt.near)
		}
	}
	if _, err := m.DrainPool("Bad Name"); !errors.Is(err, schema.ErrBadAgentName) {
		t.Errorf("DrainPool(bad name) = %v, want ErrBadAgentName", err)
	}
}
