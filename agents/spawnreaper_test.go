package agents

import (
	"context"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

// A spawn of an agent that a reaper has just marked failed, while the
// reaper still holds the agent's lock (reapOne writes failed, host and
// pid cleared, journals, then lets go), waits for the lock instead of
// exiting busy: a pool replacing a crashed drone under the same name
// counted that "busy" as one more crash in a row. The hook lets the lock
// go exactly when the spawn starts waiting; before, the spawn never
// waited and was refused busy.
func TestSpawnWaitsForReaperOfFailedAgent(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "d"})
	if _, err := m.Transition("d", Failed, TransitionOptions{By: "reaper", Reason: "wrapper died (liveness lock free)"}); err != nil {
		t.Fatal(err)
	}
	l, err := m.Store.Lock(schema.AgentLockKey("d")) // the reaper's, not let go yet
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	waited := false
	testHookAwaitAgentLock = func(string) { waited = true; l.Unlock() }
	t.Cleanup(func() { testHookAwaitAgentLock = nil })
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "d", Command: []string{"true"}})
	if err != nil {
		t.Fatalf("spawn of an agent its reaper has just let go: %v (waited %v)", err, waited)
	}
	if res.ExitCode != 0 || !waited {
		t.Errorf("spawn: %+v, waited %v", res, waited)
	}
	if evs := events(t, m, "agent.spawn_refused"); len(evs) != 0 {
		t.Errorf("%d agent.spawn_refused, want none", len(evs))
	}
}
