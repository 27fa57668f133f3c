package usage_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func newStore(t *testing.T) *docstore.Store {
	t.Helper()
	s, _, err := docstore.Init(filepath.Join(t.TempDir(), ".tavern"), "u")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// record appends a ledger record as the spawn wrapper writes it.
func record(t *testing.T, s *docstore.Store, agent, pool, item string, start time.Time, wall float64, exit int, in, out int64, cost *float64) {
	t.Helper()
	f := []docstore.Field{{Key: "agent", Value: agent}, {Key: "item", Value: item}, {Key: "queue", Value: "q"}}
	if pool != "" {
		f = append(f, docstore.Field{Key: "pool", Value: pool})
	}
	f = append(f, docstore.Field{Key: "started", Value: start}, docstore.Field{Key: "ended", Value: start.Add(time.Duration(wall * float64(time.Second)))},
		docstore.Field{Key: "wall_seconds", Value: wall}, docstore.Field{Key: "cpu_seconds", Value: wall / 10}, docstore.Field{Key: "exit_code", Value: exit})
	if in > 0 || out > 0 {
		f = append(f, docstore.Field{Key: "source", Value: "claude"}, docstore.Field{Key: "tokens_in", Value: in}, docstore.Field{Key: "tokens_out", Value: out})
	}
	if cost != nil {
		f = append(f, docstore.Field{Key: "cost_usd", Value: *cost})
	}
	if _, err := s.CreateEntry(schema.Usage, agent, f, ""); err != nil {
		t.Fatal(err)
	}
}

func usd(v float64) *float64 { return &v }

func TestSummarize(t *testing.T) {
	s := newStore(t)
	now := time.Now().UTC()
	yesterday := now.Add(-24 * time.Hour)
	record(t, s, "a-1", "a", "i1", yesterday, 10, 0, 100, 10, usd(0.5))
	record(t, s, "a-1", "a", "i2", now.Add(-time.Minute), 20, 1, 200, 20, usd(0.25))
	record(t, s, "b-1", "b", "i2", now.Add(-time.Minute), 5, 0, 0, 0, nil)
	recs, errs := usage.Load(s, usage.Filter{})
	if len(errs) > 0 || len(recs) != 3 {
		t.Fatalf("load: %d %v", len(recs), errs)
	}
	cases := []struct {
		by   string
		keys []string
	}{
		{"agent", []string{"a-1", "b-1"}},
		{"pool", []string{"a", "b"}},
		{"item", []string{"i1", "i2"}},
		{"day", []string{yesterday.Format("2006-01-02"), now.Format("2006-01-02")}},
	}
	for _, tc := range cases {
		rows, total, err := usage.Summarize(recs, tc.by)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
			t.Errorf("by %s: keys %v, want %v", tc.by, keys, tc.keys)
		}
		if total.Runs != 3 || total.Failed != 1 || total.Wall != 35 || total.TokensIn != 300 || total.TokensOut != 30 || total.Cost != 0.75 || total.CostRuns != 2 {
			t.Errorf("by %s: total %+v", tc.by, total)
		}
	}
	rows, _, _ := usage.Summarize(recs, "agent")
	if rows[0].Runs != 2 || rows[0].Cost != 0.75 || rows[1].CostRuns != 0 {
		t.Errorf("agent rows %+v", rows)
	}
	if _, _, err := usage.Summarize(recs, "colour"); !errors.Is(err, usage.ErrGrouping) {
		t.Errorf("unknown grouping: %v", err)
	}
	since, _ := usage.Load(s, usage.Filter{Since: now.Add(-time.Hour), Pool: "a"})
	if len(since) != 1 || since[0].Item != "i2" {
		t.Errorf("filter since+pool: %+v", since)
	}
}

func TestBudgets(t *testing.T) {
	s := newStore(t)
	now := time.Now().UTC()
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "empty"}); !errors.Is(err, usage.ErrNoLimit) {
		t.Fatalf("a budget without limits: %v", err)
	}
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "a-daily", Pool: "a", MaxCost: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "all-time", MaxTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	admitA, admitB := usage.Admit(s, "a"), usage.Admit(s, "b")
	if err := admitA(); err != nil {
		t.Fatalf("nothing spent yet: %v", err)
	}
	// Yesterday's spending does not count.
	record(t, s, "a-1", "a", "i0", now.Add(-25*time.Hour), 1000, 0, 0, 0, usd(5))
	if err := admitA(); err != nil {
		t.Fatalf("yesterday counted: %v", err)
	}
	record(t, s, "a-1", "a", "i1", now.Add(-time.Minute), 10, 0, 10, 10, usd(0.6))
	record(t, s, "a-2", "a", "i2", now.Add(-time.Minute), 10, 0, 10, 10, usd(0.6))
	err := admitA()
	if !errors.Is(err, usage.ErrSpent) || !strings.Contains(err.Error(), "cost 1.20 of 1.00 USD") {
		t.Fatalf("pool a over its cost budget: %v", err)
	}
	if err := admitB(); err != nil {
		t.Fatalf("pool b is not limited by a's budget: %v", err)
	}
	record(t, s, "b-1", "b", "i3", now.Add(-time.Minute), 50, 0, 0, 0, nil)
	if err := admitB(); !errors.Is(err, usage.ErrSpent) || !strings.Contains(err.Error(), "drone time 1m10s of 1m0s") {
		t.Fatalf("the all-pools time budget: %v", err)
	}
	spent, err := usage.Spent(s, now)
	if err != nil || len(spent) != 2 {
		t.Fatalf("spent budgets: %v %+v", err, spent)
	}
	// Raising the budget lets the pool go on.
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "a-daily", Pool: "a", MaxCost: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "all-time", MaxTime: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := admitA(); err != nil {
		t.Fatalf("after raising the budget: %v", err)
	}
}

// TestSummarizeDecimalSums: the ledger records times to the millisecond
// and costs to the cent or finer, but summing them as floats printed
// wall_seconds 0.19299999999999998 in usage --json. Totals are the
// decimal sums of what the records say.
func TestSummarizeDecimalSums(t *testing.T) {
	s := newStore(t)
	now := time.Now().UTC().Add(-time.Minute)
	for _, w := range []float64{0.036, 0.109, 0.027, 0.021} {
		record(t, s, "a-1", "", "i1", now, w, 0, 0, 0, usd(0.1))
	}
	record(t, s, "a-1", "", "i1", now, 0.1, 0, 0, 0, usd(0.2))
	recs, errs := usage.Load(s, usage.Filter{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, total, err := usage.Summarize(recs, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := total.Wall, 0.293; got != want {
		t.Errorf("wall: got %v, want %v", got, want)
	}
	if got, want := total.CPU, 0.0293; got != want {
		t.Errorf("cpu: got %v, want %v", got, want)
	}
	if got, want := total.Cost, 0.6; got != want {
		t.Errorf("cost: got %v, want %v", got, want)
	}
}

// TestBudgetSpentFineLimit: a time limit under a second said "drone time
// 0s of 1ms" when 20ms were spent (rounded to the second): spent reads
// in the limit's own unit.
func TestBudgetSpentFineLimit(t *testing.T) {
	s := newStore(t)
	if _, err := usage.SetBudget(s, usage.BudgetChange{Name: "tiny", MaxTime: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	record(t, s, "a-1", "", "i1", time.Now().UTC().Add(-time.Minute), 0.02, 0, 0, 0, nil)
	err := usage.Admit(s, "p")()
	if !errors.Is(err, usage.ErrSpent) || !strings.Contains(err.Error(), "drone time 20ms of 1ms") {
		t.Fatalf("got %v, want drone time 20ms of 1ms", err)
	}
}
