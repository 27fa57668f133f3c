package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/plans"
)

func newPoolCommand() *cli.Command {
	return &cli.Command{
		Name:  "pool",
		Usage: "run a pool of drones on queues",
		Description: `Run a pool of drones on queues.

Examples:
   tavern pool run builders --queue build,test --max 8 --on-empty terminate -- ./build-one.sh
   tavern pool drain builders --wait 10m`,
		Subcommands: []*cli.Command{{
			Name:      "run",
			Usage:     "keep MIN..MAX drones working on the queues",
			ArgsUsage: "NAME -- CMD [ARGS...]",
			Description: `Each drone is a 'tavern spawn' process (this binary) named NAME-<n> that claims
one item, runs CMD on it (item body on stdin, TAVERN_* in the environment) and
exits. The pool scales with the number of claimable items, replaces drones as
they exit (a crashed drone's item comes back by liveness), and keeps
pools/NAME.md up to date: drones running, items done/failed, throughput,
utilization, amplification, steals. A command that cannot be found is refused
before any drone starts (exit 3); so is a NAME near an existing pool's (dornes
beside drones: a typo that would start a second pool; exit 2, did you mean)
unless --new-pool. Drones that crash in a row (the wrapper dies
before it reports) are replaced after 1s, 2s, 4s... up to 1m, until one reports
or a drone of the pool completes an item (also one whose wrapper was killed
before it could report): a pool that finishes items is not held back.

--on-empty (default: the first queue's on_empty):
   idle       keep --min drones waiting for items
   hibernate  no drones while the queues are empty; wake on new items
   terminate  exit once the queues are drained and nothing is claimed

The summary it ends with says how many items were done and how many died in
the run (went to dead/: items_dead and dead_items in --json). Done
(items_done) counts each item the run's drones completed once, whether its
wrapper reported it or the journal's item.completed names the drone (a
wrapper killed after its item was done). Dead items do
not change the exit status unless --fail-on-dead, which exits 1 when any
died: 'pool run ... --on-empty terminate --fail-on-dead && deploy'. They are
counted in this machine's dead/: with coordination etcd or git, an item that
died on another machine counts only if its death synced here before the run
ended (queue ls shows it meanwhile as dead_elsewhere).

Ctrl-C drains: no new drones, running ones finish, and no drone claims a
new item (an idle one ends its wait and exits; a drone whose command
succeeded and that waits at a human gate runs nothing: its item goes back to
pending with its work done, the pool says how many (at_gates in --json), and
the next run waits at the gate again without running the command).
'tavern pool drain NAME' does the same from another terminal. A second
Ctrl-C forwards SIGTERM to the drones: their items are released, not failed
(a drone's command that has not exited 10s later is killed: spawn
--kill-grace). A pool
that dies (SIGKILL, a crash) takes its drones with it as a second Ctrl-C
would: they get SIGTERM (Linux), or see the pool's liveness lock come free
within a second; a busy drone's item is released, an idle one claims nothing.

--worktree (and its options, as for tavern spawn) gives every drone its item's
own git worktree and merges successful branches through the merge queue.

A budget (tavern budget) that is spent pauses the pool: no new drones until
the next day or a raised budget; pools/NAME.md says why (paused:). With
--on-empty terminate, a pool paused with no drone running stops: it says so
and why on stderr (paused in --json) and exits 4 while items are left; so does
one with nothing to run whose pending items all wait, directly or through
another, on a dead or missing item (blocked in --json). On every
tick the pool syncs the plans of its queues (tavern plan) and escalates dead
letters as their queue's on_dead says.

Example:
   tavern pool run builders --queue build,test --max 8 --on-empty terminate -- ./build-one.sh
   tavern pool run coders --queue code --worktree --check "make test" -- ./agent.sh`,
			Flags: append([]cli.Flag{
				&cli.StringSliceFlag{Name: "queue", Usage: "queue `Q` (repeatable, or Q1,Q2; required)"},
				&cli.IntFlag{Name: "min", Usage: "drones to keep (idle mode)", Value: 0},
				&cli.IntFlag{Name: "max", Usage: "most drones at once", Value: 4, Action: atLeastOne("max", "a pool of no drones does nothing")},
				&cli.StringFlag{Name: "on-empty", Usage: "idle | hibernate | terminate", Action: choiceGiven("on-empty", "idle, hibernate or terminate")},
				&cli.BoolFlag{Name: "steal", Usage: "drones take from other queues when these are empty"},
				&cli.StringFlag{Name: "model", Usage: "model `M` for the drones"},
				&cli.StringFlag{Name: "role", Usage: "role `R` of the drones"},
				&cli.DurationFlag{Name: "idle-wait", Value: time.Minute, Usage: "how long an idle drone waits for an item", Action: positiveDur("idle-wait", "idle drones that do not wait are --on-empty hibernate")},
				&cli.BoolFlag{Name: "quiet", Usage: "no progress line"},
				&cli.BoolFlag{Name: "new-pool", Usage: "NAME is a new pool on purpose: it is not refused as a typo of an existing one"},
				&cli.BoolFlag{Name: "fail-on-dead", Usage: "exit 1 if an item of the queues died (went to dead/ here: a death on another machine counts once synced) during the run"},
				jsonFlag(),
			}, worktreeFlags()...),
			Before: requireFlags("queue"),
			Action: runPoolRun,
		}, newPoolDrainCommand()},
	}
}

func runPoolRun(c *cli.Context) error {
	if c.NArg() < 2 {
		return usageErr("pool run takes NAME -- CMD")
	}
	if err := worktreeAlone(c); err != nil {
		return err
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		return err
	}
	defer b.Close()
	defer startBackgroundSync(c, m.Store, m.Journal)() // sync.go: several machines
	defer openServingProjection(c, m, "tavern pool run", true)()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	name, command := c.Args().First(), c.Args().Slice()[1:]
	if r := c.String("role"); r != "" {
		// Every drone would be refused the role: refuse it once, here.
		if err := m.CheckRole(r); err != nil {
			return err
		}
	}
	dir := m.ProjectDir() // where drones run, and resolve a relative path
	if c.Bool("worktree") {
		dir = "" // the item's worktree, which does not exist yet
	}
	if err := commandFound("pool run", command[0], dir); err != nil {
		return err
	}
	if c.Bool("worktree") {
		// Fail before any drone starts: no repository, no base, a
		// relative command the base (each worktree's start) does not hold.
		ws, err := openWorkspaces(c, m.Store, b)
		if err != nil {
			return err
		}
		if err := ws.CommandFound(c.Context, "pool run", command[0]); err != nil {
			return err
		}
	}
	opt := poolOptions(c, m, b, name, command)
	opt.Interrupt = sigs
	endLine := func() {}
	if !c.Bool("quiet") && !c.Bool("json") {
		// The progress line is for people: none under --json.
		opt.Progress, endLine = progressLine(c)
	}
	// The pool drains on its own signal channel; main's context
	// must not cancel it on the first Ctrl-C.
	mt, err := m.RunPool(contextWithoutCancel(c), opt)
	endLine()
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := printJSON(c, mt); err != nil {
			return err
		}
	} else {
		// The dead count is added only when items died, so the line a
		// script already reads is unchanged for a clean run.
		dead := ""
		if mt.ItemsDead > 0 {
			dead = fmt.Sprintf(" (%d dead)", mt.ItemsDead)
		}
		outf(c, "pool %s: %d done, %d failed%s, %d released, %s, %s spawned (peak %d, %d crashed) in %s; utilization %.2f\n",
			name, mt.ItemsDone, mt.ItemsFailed, dead, mt.ItemsReleased, counted(mt.Steals, "steal"), counted(mt.Spawned, "drone"), mt.PeakDrones, mt.Crashed, mt.Elapsed, mt.Utilization)
		if mt.AtGates > 0 {
			outf(c, "pool %s: %s left at a human gate with the work done (tavern gate ls; once approved, the next run finishes it without running the command)\n", name, counted(mt.AtGates, "item"))
		}
	}
	if left := mt.Pending + mt.Claimed; mt.Paused != "" && left > 0 {
		// A terminating pool stopped by its budget did not drain its
		// queues: 'pool run ... && deploy' must not go on (exit 4, as a
		// spawn a spent budget refuses).
		return withCode(exitConflict, fmt.Errorf("pool %s stopped paused with %s pending: %s", name, counted(left, "item"), mt.Paused))
	}
	if mt.Blocked > 0 {
		// Stopped with items only a person can unblock (retry the dead
		// one): not drained, as above.
		return withCode(exitConflict, fmt.Errorf("pool %s stopped with %s pending that wait on a dead or missing item (tavern queue ls %s)", name, counted(mt.Blocked, "item"), strings.Join(opt.Queues, ",")))
	}
	if c.Bool("fail-on-dead") && mt.ItemsDead > 0 {
		// Drained, but not all of it was done: 'pool run ... && deploy'
		// must not deploy after failed builds. Opt-in: a run that ends
		// with dead letters exited 0 before the flag, and scripts rely
		// on that.
		return withCode(exitError, fmt.Errorf("pool %s: %s died during the run: %s (why: tavern show items/ID; again: tavern queue retry)", name, counted(mt.ItemsDead, "item"), strings.Join(mt.DeadItems, ", ")))
	}
	return nil
}

// commandFound refuses a pool whose command cannot be found before any
// drone starts: each drone would fail to start it and be replaced, a
// crash loop that only fills the journal (exit 3); and a spawn's, before
// its agent is made, counted or failed for a typo. A path
// relative to a directory (./build-one.sh) is resolved in dir, where the
// drones run; in --worktree mode (dir "") it names a file of the item's
// worktree, which does not exist yet: the workspace looks for it in the
// base branch instead (Workspaces.CommandFound).
func commandFound(op, prog, dir string) error {
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		if dir == "" {
			return nil
		}
		if _, err := os.Stat(filepath.Join(dir, prog)); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %s: no such file in %s, where the command runs: %w", op, prog, dir, fs.ErrNotExist)
		}
		return nil
	}
	if _, err := exec.LookPath(prog); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) && errors.Is(ee.Err, exec.ErrNotFound) {
			// exec.ErrNotFound is no fs.ErrNotExist: say both.
			return fmt.Errorf("%s: %w (%w)", op, err, fs.ErrNotExist)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func poolOptions(c *cli.Context, m *agents.Manager, b *queues.Broker, name string, command []string) agents.PoolOptions {
	qs := splitList(c.StringSlice("queue"))
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	parent := envAgent()
	lastTick := ""
	return agents.PoolOptions{
		NewPool: c.Bool("new-pool"),
		// A spent budget pauses the pool (tavern budget).
		Admit: usage.Admit(m.Store, name),
		// Plans follow hand edits; dead letters are escalated.
		OnTick: func() {
			var errs []error
			for _, q := range qs {
				_, err := plans.SyncAll(b, q)
				errs = append(errs, err)
			}
			_, err := m.EscalateDead(b, qs...)
			errs = append(errs, err)
			if err := errors.Join(errs...); err != nil && err.Error() != lastTick {
				lastTick = err.Error()
				poolWarn(c, err)
			}
		},
		Name: name, Queues: qs, Min: c.Int("min"), Max: c.Int("max"), OnEmpty: c.String("on-empty"),
		Steal: c.Bool("steal"), Model: c.String("model"), Command: command, Broker: b, IdleWait: c.Duration("idle-wait"),
		OnError: func(err error) { poolWarn(c, err) },
		Drone: func(agent string, wait time.Duration) *exec.Cmd {
			args := []string{"spawn", "--dir", m.Store.Root(), "--name", agent, "--pool", name, "--" + poolAdmittedFlag, "--json"}
			for _, q := range qs {
				args = append(args, "--queue", q)
			}
			if c.Bool("steal") {
				args = append(args, "--steal")
			}
			if c.String("model") != "" {
				args = append(args, "--model", c.String("model"))
			}
			if c.String("role") != "" {
				args = append(args, "--role", c.String("role"))
			}
			if parent != "" {
				args = append(args, "--parent", parent)
			}
			if wait > 0 {
				args = append(args, "--wait", wait.String())
			}
			args = append(args, worktreeArgs(c)...)
			args = append(args, "--")
			cmd := exec.Command(self, append(args, command...)...)
			cmd.Env = childBaseEnv()
			return cmd
		},
	}
}

// poolWarn reports a problem that does not stop the pool: a line of its
// own under the progress line, or a JSON error object under --json.
func poolWarn(c *cli.Context, err error) {
	if c.Bool("json") {
		warn(c, err)
		return
	}
	errf(c, "\ntavern: %v\n", err)
}

// progressLine rewrites one compact status line on stderr when it is a
// terminal; otherwise (logs, CI) it prints a plain line at most every
// few seconds, so a redirected log stays readable. end finishes a
// terminal's rewritten line; it prints nothing when no line was shown (a
// pool refused before it started leaves no blank line).
func progressLine(c *cli.Context) (show func(agents.PoolMetrics), end func()) {
	last, lastAt, lastState := "", time.Time{}, ""
	tty := isTerminal(c.App.ErrWriter)
	end = func() {
		if tty && last != "" {
			errf(c, "\n")
		}
	}
	return func(p agents.PoolMetrics) {
		line := fmt.Sprintf("%s %s: %s | %d done %d failed | %d pending %d claimed | %.1f/min util %.2f",
			p.Name, p.State, counted(p.Drones, "drone"), p.ItemsDone, p.ItemsFailed, p.Pending, p.Claimed, p.Throughput, p.Utilization)
		if line == last {
			return
		}
		switch {
		case tty:
			fmt.Fprintf(c.App.ErrWriter, "\r%-100s", line)
		// A log line: at once when the state changes, else every 3s
		// at most, in every state (a draining pool's throughput decays
		// at each tick: each line differs).
		case time.Since(lastAt) >= 3*time.Second || p.State != lastState:
			fmt.Fprintln(c.App.ErrWriter, line)
			lastAt, lastState = time.Now(), p.State
		default:
			return
		}
		last = line
	}, end
}

// progressShow is progressLine's line alone, for callers that end it
// themselves (the demos).
func progressShow(c *cli.Context) func(agents.PoolMetrics) {
	show, _ := progressLine(c)
	return show
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
