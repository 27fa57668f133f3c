package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func TestParseUsage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		file string
		want AgentUsage
	}{
		{"claude.json", AgentUsage{Source: "claude", Model: "claude-sonnet-4-5", SessionID: "5c1e9a3e-2f0b-4c55-9d0c-61f0f8c2a7e1",
			TokensIn: 12 + 2048 + 15320, TokensOut: 611, CacheRead: 15320, CacheWrite: 2048, CostUSD: f(0.0421375)}},
		{"claude-stream.jsonl", AgentUsage{Source: "claude", SessionID: "8d2f6a10-3c4b-4e1f-a2d7-5b9e0c7f1a23",
			TokensIn: 9 + 18230, TokensOut: 154, CacheRead: 18230, CostUSD: f(0.0187)}},
		{"claude-after-text.txt", AgentUsage{Source: "claude", SessionID: "a1b2c3d4-0000-4000-8000-000000000001", TokensIn: 100, TokensOut: 50, CostUSD: f(0.003)}},
		{"codex.jsonl", AgentUsage{Source: "codex", SessionID: "0199b4e2-7a10-7c33-9e51-2d4f6a8b0c11", TokensIn: 18230 + 19100, TokensOut: 402 + 58, CacheRead: 16000 + 18000}},
		{"gemini.json", AgentUsage{Source: "gemini", Model: "gemini-2.5-flash,gemini-2.5-pro", SessionID: "3f0c5e2a-6b7d-4a18-9c2e-7d1f0a9b8c34",
			TokensIn: 21000 + 800, TokensOut: 300 + 250 + 40, CacheRead: 18000}},
		{"gemini-stream.jsonl", AgentUsage{Source: "gemini", Model: "gemini-2.5-pro", SessionID: "77aa0c1e-1d2e-4f30-8a41-5b6c7d8e9f00", TokensIn: 5100, TokensOut: 130, CacheRead: 4000}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "usage", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := ParseUsage(data)
			if !ok {
				t.Fatal("no usage found")
			}
			if (got.CostUSD == nil) != (tc.want.CostUSD == nil) || (got.CostUSD != nil && *got.CostUSD != *tc.want.CostUSD) {
				t.Errorf("cost = %v, want %v", got.CostUSD, tc.want.CostUSD)
			}
			got.CostUSD, tc.want.CostUSD = nil, nil
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for _, junk := range []string{"", "plain text\n", `{"type":"assistant"}`, "{not json", `{"stats":{}}`} {
		if u, ok := ParseUsage([]byte(junk)); ok {
			t.Errorf("ParseUsage(%q) = %+v, want none", junk, u)
		}
	}
}

func TestSpawnRecordsUsage(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustItem(t, b, "q", "x", "x")
	claude, _ := filepath.Abs(filepath.Join("testdata", "usage", "claude.json"))
	// Some CPU, then the report on stdout, as `claude -p --output-format json` prints it.
	script := `i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; cat "$REPORT"`
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "d1", Pool: "p", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", script}, Env: []string{"REPORT=" + claude, "PATH=" + os.Getenv("PATH")}})
	if err != nil || res.Outcome != OutcomeDone {
		t.Fatalf("spawn: %v %+v", err, res)
	}
	docs, errs := m.Store.List(schema.Usage)
	if len(errs) > 0 || len(docs) != 1 {
		t.Fatalf("usage records: %d (%v)", len(docs), errs)
	}
	d := docs[0]
	if !strings.HasPrefix(d.Path, "usage/d1/") {
		t.Errorf("record path %s", d.Path)
	}
	f := d.Fields()
	for k, v := range map[string]any{"agent": "d1", "item": it.ID, "queue": "q", "pool": "p", "exit_code": 0, "outcome": "done",
		"source": "claude", "tokens_in": 17380, "tokens_out": 611, "cost_usd": 0.0421375, "model": "claude-sonnet-4-5"} {
		if fmt.Sprint(f[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, f[k], v)
		}
	}
	if w, _ := f["wall_seconds"].(float64); w <= 0 {
		t.Errorf("wall_seconds = %v", f["wall_seconds"])
	}
	if c, ok := f["cpu_seconds"].(float64); !ok || c <= 0 {
		t.Errorf("cpu_seconds = %v, want > 0 for a busy child", f["cpu_seconds"])
	}
	if ev := events(t, m, "usage.recorded"); len(ev) != 1 || ev[0].Item != it.ID {
		t.Errorf("usage.recorded events: %+v", ev)
	}
	// A child without a report: times and exit status only.
	mustItem(t, b, "q", "y", "y")
	if _, err := m.Spawn(context.Background(), SpawnOptions{Name: "d2", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", "echo hello; exit 3"}}); err != nil {
		t.Fatal(err)
	}
	docs, _ = m.Store.List(schema.Usage)
	for _, d := range docs {
		if d.String("agent") == "d2" {
			if d.Has("tokens_in") || d.Has("cost_usd") {
				t.Errorf("a record without a report has tokens or cost:\n%s", d.Bytes())
			}
			if v, _ := d.Int("exit_code"); v != 3 {
				t.Errorf("exit_code = %d", v)
			}
		}
	}
}

func human() *queues.Caller {
	return &queues.Caller{User: "ann", Env: map[string]string{}, Ancestry: []queues.Proc{{PID: 1234, Command: "tavern approve"}}}
}

func TestSpawnWaitsAtGateUntilApproved(t *testing.T) {
	for _, decide := range []string{"approve", "reject"} {
		t.Run(decide, func(t *testing.T) {
			m := newManager(t)
			b := newBroker(t, m)
			mustQueue(t, b, "q", queues.QueueOptions{})
			it, err := b.Add("q", queues.AddOptions{Title: "deploy", Gate: "human"})
			if err != nil {
				t.Fatal(err)
			}
			type out struct {
				res *SpawnResult
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := m.Spawn(context.Background(), SpawnOptions{Name: "d1", Queues: []string{"q"}, Work: QueueWork(b),
					Command: []string{"/bin/sh", "-c", "echo deployed"}})
				done <- out{res, err}
			}()
			waitUntil(t, 20*time.Second, "the drone waiting at its gate", func() bool {
				a, err := m.GetAgent("d1")
				return err == nil && a.State == Waiting
			})
			select {
			case o := <-done:
				t.Fatalf("spawn returned before the gate was decided: %+v %v", o.res, o.err)
			default:
			}
			if got := mustGet(t, b, it.ID).State; got != queues.Claimed {
				t.Fatalf("item is %s while its drone waits, want claimed", got)
			}
			if decide == "approve" {
				if _, err := b.Approve(it.ID, queues.Decision{Caller: human()}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := b.Reject(it.ID, queues.Decision{Reason: "not today", Caller: human()}); err != nil {
				t.Fatal(err)
			}
			var o out
			select {
			case o = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("spawn did not return after the decision")
			}
			got := mustGet(t, b, it.ID)
			if decide == "approve" {
				if o.err != nil || o.res.Outcome != OutcomeDone || got.State != queues.Done {
					t.Fatalf("after approval: %v %+v, item %s", o.err, o.res, got.State)
				}
				return
			}
			if !errors.Is(o.err, queues.ErrRejected) || o.res.Outcome != OutcomeFailed || got.State != queues.Dead {
				t.Fatalf("after rejection: %v %+v, item %s", o.err, o.res, got.State)
			}
		})
	}
}

func mustGet(tb testing.TB, b *queues.Broker, id string) *queues.Item {
	tb.Helper()
	it, err := b.Get(id)
	if err != nil {
		tb.Fatal(err)
	}
	return it
}

func TestEscalateDead(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustAgent(t, m, AgentSpec{Name: "lead"})
	mustQueue(t, b, "ask", queues.QueueOptions{MaxAttempts: 1})
	mustQueue(t, b, "note", queues.QueueOptions{MaxAttempts: 1})
	if _, err := b.SetOnDead("ask", "ask parent"); err != nil {
		t.Fatal(err)
	}
	// notify names a channel that must exist (RuleNames).
	if _, err := b.SetOnDead("note", "notify alerts"); !errors.Is(err, schema.ErrUnknownName) {
		t.Fatalf("on_dead naming no channel: %v, want an unknown name", err)
	}
	if _, err := messages.CreateChannel(m.Store, "alerts", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetOnDead("note", "notify alerts"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SetOnDead("note", "shout loudly"); !errors.Is(err, queues.ErrBadOption) {
		t.Fatalf("bad on_dead accepted: %v", err)
	}
	a := mustItem(t, b, "ask", "flaky", "x")
	n := mustItem(t, b, "note", "broken", "x")
	for _, q := range []string{"ask", "note"} {
		res, err := m.Spawn(context.Background(), SpawnOptions{Name: "d-" + q, Parent: "lead", Queues: []string{q}, Work: QueueWork(b),
			Command: []string{"/bin/sh", "-c", "echo boom >&2; exit 1"}})
		if err != nil || res.Outcome != OutcomeFailed {
			t.Fatalf("spawn %s: %v %+v", q, err, res)
		}
	}
	// The wrappers escalated on their way out.
	qs, err := m.Questions("lead", true)
	if err != nil || len(qs) != 1 || !strings.Contains(qs[0].Text, a.ID) || qs[0].From != "d-ask" {
		t.Fatalf("questions to lead: %+v %v", qs, err)
	}
	msgs, err := messages.ReadMessages(m.Store, "alerts", "", 0)
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0].Text, n.ID) {
		t.Fatalf("alerts: %+v %v", msgs, err)
	}
	if got := mustGet(t, b, a.ID); !strings.HasPrefix(got.Doc.String("escalated"), "question:") {
		t.Errorf("escalated = %q", got.Doc.String("escalated"))
	}
	// Once each.
	if esc, err := m.EscalateDead(b); err != nil || len(esc) != 0 {
		t.Fatalf("second escalation: %+v %v", esc, err)
	}
}

func TestPoolPausesWhenNotAdmitted(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustItem(t, b, "q", "a", "a")
	spent := errors.New("budget daily is spent: 1.20 of 1.00 USD today")
	launched := 0
	mt, err := m.RunPool(context.Background(), PoolOptions{Name: "p", Queues: []string{"q"}, Max: 2, OnEmpty: EmptyTerminate, Broker: b, Tick: 20 * time.Millisecond,
		Admit: func() error { return spent },
		Drone: func(agent string, wait time.Duration) *exec.Cmd {
			launched++
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if launched != 0 || mt.Spawned != 0 {
		t.Fatalf("a paused pool launched %d drones", launched)
	}
	d, err := m.Store.Get(PoolPath("p"))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.String("paused"); got != spent.Error() {
		t.Errorf("pool paused: %q, want %q", got, spent)
	}
	if ev := events(t, m, "pool.paused"); len(ev) != 1 {
		t.Errorf("pool.paused events: %d", len(ev))
	}
	if _, err := docstore.Parse("x", d.Bytes()); err != nil {
		t.Fatal(err)
	}
}
