package usage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// ErrSpent is returned by Admit when a budget of the pool is spent.
var ErrSpent = errors.New("budget spent")

// Budget is a spending limit per UTC day.
type Budget struct {
	Name      string        `json:"name"`
	Pool      string        `json:"pool,omitempty"` // "": every pool
	Per       string        `json:"per"`
	MaxTokens int64         `json:"max_tokens,omitempty"`
	MaxCost   float64       `json:"max_cost_usd,omitempty"`
	MaxTime   time.Duration `json:"max_time,omitempty"` // nanoseconds in JSON (kept: keys are not retyped)
	// MaxTimeSeconds is MaxTime in seconds, as the ledger counts time.
	MaxTimeSeconds float64 `json:"max_time_seconds,omitempty"`
	Path           string  `json:"path"`
}

// BudgetPath is the document path of a budget.
func BudgetPath(name string) string { return "budgets/" + name + ".md" }

func budgetFromDoc(d *docstore.Doc) Budget {
	b := Budget{Name: d.Name, Pool: d.String("pool"), Per: d.String("per"), Path: d.Path}
	if b.Per == "" {
		b.Per = "day"
	}
	b.MaxTokens, _ = d.Int("max_tokens")
	b.MaxCost = num(d.Fields()["max_cost_usd"])
	b.MaxTime, _ = time.ParseDuration(d.String("max_time"))
	b.MaxTimeSeconds = b.MaxTime.Seconds()
	return b
}

// Budgets reads every budget.
func Budgets(s *docstore.Store) ([]Budget, []error) {
	docs, errs := s.List(schema.Budget)
	var out []Budget
	for _, d := range docs {
		if ve := d.Validate(false); len(ve) > 0 {
			errs = append(errs, &docstore.ValidationError{Path: d.Path, Errors: ve})
			continue
		}
		out = append(out, budgetFromDoc(d))
	}
	return out, errs
}

// BudgetChange is what SetBudget changes: the limits given (> 0; a limit
// left at zero is kept as the budget has it) and, when SetPool is true,
// the pool (Pool "" for every pool). A new budget takes the limits given
// (at least one) and Pool, "" being every pool.
//
// A pool given must have a valid name, and one that has no document and
// that no budget names yet must not be near one that has (a likely typo:
// *PoolError, ErrNearPool), unless NewPool. So must a new budget's name
// not be near an existing budget's (*BudgetError, ErrNearBudget), unless
// NewBudget: set creates or changes, so a typo would create.
type BudgetChange struct {
	Name      string
	Pool      string
	SetPool   bool
	NewPool   bool // the pool is new on purpose: its name is no typo
	NewBudget bool // the budget is new on purpose: its name is no typo
	MaxTokens int64
	MaxCost   float64
	MaxTime   time.Duration
}

// SetBudget creates budget c.Name or changes what c gives of it: raising
// one pool's cost limit must not also widen the budget to every pool or
// drop its time limit (it did, when a change rewrote the whole budget).
func SetBudget(s *docstore.Store, c BudgetChange) (*Budget, error) {
	b := Budget{Name: c.Name, Pool: c.Pool, MaxTokens: c.MaxTokens, MaxCost: c.MaxCost, MaxTime: c.MaxTime}
	if err := schema.ValidName(b.Name); err != nil {
		return nil, fmt.Errorf("budget name: %w", err)
	}
	// !(>= 0) also refuses NaN, which every comparison passes over.
	if b.MaxTokens < 0 || !(b.MaxCost >= 0) || math.IsInf(b.MaxCost, 0) || b.MaxTime < 0 {
		return nil, fmt.Errorf("%w: budget %s: limits are positive and finite", schema.ErrInvalid, b.Name)
	}
	if b.Pool != "" {
		if err := checkPool(s, BudgetPath(b.Name), b.Pool, c.NewPool); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	set := []docstore.Field{}
	var del []string
	if c.SetPool && b.Pool == "" {
		del = append(del, "pool")
	} else if b.Pool != "" {
		set = append(set, docstore.Field{Key: "pool", Value: b.Pool})
	}
	set = append(set, docstore.Field{Key: "per", Value: "day"})
	if b.MaxTokens > 0 {
		set = append(set, docstore.Field{Key: "max_tokens", Value: b.MaxTokens})
	}
	if b.MaxCost > 0 {
		set = append(set, docstore.Field{Key: "max_cost_usd", Value: b.MaxCost})
	}
	if b.MaxTime > 0 {
		set = append(set, docstore.Field{Key: "max_time", Value: b.MaxTime.String()})
	}
	noLimit := fmt.Errorf("%w: budget %s has no limit (tokens, cost or time)", schema.ErrInvalid, b.Name)
	rel := BudgetPath(b.Name)
	// Force: the pool is new on purpose (budgetPoolRule lets it be).
	d, err := s.UpdateWith(rel, docstore.UpdateOptions{Force: c.NewPool}, func(d *docstore.Doc) error {
		if err := d.Edit(append(set, docstore.Field{Key: "updated", Value: now}), del...); err != nil {
			return err
		}
		if after := budgetFromDoc(d); after.MaxTokens <= 0 && after.MaxCost <= 0 && after.MaxTime <= 0 {
			return noLimit
		}
		return nil
	})
	if errors.Is(err, docstore.ErrNotExist) {
		if b.MaxTokens <= 0 && b.MaxCost <= 0 && b.MaxTime <= 0 {
			// An argument missing, not a document the schema refuses.
			return nil, fmt.Errorf("%w: budget %s has no limit (tokens, cost or time)", ErrNoLimit, b.Name)
		}
		// A new budget: its name follows the plain name rule.
		if err := schema.ValidPlainName("budget", b.Name); err != nil {
			return nil, err
		}
		if near := schema.NearNew(b.Name, budgetNames(s)); len(near) > 0 && !c.NewBudget {
			return nil, &BudgetError{Op: "set budget", Path: rel, Name: b.Name, Near: near, Err: ErrNearBudget}
		}
		fields := append([]docstore.Field{{Key: schema.VersionField, Value: schema.Budget.Version}, {Key: "id", Value: docstore.NewID()}}, set...)
		fields = append(fields, docstore.Field{Key: "created", Value: now}, docstore.Field{Key: "updated", Value: now})
		if d, err = docstore.New(schema.Budget, fields, []byte("\nA pool whose budget is spent takes no new items until the next day (UTC).\n")); err != nil {
			return nil, err
		}
		err = s.CreateWith(rel, d, docstore.CreateOptions{Force: c.NewPool})
	}
	if err != nil {
		return nil, err
	}
	out := budgetFromDoc(d)
	return &out, nil
}

// budgetNames lists the names of the budget documents, readable or not (a
// budget broken by a hand edit is still the one a near name meant).
func budgetNames(s *docstore.Store) []string {
	ents, _ := s.Names("budgets")
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e, ".md"); ok {
			names = append(names, n)
		}
	}
	return names
}

// RuleBudgetPool names the rule InstallRules adds.
const RuleBudgetPool = "budgets/pool"

// InstallRules adds the budget rule to s: a write that creates a budget
// with a pool or changes its pool (`tavern new budget`, `tavern set
// budgets/NAME pool=P`, edit) obeys SetBudget's rule for it: the plain
// name rule, and no likely typo of an existing pool (*PoolError,
// ErrNearPool) unless forced (SetBudget's NewPool, as Write.Force).
//
// And a write that creates a pool's document (`tavern pool run NAME`,
// `tavern new pool`) obeys the same rule for its name: a pool near an
// existing one (dornes beside drones) is a typo that would start a second
// pool on the same queues, refused unless forced (agents.PoolOptions.NewPool,
// `pool run --new-pool`).
func InstallRules(s *docstore.Store) {
	s.AddRule(RuleBudgetPool, func(w docstore.Write) error { return budgetPoolRule(s, w) })
	s.AddRule(RulePoolName, func(w docstore.Write) error { return poolNameRule(s, w) })
}

// RulePoolName names the rule on a new pool's name (InstallRules).
const RulePoolName = "pools/name"

func poolNameRule(s *docstore.Store, w docstore.Write) error {
	if w.Op != "create" || w.Doc == nil || w.Doc.Kind != schema.Pool || w.Force {
		return nil
	}
	if _, err := s.Stat(w.Path); err == nil {
		return nil // an earlier run's document: the create fails as existing
	}
	pool := strings.TrimSuffix(strings.TrimPrefix(w.Path, "pools/"), ".md")
	names := PoolNames(s)
	budgets, _ := Budgets(s)
	for _, b := range budgets {
		if b.Pool == pool {
			return nil // a budget was set for it first: expected
		}
		if b.Pool != "" {
			names = append(names, b.Pool)
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == pool }) // an earlier run's: not new
	slices.Sort(names)
	// NearNew: drones-2 beside drones-1 is a series, not a typo.
	if near := schema.NearNew(pool, slices.Compact(names)); len(near) > 0 {
		// Not "pool run": `tavern new pool` meets the rule too.
		return &PoolError{Op: "create pool", Path: w.Path, Pool: pool, Near: near, Err: ErrNearPool}
	}
	return nil
}

func budgetPoolRule(s *docstore.Store, w docstore.Write) error {
	if w.Doc == nil || w.Doc.Kind != schema.Budget || (w.Prev != nil && w.Prev.Kind != schema.Budget) {
		return nil
	}
	pool := w.Doc.String("pool")
	if pool == "" || (w.Prev != nil && pool == w.Prev.String("pool")) {
		return nil
	}
	return checkPool(s, w.Path, pool, w.Force)
}

// checkPool is the rule for the pool a budget at path is given.
func checkPool(s *docstore.Store, path, pool string, newPool bool) error {
	if err := schema.ValidPlainName("pool", pool); err != nil {
		return err
	}
	if _, near := PoolKnown(s, pool); len(near) > 0 && !newPool {
		return &PoolError{Op: "set budget", Path: path, Pool: pool, Near: near, Err: ErrNearPool}
	}
	return nil
}

// PoolKnown reports whether pool has a document (a pool that ran) and,
// when it has none and no budget names it, the pools near its name
// (schema.Near over the pools' documents and the budgets' pools), nearest
// first: a budget of such a name would most likely limit nothing.
func PoolKnown(s *docstore.Store, pool string) (exists bool, near []string) {
	if _, err := s.Stat(agents.PoolPath(pool)); err == nil {
		return true, nil
	}
	names := PoolNames(s)
	budgets, _ := Budgets(s)
	for _, b := range budgets {
		if b.Pool == pool {
			return false, nil
		}
		if b.Pool != "" {
			names = append(names, b.Pool)
		}
	}
	slices.Sort(names)
	return false, schema.Near(pool, slices.Compact(names))
}

// State is a budget and what was spent against it today.
type State struct {
	Budget
	Day   string `json:"day"`
	Spent Row    `json:"spent"`
	// Over lists the limits reached ("cost 1.20 of 1.00 USD").
	Over []string `json:"over,omitempty"`
}

// Exhausted reports whether a limit is reached.
func (st State) Exhausted() bool { return len(st.Over) > 0 }

func (st State) String() string {
	return fmt.Sprintf("budget %s (%s) is spent for %s: %s", st.Name, st.Path, st.Day, strings.Join(st.Over, ", "))
}

// Check evaluates the budgets that apply to pool (those naming it, and
// those naming no pool; pool "" takes every budget) against the records
// of the current UTC day.
func Check(s *docstore.Store, pool string, now time.Time) ([]State, error) {
	budgets, errs := Budgets(s)
	day := now.UTC().Truncate(24 * time.Hour)
	recs, rerrs := Load(s, Filter{Since: day})
	errs = append(errs, rerrs...)
	var out []State
	for _, b := range budgets {
		if pool != "" && b.Pool != "" && b.Pool != pool {
			continue
		}
		st := State{Budget: b, Day: day.Format("2006-01-02")}
		for _, r := range recs {
			if b.Pool == "" || r.Pool == b.Pool {
				st.Spent.add(r)
			}
		}
		if b.MaxTokens > 0 && st.Spent.Tokens() >= b.MaxTokens {
			st.Over = append(st.Over, fmt.Sprintf("tokens %d of %d", st.Spent.Tokens(), b.MaxTokens))
		}
		if b.MaxCost > 0 && st.Spent.Cost >= b.MaxCost {
			st.Over = append(st.Over, fmt.Sprintf("cost %.2f of %.2f USD", st.Spent.Cost, b.MaxCost))
		}
		if b.MaxTime > 0 && time.Duration(st.Spent.Wall*float64(time.Second)) >= b.MaxTime {
			// To the second, unless the limit is finer: "0s of 1ms" read
			// as nothing spent.
			unit := time.Second
			if b.MaxTime%time.Second != 0 {
				unit = time.Millisecond
			}
			st.Over = append(st.Over, fmt.Sprintf("drone time %s of %s", time.Duration(st.Spent.Wall*float64(time.Second)).Round(unit), b.MaxTime))
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// Admit is the admission hook of a pool (agents.PoolOptions.Admit) or,
// with pool "", of a spawn that belongs to no pool
// (agents.SpawnOptions.Admit): nil while every budget that applies has
// room — the pool's own and those of every pool (no pool:); pool "" only
// the latter — else an error wrapping ErrSpent that says which and why.
// A ledger it cannot read does not stop the work (the error is not
// ErrSpent and Admit lets it pass), but a budget it cannot read that may
// apply does (*UnreadableError, ErrUnreadable): left out, it would limit
// nothing.
func Admit(s *docstore.Store, pool string) func() error {
	return func() error {
		if err := unreadableBudget(s, pool); err != nil {
			return err
		}
		states, _ := Check(s, pool, time.Now())
		var over []string
		for _, st := range states {
			if st.Pool != "" && st.Pool != pool {
				continue // Check with pool "" returns every budget
			}
			if st.Exhausted() {
				over = append(over, st.String())
			}
		}
		if len(over) == 0 {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrSpent, strings.Join(over, "; "))
	}
}

// unreadableBudget is the refusal of a budget document that cannot be
// read (a hand edit: max_time: 2 hours) and may apply to pool: its pool
// is pool or every pool, or cannot be read either. Left out, it would
// limit nothing, and a budget is there to bound what is spent. A budget
// of another pool (its pool: readable) does not refuse this one.
func unreadableBudget(s *docstore.Store, pool string) error {
	_, errs := Budgets(s)
	for _, e := range errs {
		path, _, _ := docstore.Position(e)
		if !strings.HasPrefix(path, "budgets/") {
			continue
		}
		if d, err := s.Get(path); err == nil {
			if p, ok := d.Fields()["pool"].(string); ok && p != "" && p != pool {
				continue
			}
		}
		return &UnreadableError{Path: path, Err: e}
	}
	return nil
}

// AdmitSpawn is the admission hook of `tavern spawn`
// (agents.SpawnOptions.Admit) run by hand or by a script, pool "" or not:
// a pool given must not be a likely typo of an existing one (the rule of a
// budget's pool, *PoolError wrapping ErrNearPool, unless newPool), and the
// budgets that apply to it must have room (Admit). A pool's own drones are
// admitted by their pool before it starts them (agents.PoolOptions.Admit),
// not again here: the pool would take a drone refused a moment after its
// own check for a crash.
func AdmitSpawn(s *docstore.Store, pool string, newPool bool) func() error {
	admit := Admit(s, pool)
	return func() error {
		if pool != "" && !newPool {
			if _, near := PoolKnown(s, pool); len(near) > 0 {
				return &PoolError{Op: "spawn --pool", Path: agents.PoolPath(pool), Pool: pool, Near: near, Err: ErrNearPool}
			}
		}
		return admit()
	}
}

// Spent lists the spent budgets of today: the needs-you list's budgets.
func Spent(s *docstore.Store, now time.Time) ([]State, error) {
	states, err := Check(s, "", now)
	var out []State
	for _, st := range states {
		if st.Exhausted() {
			out = append(out, st)
		}
	}
	return out, err
}
