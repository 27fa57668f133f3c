package agents

import (
	"testing"

	"github.com/tavernhq/tavern/queues"
)

// TestRulesAcceptDeletes: every rule InstallRules adds lets a document of
// each kind it looks at be deleted (a delete has no new document: a rule
// that reads one must not be handed nil and crash, as the names rule did
// under tavern doctor --fix).
func TestRulesAcceptDeletes(t *testing.T) {
	m := newManager(t)
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateQueue("build", queues.QueueOptions{OnDead: "notify general"}); err == nil {
		t.Fatal("on_dead naming no channel: created, want refused")
	}
	if _, err := b.CreateQueue("build", queues.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := b.Add("build", queues.AddOptions{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateAgent(AgentSpec{Name: "ann", Queues: []string{"build"}}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"agents/ann.md", queues.ItemPath("build", "pending", it.ID), "queues/build/queue.md"} {
		if err := m.Store.Delete(rel); err != nil {
			t.Errorf("delete %s: %v", rel, err)
		}
	}
}
