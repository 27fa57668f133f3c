package main

import (
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/queues"
)

func newSpawnCommand() *cli.Command {
	return &cli.Command{
		Name:      "spawn",
		Usage:     "run a command as an agent (the spawn wrapper)",
		ArgsUsage: "-- CMD [ARGS...]",
		Description: `Creates or updates agents/NAME.md, takes the agent's liveness lock for the life
of the child, and with --queue claims one item first (a drone: one task, then
exit). The child runs in the project directory with the item body on stdin and
TAVERN_DIR, TAVERN_AGENT, TAVERN_INSTANCE, TAVERN_PARENT, TAVERN_ITEM, TAVERN_ITEM_PATH,
TAVERN_QUEUE, TAVERN_ATTEMPT, TAVERN_RESULT (a file it may write its result to),
TAVERN_ROLE, TAVERN_CONSTITUTION (the path of the role's constitution; tavern show
"$TAVERN_CONSTITUTION" --body prints its text) and TAVERN_MODEL in its environment. Its
stdout and stderr are captured line by line into the agent's messages
(messages/@NAME/), and copied to the terminal with --tee. A new --name that
is a clear typo of an existing agent's (two adjacent letters swapped: alcie
beside alice) is refused: nothing is written and nothing runs (tavern agent new NAME first
makes it on purpose). A series (coder-2 beside coder, coder-b beside
coder-1) and other near names (bobby beside bob) are new agents.

Exit 0: the item is done (result: the TAVERN_RESULT file, else the last output
lines) and the agent goes to verifying if it has commitments, else done.
Non-zero: the item fails (exit status and stderr tail as last_error) and the
agent goes to failed (a signal: "killed by SIGKILL"). SIGINT/SIGTERM are
forwarded to the child's process group (with SIGCONT, so a stopped child
sees them too), and the group is SIGKILLed if the child has not exited
--kill-grace (10s) after the first; the item is then released, not failed,
and the agent goes back to idle. A child that settles its own item (tavern item done, fail
or release "$TAVERN_ITEM") is taken at its word: failed, the run fails
(exit 1 if the child exited 0); released, the agent goes back to idle
(exit 0); done, the run is done (the agent goes to done or verifying, the
item is never failed or retried) whatever the child's exit status, which is
reported as it was (exit_code) and is the wrapper's exit, as always.

Each run is an instance (TAVERN_INSTANCE, recorded in the agent document and
on the claimed item). The child inherits the instance's liveness lock as
descriptor 3 (keep it open): the item stays claimed while any process of the
child's tree lives. The child runs in its own process group and is killed if
the wrapper dies (Linux); what is left of its group when it exits is killed
before the item is settled. A late done/fail/renew/release from another
instance exits 4.

tavern spawn exits with the child's exit status (128+N if killed by signal N),
or 1 when the child exited 0 but its item failed after it (a rejected gate, a
failed merge or check: the reason is printed and is the item's last_error),
or 128+N when signal N interrupted the wrapper after its child exited 0 (while
it waited at the item's gate: the item is released, not failed),
or 3 when --queue found no item, --name is a typo of an existing agent's
(did you mean) or the command cannot be found (not on
$PATH, no such file: refused before the agent is made, counted or failed,
as pool run's refusal), 4 when a budget is spent (tavern budget:
those of --pool P and of every pool; pool run's own drones were admitted by
the pool, and a spawn that says so but was not started by the pool's live
run is refused) or the agent is busy (another wrapper or
a session runs it; a reaper marking a dead wrapper's agent failed is waited
for, up to 5s) or its role's
constitution changed (--accept-constitution to accept the new one), 2 when a
new agent's --role is refused as agent new refuses it (a new role near one
that has a constitution: did you mean) or --pool names a pool that has not
run, that no budget names, near one that has (did you mean; --new-pool makes
it on purpose).

With --worktree the child runs in its item's own git worktree, on a branch
named after the item, made from --base (TAVERN_WORKTREE, TAVERN_BRANCH,
TAVERN_BASE, TAVERN_REPO are set). When it exits 0 (and the item passed its
gates) the branch goes through the merge queue: one merge at a time per base
(the merge-slot token), rebase (or --merge-mode merge) onto the base, --check
in the worktree, then the base moves by compare-and-swap. A conflict or a
failing check fails the item with the output (retried like any failure);
a signal before the base moves stops the check and releases the item.
An item with a pending complete-stage gate (tavern gate) holds its wrapper
in "waiting" until a person approves or rejects it. The item records that its
work is done (work_done) first: interrupted there, the wrapper gives it back
with its work done, and the next spawn that claims it waits at the gate
without running its command, then finishes (merges) once approved.

Every run whose command starts appends a usage record (tavern usage); a command
that cannot start (not found, not executable) fails the agent with the reason
and releases its item, and the run is journaled, not billed.

Examples:
   tavern spawn --name critic --role reviewer -- claude -p "Review the diff in HEAD" --output-format json
   tavern spawn --queue build --tee -- ./build-one.sh
   tavern spawn --queue code --worktree --check "go test ./..." -- ./agent.sh`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "agent `NAME` (default: a new themed name)"},
			&cli.StringFlag{Name: "role", Usage: "role `R` (constitutions/R.md); an existing agent takes it from this run on, its constitution recorded as at a first spawn"},
			&cli.StringFlag{Name: "parent", Usage: "parent agent `P`; an existing agent takes it from this run on (default: $TAVERN_AGENT, for a new agent only)"},
			&cli.StringSliceFlag{Name: "queue", Usage: "claim one item from `Q` first (repeatable, or Q1,Q2)"},
			&cli.BoolFlag{Name: "steal", Usage: "with --queue: take from other queues when these are empty"},
			waitFlag("with --queue: wait up to `DUR` for an item"),
			&cli.StringFlag{Name: "model", Usage: "model `M` (TAVERN_MODEL)"},
			&cli.StringFlag{Name: "pool", Usage: "the pool `P` this run belongs to (its budgets apply)"},
			&cli.BoolFlag{Name: "new-pool", Usage: "the pool is new on purpose: its name is not refused as a typo of an existing pool"},
			// Set by pool run on its drones only: the pool admitted them
			// against its budgets before it started them.
			&cli.BoolFlag{Name: poolAdmittedFlag, Hidden: true},
			&cli.BoolFlag{Name: "tee", Usage: "copy the child's output to this terminal (with --json: both to stderr)"},
			&cli.BoolFlag{Name: "accept-constitution", Usage: "run under a changed role constitution and record it"},
			&cli.DurationFlag{Name: "kill-grace", Value: agents.DefaultKillGrace, Usage: "after a forwarded signal, SIGKILL the child's group if it has not exited within `DUR` (0: never)", Action: notNegative("kill-grace")},
			jsonFlag(),
		}, worktreeFlags()...),
		Action: runSpawn,
	}
}

func runSpawn(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("spawn needs a command after --")
	}
	// An unset variable (--name "$NAME") must not run a new themed agent.
	if c.IsSet("name") && c.String("name") == "" {
		return usageErr(`--name "": empty; give the agent's name, or leave --name out for a themed one`)
	}
	if err := worktreeAlone(c); err != nil {
		return err
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	// A command that cannot be found is refused before the agent is made,
	// counted a spawn or failed for a typo (exit 3, as pool run's). In
	// --worktree mode a relative one is looked for in the base branch
	// (spawnHooks).
	dir := m.ProjectDir()
	if c.Bool("worktree") {
		dir = ""
	}
	if err := commandFound("spawn", c.Args().First(), dir); err != nil {
		return err
	}
	// Take the signals ourselves (main's context would only say
	// that one came): each is forwarded to the child's group.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	parent, fromCaller := c.String("parent"), false
	if parent == "" {
		parent, fromCaller = envAgent(), true
	}
	opt := agents.SpawnOptions{
		Name: c.String("name"), Role: c.String("role"), Parent: parent, ParentFromCaller: fromCaller, Model: c.String("model"), Pool: c.String("pool"),
		Queues: splitList(c.StringSlice("queue")), Steal: c.Bool("steal"), Wait: c.Duration("wait"),
		Command: c.Args().Slice(), Env: childBaseEnv(), Stdin: c.App.Reader, Signals: sigs,
		AcceptConstitution: c.Bool("accept-constitution"), KillGrace: c.Duration("kill-grace"),
		// A drone of pool run ends with its pool.
		PoolRun: c.Bool(poolAdmittedFlag),
	}
	if opt.KillGrace == 0 {
		opt.KillGrace = -1 // --kill-grace 0: never escalate
	}
	if c.Bool(poolAdmittedFlag) {
		// A pool admits its drones on its own tick (asked again here, a
		// drone refused after the pool's check would count as a crash):
		// the drone proves it is the live run's own (its child, with
		// the run's token), or is refused like an over-budget spawn.
		pool, token, parent := opt.Pool, os.Getenv(agents.PoolAdmissionEnv), os.Getppid()
		opt.Admit = func() error { return agents.CheckPoolAdmission(m.Store, pool, token, parent) }
	} else {
		// Any other spawn answers to the budgets of its pool (if any)
		// and of every pool, and its pool must not be a typo.
		opt.Admit = usage.AdmitSpawn(m.Store, opt.Pool, c.Bool("new-pool"))
	}
	if c.Bool("tee") {
		opt.TeeOut, opt.TeeErr = c.App.Writer, c.App.ErrWriter
		if c.Bool("json") {
			// stdout is the run's one JSON document: the copy for
			// people goes to stderr.
			opt.TeeOut = c.App.ErrWriter
		}
	}
	if len(opt.Queues) > 0 {
		b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
		if err != nil {
			return err
		}
		defer b.Close()
		opt.Work = agents.QueueWork(b)
		if opt.Hooks, err = spawnHooks(c, m.Store, b); err != nil {
			return err
		}
	} else if c.Bool("worktree") {
		return usageErr("--worktree needs --queue: the worktree is the item's")
	}
	res, err := m.Spawn(c.Context, opt)
	return spawnResult(c, res, err)
}

// poolAdmittedFlag marks a drone of pool run (hidden): its pool admitted
// it against the budgets before it started it. Checked: a spawn that is
// not the live pool run's child with its token is refused (exit 4). It
// is interrupted when that pool dies (SpawnOptions.PoolRun).
const poolAdmittedFlag = "admitted-by-pool"

// spawnResult reports a run and gives the wrapper's exit: the child's
// status.
func spawnResult(c *cli.Context, res *agents.SpawnResult, err error) error {
	if res != nil && c.Bool("json") {
		if perr := printJSON(c, res); perr != nil {
			return perr
		}
	} else if res != nil && res.Outcome != agents.OutcomeNoWork {
		errf(c, "tavern: %s: exit %d, %s, agent %s (%s)\n", res.Agent, res.ExitCode, res.Outcome, res.State, res.Duration)
	}
	if err != nil && res != nil && res.ExitCode == 0 && res.Outcome == agents.OutcomeFailed && errors.Is(err, queues.ErrRejected) {
		// A person rejected the item at its gate: it failed after the
		// command succeeded (exit 1, below), not a conflict of ours.
		err = nil
	}
	if err != nil {
		if errors.Is(err, agents.ErrNoWork) && c.Bool("json") {
			return withCode(exitNotFound, errSilent)
		}
		return err
	}
	if res.ExitCode == 0 && res.Outcome == agents.OutcomeFailed {
		// The command succeeded but its item did not (a rejected gate, a
		// failed merge or check): 'spawn ... && deploy' must not go on.
		if !c.Bool("json") {
			errf(c, "tavern: %s: the item failed after the command succeeded: %s\n", res.Agent, firstLine(res.Failure))
		}
		return withCode(exitError, errSilent)
	}
	if res.ExitCode == 0 && res.Outcome == agents.OutcomeReleased && res.Item != "" && res.Interrupted {
		// Interrupted (at a gate, or a child that trapped the signal and
		// exited 0): the item went back undone, so the exit says which
		// signal, as a shell's does.
		code := exitError
		if n := unix.SignalNum(res.InterruptedBy); n != 0 {
			code = 128 + int(n)
		}
		return withCode(code, errSilent)
	}
	if res.ExitCode != 0 && res.Outcome == agents.OutcomeDone && !c.Bool("json") {
		// Only a child that completed its own item gets here: say why
		// a done run exits non-zero.
		errf(c, "tavern: %s: the item is done (its run completed it), but the command exited %d\n", res.Agent, res.ExitCode)
	}
	if res.ExitCode != 0 {
		code := res.ExitCode
		if code < 0 || code > 255 {
			code = exitError
		}
		return withCode(code, errSilent)
	}
	return nil
}

// childBaseEnv is the wrapper's environment minus the TAVERN_* identity of
// the wrapper's own caller (the child gets its own).
func childBaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TAVERN_AGENT", "TAVERN_INSTANCE", "TAVERN_ITEM", "TAVERN_ITEM_PATH", "TAVERN_ATTEMPT", "TAVERN_QUEUE", "TAVERN_RESULT",
			"TAVERN_PARENT", "TAVERN_ROLE", "TAVERN_CONSTITUTION", "TAVERN_MODEL", "TAVERN_DIR",
			agents.PoolAdmissionEnv: // the pool's token is its drones', not their children's
			continue
		}
		out = append(out, kv)
	}
	return out
}
