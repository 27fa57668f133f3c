package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/recall"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func tokens(s string) int { return len(s) / 4 }

func TestPrimeSmall(t *testing.T) {
	e := newEnv(t)
	m := e.Manager
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "me", Role: "coder"}); err != nil {
		t.Fatal(err)
	}
	recall.AddMemory(e.Store, "me", "identity", "I own the lexer", true)
	messages.SendMessage(e.Store, "@me", "bob", "hi")
	m.Ask("bob", "me", 0, "Review my PR?")
	reserve(t, e, "me", "src/lexer/**")
	m.AddCommitment("me", "tests pass", "go test ./...", time.Minute)
	mustQueueItem(t, e, "build", "first job")
	p, err := BuildPrime(e.Store, "me", PrimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Text()
	for _, want := range []string{"you are me, role coder", "first job", "@me 1", "Review my PR?", "src/lexer/**",
		"[pending] tests pass", "[identity] I own the lexer", "## Commands", "tavern next --take --as me"} {
		if !strings.Contains(text, want) {
			t.Errorf("prime lacks %q:\n%s", want, text)
		}
	}
	// The six to eight commands, each with an example.
	if n := len(p.Commands); n < 6 || n > 8 {
		t.Errorf("%d commands, want 6-8", n)
	}
	for _, c := range p.Commands {
		if c.Does == "" || !strings.HasPrefix(c.Example, "tavern ") {
			t.Errorf("command without an example: %+v", c)
		}
	}
	// An agent with no document gets no prime: a typo is "unknown agent",
	// naming the nearest ones.
	if p, err := BuildPrime(e.Store, "mee", PrimeOptions{}); !errors.Is(err, schema.ErrUnknownName) || p != nil ||
		!slices.Contains(err.(*schema.UnknownError).Near, "me") {
		t.Errorf("prime of an unknown agent: %v, %v", p, err)
	}
	// The agent a hooked session is about to become has no parts yet:
	// empty lists render no heading, and nothing is an error.
	p2, err := BuildPrime(e.Store, "nobody", PrimeOptions{Unregistered: true})
	if err != nil || len(p2.Errors) > 0 {
		t.Fatalf("prime of a session's unregistered agent: %v %q", err, p2.Errors)
	}
	if strings.Contains(p2.Text(), "## Your items") || strings.Contains(p2.Text(), "## Unread") {
		t.Errorf("empty sections shown:\n%s", p2.Text())
	}
}

// However much there is, prime stays within PrimeTokens and keeps the
// commands; JSON keeps every entry.
func TestPrimeBudget(t *testing.T) {
	e := newEnv(t)
	s := e.Store
	m := e.Manager
	if _, err := m.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a long line of text about the lexer ", 20)
	for i := range 30 {
		recall.AddMemory(s, "me", "identity", fmt.Sprintf("core memory %d: %s", i, long), true)
		messages.SendMessage(s, fmt.Sprintf("chan-%d", i), "bob", "hello")
		m.Ask("bob", "me", 0, fmt.Sprintf("question %d: %s", i, long))
		m.AddCommitment("me", fmt.Sprintf("claim %d %s", i, long), "true", time.Minute)
	}
	sp, _ := e.Space()
	for i := range 30 {
		if _, err := sp.Reserve("me", []string{fmt.Sprintf("dir%d/**", i)}, tuples.ReserveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := e.Broker()
	for i := range 12 {
		mustQueueItem(t, e, "build", fmt.Sprintf("job %d %s", i, long))
		if _, err := Take(context.Background(), b, "me", []string{"build"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	p, err := BuildPrime(s, "me", PrimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Text()
	if n := tokens(text); n > PrimeTokens {
		t.Errorf("prime is %d tokens (chars/4), want <= %d:\n%s", n, PrimeTokens, text)
	}
	if !strings.Contains(text, "## Commands") || !strings.Contains(text, "tavern memory add --as me") {
		t.Errorf("commands cut:\n%s", text)
	}
	if !strings.Contains(text, "more: `") {
		t.Errorf("cut lists do not say how to see the rest:\n%s", text)
	}
	if len(p.Items) != 12 || len(p.Core) != 30 || len(p.Questions) != 30 || len(p.Reservations) != 30 || len(p.Commitments) != 30 {
		t.Errorf("JSON lists cut: items %d core %d questions %d reservations %d commitments %d",
			len(p.Items), len(p.Core), len(p.Questions), len(p.Reservations), len(p.Commitments))
	}
}

func TestPrimeFile(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(e.Store.Root(), PrimeFile)
	os.WriteFile(file, []byte("Run `make check` before done, {{agent}}.\n{{commands}}\n"), 0o644)
	p, err := BuildPrime(e.Store, "me", PrimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Text()
	if !strings.Contains(text, "Run `make check` before done, me.") || !strings.Contains(text, "tavern next --take --as me") {
		t.Errorf("PRIME.md with {{commands}} (extend):\n%s", text)
	}
	os.WriteFile(file, []byte("Only use the Makefile."), 0o644)
	p, _ = BuildPrime(e.Store, "me", PrimeOptions{})
	if text := p.Text(); !strings.Contains(text, "Only use the Makefile.") || strings.Contains(text, "tavern next --take") {
		t.Errorf("PRIME.md without {{commands}} (replace):\n%s", text)
	}
}

// next never offers an item someone holds, or one that is not claimable
// yet; --take claims what next offered.
func TestNextNeverOffersHeld(t *testing.T) {
	e := newEnv(t)
	b, _ := e.Broker()
	first := mustQueueItem(t, e, "build", "held by bob")
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"build"}, As: "bob"}); err != nil {
		t.Fatal(err)
	}
	later := mustQueueItem(t, e, "build", "not yet")
	if _, err := e.Store.Update(later.Path, func(d *docstore.Doc) error { return d.Set("not_before", time.Now().Add(time.Hour)) }); err != nil {
		t.Fatal(err)
	}
	dep := mustQueueItem(t, e, "build", "a dependency")
	blocked, err := b.Add("build", queues.AddOptions{Title: "waits for the dependency", DependsOn: []string{dep.ID}})
	if err != nil {
		t.Fatal(err)
	}
	free := mustQueueItem(t, e, "build", "free")
	got, err := Next(b, "me", NextOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range got {
		ids = append(ids, it.ID)
	}
	for _, bad := range []string{first.ID, later.ID, blocked.ID} {
		if slices.Contains(ids, bad) {
			t.Errorf("next offered %s: %v", bad, got)
		}
	}
	if len(ids) != 2 || ids[0] != dep.ID || ids[1] != free.ID {
		t.Errorf("next: got %v, want [%s %s]", ids, dep.ID, free.ID)
	}
	// A crash left a pending copy of a claimed item: not offered either.
	data, _ := os.ReadFile(filepath.Join(e.Store.Root(), queues.ItemPath("build", queues.Claimed, first.ID)))
	os.WriteFile(filepath.Join(e.Store.Root(), queues.ItemPath("build", queues.Pending, first.ID)), data, 0o644)
	got, _ = Next(b, "me", NextOptions{Limit: 10})
	for _, it := range got {
		if it.ID == first.ID {
			t.Errorf("next offered the pending copy of a claimed item")
		}
	}
	c, err := Take(context.Background(), b, "me", nil, 0)
	if err != nil || c.ID != dep.ID {
		t.Fatalf("take: %v %v, want %s", c, err, dep.ID)
	}
}

// An item the agent holds as a lease (no session or spawn keeps it
// alive) lapses unless renewed: prime says until when and how to renew
// it. A claim tied to the agent's life says nothing of a lease.
func TestPrimeLease(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Manager.CreateAgent(agents.AgentSpec{Name: "me"}); err != nil {
		t.Fatal(err)
	}
	mustQueueItem(t, e, "build", "compile the parser")
	b, _ := e.Broker()
	c, err := Take(context.Background(), b, "me", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	until, ok := c.Doc.Time("lease_until")
	if !ok || c.Doc.String("claim_kind") != "lease" {
		t.Fatalf("claim without a session: %v, want a lease", c.Doc)
	}
	p, err := BuildPrime(e.Store, "me", PrimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Items[0].LeaseUntil != schema.FormatTime(until) {
		t.Errorf("items: %+v, want the lease's end", p.Items)
	}
	text := p.Text()
	for _, want := range []string{"(attempt 1, a lease until " + schema.FormatTime(until) + ")", "`tavern item renew ID --attempt N --as me`"} {
		if !strings.Contains(text, want) {
			t.Errorf("prime lacks %q:\n%s", want, text)
		}
	}
	// wake's briefing says so too.
	w, err := agents.Wake(e.Store, "me", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := "(a lease until " + schema.FormatTime(until) + ": renew it, `tavern item renew " + c.ID + " --attempt 1 --as me`)"; !strings.Contains(w.Text(), want) {
		t.Errorf("wake lacks %q:\n%s", want, w.Text())
	}
}
