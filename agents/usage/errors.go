package usage

import (
	"errors"
	"fmt"

	"github.com/tavernhq/tavern/schema"
)

// ErrNearPool is returned (in a *PoolError) by SetBudget (and AdmitSpawn) for a pool that
// has no document and that no budget names, whose name is near one that
// has: most likely a typo, which would write a budget that limits
// nothing. BudgetChange.NewPool writes it anyway.
var ErrNearPool = errors.New("a new pool near an existing one")

// PoolError is a pool name SetBudget or AdmitSpawn refused; nothing was
// written.
type PoolError struct {
	Op   string   // "set budget", "spawn --pool"
	Path string   // the budget it would have written, or the pool's document
	Pool string   // the pool given
	Near []string // existing pools, nearest first (schema.Near)
	Err  error    // ErrNearPool
}

func (e *PoolError) Error() string {
	return fmt.Sprintf("%s %s: %q names no pool; did you mean %s?", e.Op, e.Path, e.Pool, schema.NearList(e.Near))
}

func (e *PoolError) Unwrap() error { return e.Err }
