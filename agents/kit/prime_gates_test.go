package kit

import (
	"strings"
	"testing"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/queues"
)

// Gates waiting for a person show in prime (issue 19): the session knows
// what is blocked on a human, and that it cannot decide it.
func TestPrimeShowsPendingGates(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	b, err := queues.Open(e.Store, queues.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateQueue("deploy", queues.QueueOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := b.Add("deploy", queues.AddOptions{Title: "ship 2.0", Gate: "human"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPrime(e.Store, "me", PrimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Gates) != 1 || p.Gates[0].Item != it.ID {
		t.Fatalf("prime gates: %+v", p.Gates)
	}
	if text := p.Text(); !strings.Contains(text, "Waiting for a person") || !strings.Contains(text, it.ID) || tokens(text) > PrimeTokens {
		t.Fatalf("prime text:\n%s", text)
	}
	if _, err := b.Approve(it.ID, queues.Decision{Caller: &queues.Caller{User: "ann", Env: map[string]string{}}}); err != nil {
		t.Fatal(err)
	}
	if p, _ = BuildPrime(e.Store, "me", PrimeOptions{}); len(p.Gates) != 0 || strings.Contains(p.Text(), "Waiting for a person") {
		t.Fatalf("an approved gate is still in prime: %+v", p.Gates)
	}
}
