// Package usage reads the usage ledger — usage/<agent>/<id>.md, one
// append-only record per spawn, written by the spawn wrapper (package
// agents) — totals it, and keeps pools within their budgets.
//
// # Basics
//
// Load reads the records that match a Filter (since, until, pool, agent,
// item; Unknown names the filter's names that name nothing, typos);
// Summarize groups them by agent, item, pool, queue, model or day
// into Rows: runs, failures, wall and CPU seconds, tokens in and out, and
// cost. Cost is summed over the runs that reported one; CostRuns says how
// many did, so a total is never presented as more complete than it is.
//
// A budget, budgets/<name>.md, bounds what one pool (or, with no pool:,
// every pool) may spend per UTC day: max_tokens (in + out), max_cost_usd,
// max_time (drone wall time). Check compares today's ledger with the
// budgets that apply to a pool; Admit turns that into the pool's
// admission hook (agents.PoolOptions.Admit): a pool whose budget is spent
// takes no new items — the drones running finish — says why in its
// document (paused:) and resumes the next day or when the budget is
// raised. With pool "" it is a spawn's (agents.SpawnOptions.Admit): a
// spawn of no pool is refused while a budget of every pool is spent.
// Spent lists the spent budgets for the "needs you" list (`tavern ui
// --json --lens needs`, kind budget).
//
// # Caveats
//
//   - A record is written when its spawn ends: drones running when a
//     budget is reached still finish, so a budget can be overshot by what
//     they spend.
//   - Tokens and cost are what the agent CLI reported (see agents.ParseUsage);
//     a command that reports nothing counts for wall time only.
//   - Days are UTC days, as in the journal.
package usage
