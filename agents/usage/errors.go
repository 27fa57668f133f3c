package usage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// ErrNearPool is returned (in a *PoolError) by SetBudget (and AdmitSpawn) for a pool that
// has no document and that no budget names, whose name is near one that
// has: most likely a typo, which would write a budget that limits
// nothing. BudgetChange.NewPool writes it anyway.
var ErrNearPool = errors.New("a new pool near an existing one")

// ErrUnreadable is returned (in an *UnreadableError) by Admit for a
// budget document that cannot be read and may apply: a pool pauses and a
// spawn is refused (as for a spent budget) until it is fixed.
var ErrUnreadable = errors.New("budget cannot be read")

// UnreadableError is a budget Admit could not read.
type UnreadableError struct {
	Path string // budgets/NAME.md
	Err  error  // why: the parse or validation error, with its position
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%v (a budget that cannot be read limits nothing: every run it may cover waits until it is fixed, e.g. tavern edit %s)", e.Err, strings.TrimSuffix(e.Path, ".md"))
}

func (e *UnreadableError) Unwrap() []error { return []error{ErrUnreadable, e.Err} }

// ErrNoLimit is returned by SetBudget for a new budget given no limit
// (tokens, cost or time): a budget that limits nothing is not written.
var ErrNoLimit = errors.New("no limit given")

// ErrNearBudget is returned (in a *BudgetError) by SetBudget for a new
// budget whose name is near an existing budget's: most likely a typo of
// the budget meant to be changed, which would leave that one as it was
// and add a second. BudgetChange.NewBudget writes it anyway.
var ErrNearBudget = errors.New("a new budget near an existing one")

// BudgetError is a budget name SetBudget refused; nothing was written.
type BudgetError struct {
	Op   string   // "set budget"
	Path string   // the budget it would have written
	Name string   // the name given
	Near []string // existing budgets, nearest first (schema.Near)
	Err  error    // ErrNearBudget
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s %s: %q names no budget; did you mean %s?", e.Op, e.Path, e.Name, schema.NearList(e.Near))
}

func (e *BudgetError) Unwrap() error { return e.Err }

// PoolError is a pool name SetBudget or AdmitSpawn refused; nothing was
// written.
type PoolError struct {
	Op   string   // "set budget", "spawn --pool", "create pool" (pool run, new pool)
	Path string   // the budget it would have written, or the pool's document
	Pool string   // the pool given
	Near []string // existing pools, nearest first (schema.Near)
	Err  error    // ErrNearPool
}

func (e *PoolError) Error() string {
	if e.Op == "create pool" { // a new pool's name, not a reference to one
		return fmt.Sprintf("%s %s: %q is a new pool near an existing one; did you mean %s?", e.Op, e.Path, e.Pool, schema.NearList(e.Near))
	}
	return fmt.Sprintf("%s %s: %q names no pool; did you mean %s?", e.Op, e.Path, e.Pool, schema.NearList(e.Near))
}

func (e *PoolError) Unwrap() error { return e.Err }
