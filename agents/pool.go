package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Pool empty-queue behaviours.
const (
	EmptyIdle      = "idle"      // keep min drones waiting for items
	EmptyHibernate = "hibernate" // no drones while empty; wake on new items
	EmptyTerminate = "terminate" // exit once drained and nothing is claimed
)

// PoolOptions configure RunPool.
type PoolOptions struct {
	Name    string
	Queues  []string
	Min     int
	Max     int
	OnEmpty string // idle | hibernate | terminate; "" takes the first queue's on_empty
	Steal   bool
	NewPool bool // Name is new on purpose: not refused as a typo of an existing pool (usage.InstallRules)
	Model   string
	Command []string // the drones' command (recorded in the pool document)
	// Drone builds the process of one drone for agent name: a spawn
	// wrapper (`tavern spawn --name NAME --pool P --queue Q --json -- CMD`)
	// that prints its SpawnResult as JSON on stdout. wait > 0 asks it to
	// wait that long for an item (idle drones).
	Drone  func(agent string, wait time.Duration) *exec.Cmd
	Broker *queues.Broker
	// IdleWait is how long an idle drone waits for an item before it exits
	// and is replaced (default 1m).
	IdleWait time.Duration
	// Tick is the interval of metrics writes and of the rescan that catches
	// backoffs ending (default 1s).
	Tick time.Duration
	// Interrupt: the first signal drains (no new drones; running drones
	// finish), the second forwards SIGTERM to the drones (their items are
	// released). Cancelling ctx drains too.
	Interrupt <-chan os.Signal
	// Progress is called after every change of the metrics.
	Progress func(PoolMetrics)
	// OnError reports drone problems that do not stop the pool.
	OnError func(error)
	// Admit is asked before drones are launched; an error (a spent
	// budget, see agents/usage) pauses the pool: no new drones, running
	// ones finish, the reason is written to the pool document (paused:)
	// and journaled; the pool resumes when Admit passes again. A
	// terminating pool that is paused with nothing running stops.
	Admit func() error
	// OnTick runs on every tick (plans sync, dead-letter escalation).
	OnTick func()
}

// PoolMetrics are the live numbers of a pool (also its document's fields).
type PoolMetrics struct {
	Name          string  `json:"name"`
	State         string  `json:"state"` // running | paused | draining | stopped
	Drones        int     `json:"drones"`
	PeakDrones    int     `json:"peak_drones"`
	Spawned       int     `json:"spawned"`
	Crashed       int     `json:"crashed"`
	ItemsDone     int     `json:"items_done"`
	ItemsFailed   int     `json:"items_failed"`
	ItemsReleased int     `json:"items_released"`
	Steals        int     `json:"steals"`
	Pending       int     `json:"pending"` // ready + waiting items in the pool's queues
	Claimed       int     `json:"claimed"`
	Throughput    float64 `json:"throughput"`    // items done per minute
	Utilization   float64 `json:"utilization"`   // busy drone-seconds / (max x elapsed)
	Amplification float64 `json:"amplification"` // average concurrent drones
	Elapsed       string  `json:"elapsed"`
	// Paused is why no drones are launched (a spent budget), "" when
	// they are: a terminating pool that stops paused says why.
	Paused string `json:"paused,omitempty"`
	// Blocked counts the pending items a terminating pool stopped with
	// because each waits on a dead or missing item (directly or through
	// another) and nothing else was left to run or wait for.
	Blocked int `json:"blocked,omitempty"`
	// ItemsDead counts the items of the pool's queues (every queue's,
	// with Steal) that went to dead/ while it ran, whoever failed them
	// (a drone, its command's own `tavern item fail`, a reap of a claim
	// with no attempts left); DeadItems are their ids. Only the final
	// metrics RunPool returns carry them: ItemsFailed counts attempts,
	// and a failed attempt that is retried and then done is no failure
	// of the run. It is this store's dead/: an item that died on another
	// machine (coordination etcd or git) counts once its death synced
	// here; asking the engine at the start and the end of every run for
	// the deaths it knows of was not worth its round trips.
	ItemsDead int      `json:"items_dead"`
	DeadItems []string `json:"dead_items,omitempty"`
	// AtGates counts the drones a drain interrupted at a human gate, their
	// work done (leaveGates): their items wait for a person, then a run.
	AtGates int `json:"at_gates,omitempty"`
}

// PoolPath is the document path of a pool.
func PoolPath(name string) string { return "pools/" + name + ".md" }

type drone struct {
	name  string
	cmd   *exec.Cmd
	start time.Time
	wait  time.Duration // how long it waits for an item (idle drones)
	// stopped: a drain interrupted it while it waited (stopWaiters).
	stopped bool
	stdout  bytes.Buffer
	stderr  tailBuffer
}

type droneExit struct {
	d   *drone
	res *SpawnResult
	err error
}

// RunPool keeps between Min and Max drones working on the pool's queues:
// each drone is a spawn wrapper process that claims one item, runs the
// command on it and exits. It scales with the number of claimable items,
// replaces drones as they exit (a crashed drone's item comes back by
// liveness), follows the empty-queue behaviour, and keeps pools/<name>.md
// up to date with the metrics. It returns the final metrics when it has
// drained (terminate mode, or after an interrupt).
func (m *Manager) RunPool(ctx context.Context, opt PoolOptions) (*PoolMetrics, error) {
	if err := ValidAgentName(opt.Name); err != nil {
		return nil, err
	}
	if len(opt.Queues) == 0 || opt.Drone == nil || opt.Broker == nil {
		return nil, fmt.Errorf("pool: %w: queues, a drone command and a broker are required", ErrBadPool)
	}
	if opt.Max <= 0 {
		opt.Max = 1
	}
	if opt.Min < 0 || opt.Min > opt.Max {
		return nil, fmt.Errorf("pool: %w: min %d must be between 0 and max %d", ErrBadPool, opt.Min, opt.Max)
	}
	if opt.Tick <= 0 {
		opt.Tick = time.Second
	}
	if opt.IdleWait <= 0 {
		opt.IdleWait = time.Minute
	}
	for _, q := range opt.Queues {
		if _, err := opt.Broker.Queue(q); err != nil {
			return nil, err
		}
	}
	if opt.OnEmpty == "" {
		q, _ := opt.Broker.Queue(opt.Queues[0])
		opt.OnEmpty = q.OnEmpty
		if opt.OnEmpty == "steal" {
			opt.OnEmpty, opt.Steal = EmptyIdle, true
		}
	}
	switch opt.OnEmpty {
	case EmptyIdle, EmptyHibernate, EmptyTerminate:
	default:
		return nil, fmt.Errorf("pool: %w: on_empty %q: want idle, hibernate or terminate%s", ErrBadPool, opt.OnEmpty, schema.ChoiceHint(opt.OnEmpty, []string{"idle", "hibernate", "terminate"}))
	}
	report := func(err error) {
		if err != nil && opt.OnError != nil {
			opt.OnError(err)
		}
	}

	// The drains asked so far, read before the lock is taken: DrainPool
	// counts a drain (drain_requests) whenever a run holds the lock, also
	// before this run's first write, when the document still says what an
	// earlier run left; one counted after this read is this run's (or, at
	// most, that of a run ending as this one starts) and drains it.
	drains := m.poolDrainRequests(opt.Name)
	// The pool's liveness lock, held until the run ends: a document that
	// says running while it is free was left by a runner that died
	// (Doctor: dead-pool).
	lk, ok, err := m.Store.TryLock(schema.PoolLockKey(opt.Name))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &AgentError{Op: "pool run", Path: PoolPath(opt.Name), Err: fmt.Errorf("%w: another process holds its liveness lock", ErrPoolRunning)}
	}
	defer lk.Unlock()
	if testHookPoolLocked != nil {
		testHookPoolLocked(opt.Name)
	}
	// Its drones skip the budget check it made for them: they prove
	// they are its own with this run's token (CheckPoolAdmission).
	admission, err := newAdmission(lk)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lk.WriteNote(nil) }() // the lock's release ends its admissions anyway

	p := &poolRun{m: m, opt: opt, started: time.Now(), running: map[string]*drone{}, admission: admission, launched: map[string]bool{}, doneItems: map[string]bool{}, drainsBefore: drains}
	p.completions, err = journal.End(m.Store.Root())
	report(err) // from the journal's start then: no drone of this run completed anything yet
	p.deadBefore = p.deadItems(report)
	p.metrics.Name, p.metrics.State = opt.Name, "running"
	if err := p.writeDoc(true); err != nil {
		return nil, err
	}
	report(m.event(journal.Event{Type: "pool.started", Kind: "pool", Path: PoolPath(opt.Name),
		Data: map[string]any{"queues": opt.Queues, "min": opt.Min, "max": opt.Max, "on_empty": opt.OnEmpty, "steal": opt.Steal}}))

	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	w, err := watcher.WatchFS(filepath.Join(m.Store.Root(), "queues"), watcher.FSOptions{
		OnChange: func([]watcher.Change) { poke() }, Reconcile: -1, OnDegrade: m.degraded})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	// A drain asked from another process (DrainPool) writes state:
	// draining in the pool's document: its change wakes the run.
	var docChanged atomic.Bool
	docName := opt.Name + ".md"
	dw, err := watcher.WatchFS(filepath.Join(m.Store.Root(), "pools"), watcher.FSOptions{
		OnChange: func(cs []watcher.Change) {
			if slices.ContainsFunc(cs, func(c watcher.Change) bool { return c.Path == docName }) {
				docChanged.Store(true)
				poke()
			}
		}, Reconcile: -1, OnDegrade: m.degraded})
	if err != nil {
		return nil, err
	}
	defer dw.Close()
	exits := make(chan droneExit, opt.Max)
	tick := time.NewTicker(opt.Tick)
	defer tick.Stop()

	draining, forwarded := false, false
	atGate := map[string]bool{} // drones a drain interrupted at a gate
	paused := ""
	quiet := false // drones found no work: launch again only after a change
	var crashes crashBackoff
	ctxDone := ctx.Done()
	for {
		if !draining && (p.drainAsked.Load() || docChanged.Swap(false) && p.askedToDrain()) {
			// DrainPool: as the first Ctrl-C.
			draining = true
			p.drain(report)
		}
		if !draining {
			st, err := p.stats()
			report(err)
			// Fill every free slot while claimable items wait: drones
			// that hold a claim do not count against the ready items;
			// drones that hold none (starting, or waiting for an item)
			// will take one each.
			busy := 0
			for name := range p.running {
				if st.owners[name] > 0 {
					busy++
				}
			}
			want := min(busy+st.ready, opt.Max)
			if opt.OnEmpty == EmptyIdle {
				want = max(want, opt.Min)
			} else if st.ready > 0 {
				want = max(want, min(opt.Min, opt.Max))
			}
			if quiet && st.ready > 0 && opt.OnEmpty != EmptyIdle {
				want = min(want, len(p.running))
			}
			if crashes.holding(time.Now()) {
				want = min(want, len(p.running)) // the tick looks again
			}
			if opt.Admit != nil && want > len(p.running) {
				why := ""
				if err := opt.Admit(); err != nil {
					why = err.Error()
				}
				if why != paused {
					paused = why
					p.setPaused(why)
					report(p.writeDoc(false))
					typ := "pool.resumed"
					if why != "" {
						typ = "pool.paused"
					}
					report(m.event(journal.Event{Type: typ, Kind: "pool", Path: PoolPath(opt.Name), Data: map[string]any{"reason": why}}))
				}
				if paused != "" {
					want = len(p.running)
					if opt.OnEmpty == EmptyTerminate && len(p.running) == 0 {
						break
					}
				}
			}
			for len(p.running) < want {
				wait := time.Duration(0)
				if opt.OnEmpty == EmptyIdle {
					wait = opt.IdleWait
				}
				if err := p.launch(wait, exits); err != nil {
					report(err)
					break
				}
			}
			if opt.OnEmpty == EmptyTerminate && len(p.running) == 0 && st.pending == 0 && st.claimed == 0 {
				break
			}
			if opt.OnEmpty == EmptyTerminate && len(p.running) == 0 && st.claimed == 0 && p.stuck(st) {
				// Nothing runs, and nothing left will be claimable until
				// a person retries a dead item: it would idle for ever.
				p.mu.Lock()
				p.metrics.Blocked = st.pending
				p.mu.Unlock()
				break
			}
		} else if len(p.running) == 0 {
			break
		} else if !forwarded {
			p.leaveGates(atGate)
			p.stopWaiters()
		}
		p.progress()
		select {
		case <-ctxDone:
			ctxDone = nil
			if !draining {
				draining = true
				p.drain(report)
			}
		case sig := <-opt.Interrupt:
			if !draining {
				draining = true
				p.drain(report)
			} else if !forwarded {
				forwarded = true
				for _, d := range p.running {
					_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGTERM)
				}
				report(m.event(journal.Event{Type: "pool.interrupted", Kind: "pool", Path: PoolPath(opt.Name), Data: map[string]any{"signal": sig.String()}}))
			}
		case e := <-exits:
			noWork := p.finish(e, report)
			quiet = noWork
			if p.completedByDrones(report) {
				crashes.progressed()
			}
			if hold := crashes.exited(e.res == nil, time.Now()); hold > 0 {
				report(fmt.Errorf("pool %s: %d drones crashed in a row: the next starts in %s", opt.Name, crashes.streak, hold))
				_ = m.event(journal.Event{Type: "pool.backoff", Kind: "pool", Path: PoolPath(opt.Name),
					Data: map[string]any{"crashed": crashes.streak, "wait": hold.String()}})
			}
		case <-wake:
			quiet = false
		case <-tick.C:
			quiet = false
			if opt.OnTick != nil {
				opt.OnTick()
			}
			if p.completedByDrones(report) {
				crashes.progressed() // launches resume now, not when the wait ends
			}
			report(p.writeDoc(false))
			p.reap(report)
		}
	}
	p.reapWG.Wait()
	p.completedByDrones(report) // a completion journaled as the last drone died
	p.countDead(report)
	p.setState("stopped")
	report(p.writeDoc(false))
	final := p.snapshot()
	report(m.event(journal.Event{Type: "pool.stopped", Kind: "pool", Path: PoolPath(opt.Name), Data: map[string]any{
		"items_done": final.ItemsDone, "items_failed": final.ItemsFailed, "items_dead": final.ItemsDead, "spawned": final.Spawned, "crashed": final.Crashed, "steals": final.Steals}}))
	return &final, nil
}

// crashBackoff spaces out the replacement of drones that keep crashing
// (a wrapper that dies before it reports: a command that kills it, a
// store it cannot open): one crash is replaced at once, as a drone
// SIGKILLed by accident should be; from the second in a row the next
// drone waits 1s, then 2s, 4s... up to maxCrashWait, until a drone
// reports (done, failed, released or no work) or a drone of the pool
// completes an item (progressed: also one whose wrapper then died, so no
// report tells), which ends the streak. Crashes count "in a row" only
// while the pool makes no progress: a pool whose wrappers are killed now
// and then while its drones finish items works, and is not held back.
// Without it a crash-looping pool starts drones as fast as they die.
type crashBackoff struct {
	streak int
	until  time.Time
}

const maxCrashWait = time.Minute

// exited records a drone's exit (crashed: it reported nothing) and
// returns how long launches now wait (0: no new wait).
func (c *crashBackoff) exited(crashed bool, now time.Time) time.Duration {
	if !crashed {
		c.streak, c.until = 0, time.Time{}
		return 0
	}
	c.streak++
	if c.streak < 2 {
		return 0
	}
	wait := maxCrashWait
	if c.streak-2 < 6 {
		wait = min(time.Second<<(c.streak-2), maxCrashWait)
	}
	c.until = now.Add(wait)
	return wait
}

// progressed ends the streak: a drone of the pool completed an item.
func (c *crashBackoff) progressed() { c.streak, c.until = 0, time.Time{} }

// holding reports whether launches wait at now.
func (c *crashBackoff) holding(now time.Time) bool { return now.Before(c.until) }

type poolRun struct {
	m       *Manager
	opt     PoolOptions
	started time.Time
	paused  string // why no drones are launched ("" running)
	// admission is this run's token, in every drone's environment
	// (PoolAdmissionEnv).
	admission string

	mu      sync.Mutex
	metrics PoolMetrics
	running map[string]*drone
	busy    time.Duration // drone-time of finished drones
	next    int
	reaping atomic.Bool // a background reap runs
	reapWG  sync.WaitGroup
	// drainAsked: the document said draining while the run ran
	// (DrainPool): the run drains as at a first Ctrl-C.
	drainAsked atomic.Bool
	// deadBefore holds the items in dead/ when the run started
	// (deadItems): those in dead/ at the end and not here died in it.
	deadBefore map[string]bool
	// launched names the drones this run started (agent names), and
	// completions is where completedByDrones looks next in the journal;
	// both are the pool loop's own.
	launched    map[string]bool
	completions journal.Cursor
	// doneItems are the items (queue/id) this run's drones completed,
	// from their wrappers' reports and from the journal: ItemsDone is
	// how many, so an item counts once whichever told of it, also when
	// its wrapper was killed before it could report. Under mu.
	doneItems map[string]bool
	// drainsBefore is the document's drain_requests before the run took
	// the pool's lock: its first write drains the run if it grew since.
	drainsBefore int
}

// testHookPoolLocked, when set (tests), runs right after RunPool took the
// pool's liveness lock, before the run writes its document: where a drain
// used to be lost.
var testHookPoolLocked func(pool string)

// poolDrainRequests is the drain_requests of pool's document (0 without
// one).
func (m *Manager) poolDrainRequests(pool string) int {
	d, err := m.Store.Get(PoolPath(pool))
	if err != nil {
		return 0
	}
	return docInt(d, "drain_requests")
}

// completedByDrones reports whether a drone of this run completed an
// item since the last look: an item.completed in the journal whose agent
// (the claim's holder) is one of its drones, be it by its wrapper or by
// its command (`tavern item done`), and whether or not the wrapper lived
// to report it. Each such item counts in ItemsDone (once: countDone). A
// completion whose journal line a kill prevented is not seen: that crash
// counts, and the item is not in ItemsDone unless a wrapper reported it.
func (p *poolRun) completedByDrones(report func(error)) bool {
	found := false
	var items []string
	cur, err := journal.ReadFrom(p.m.Store.Root(), p.completions, journal.Filter{Types: []string{queues.EventCompleted}},
		func(e journal.Event, err error) bool {
			if err == nil && p.launched[e.Agent] {
				found = true
				items = append(items, e.Queue+"/"+e.Item)
			}
			return true
		})
	p.completions = cur
	report(err)
	if len(items) > 0 {
		p.mu.Lock()
		for _, key := range items {
			p.countDone(key)
		}
		p.mu.Unlock()
	}
	return found
}

// countDone counts item key (queue/id) as done by the run, once. The
// caller holds mu.
func (p *poolRun) countDone(key string) {
	p.doneItems[key] = true
	p.metrics.ItemsDone = len(p.doneItems)
}

// deadQueues are the queues whose dead items the run answers for: its
// own, and every queue when its drones steal.
func (p *poolRun) deadQueues() ([]string, error) {
	if !p.opt.Steal {
		return p.opt.Queues, nil
	}
	return p.opt.Broker.QueueNames()
}

// deadItems lists the items in the dead/ directories of deadQueues, as
// queue/id. A directory that cannot be read is reported and counts as
// empty.
func (p *poolRun) deadItems(report func(error)) map[string]bool {
	names, err := p.deadQueues()
	report(err)
	out := map[string]bool{}
	for _, q := range names {
		files, err := p.m.Store.Names("queues/" + q + "/" + queues.Dead)
		report(err)
		for _, f := range files {
			if id, ok := strings.CutSuffix(f, ".md"); ok && schema.ValidName(id) == nil {
				out[q+"/"+id] = true
			}
		}
	}
	return out
}

// countDead sets ItemsDead and DeadItems: the items in dead/ now that
// were not when the run started. An item retried and dead again counts
// (it died in this run); one retried and done does not.
func (p *poolRun) countDead(report func(error)) {
	var ids []string
	for key := range p.deadItems(report) {
		if !p.deadBefore[key] {
			ids = append(ids, key[strings.IndexByte(key, '/')+1:])
		}
	}
	slices.Sort(ids)
	p.mu.Lock()
	p.metrics.ItemsDead, p.metrics.DeadItems = len(ids), ids
	p.mu.Unlock()
}

// reap returns claims of dead holders in the pool's queues, and kills and
// marks failed the agents whose wrapper died (Manager.Reap), in the
// background: on every tick (a holder's death is no file event) and at
// once when a drone crashed. One reap at a time.
func (p *poolRun) reap(report func(error)) {
	if !p.reaping.CompareAndSwap(false, true) {
		return
	}
	p.reapWG.Add(1)
	go func() {
		defer p.reapWG.Done()
		defer p.reaping.Store(false)
		_, err := p.m.Reap(p.opt.Broker, p.opt.Queues...)
		report(err)
	}()
}

type poolStats struct {
	ready, pending, claimed int
	blocked, backoff        int            // of the pool's own queues
	owners                  map[string]int // claimed_by -> claims, in every queue looked at
}

func (p *poolRun) stats() (poolStats, error) {
	st := poolStats{owners: map[string]int{}}
	names := p.opt.Queues
	if p.opt.Steal {
		all, err := p.opt.Broker.QueueNames()
		if err != nil {
			return st, err
		}
		names = all
	}
	var errs []error
	for _, n := range names {
		s, err := p.opt.Broker.Stats(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for who, c := range s.Owners {
			st.owners[who] += c
		}
		own := slices.Contains(p.opt.Queues, n)
		if !own && !s.Steal {
			continue
		}
		st.ready += s.Ready
		if own {
			st.pending += s.Pending
			st.claimed += s.Claimed
			st.blocked += len(s.Blocked)
			st.backoff += s.Backoff
		}
	}
	p.mu.Lock()
	p.metrics.Pending, p.metrics.Claimed = st.pending, st.claimed
	p.mu.Unlock()
	return st, errors.Join(errs...)
}

// stuck reports whether the pending items of the pool's queues can never
// become claimable by themselves: some wait on a dead or missing item, and
// none is claimable, in backoff (time readies it) or held at a claim-stage
// gate (a person or a timer readies it). Then every pending item waits,
// directly or through another, on a dead or missing one.
func (p *poolRun) stuck(st poolStats) bool {
	if st.blocked == 0 || st.ready > 0 || st.backoff > 0 {
		return false
	}
	gates, errs := p.opt.Broker.PendingGates()
	if len(errs) > 0 {
		return false
	}
	for _, g := range gates {
		if g.Stage == queues.StageClaim && slices.Contains(p.opt.Queues, g.Queue) {
			return false
		}
	}
	return true
}

// droneName picks the lowest-numbered drone name not running now and not
// waiting for its verifier.
func (p *poolRun) droneName() string {
	for i := 1; ; i++ {
		name := p.opt.Name + "-" + strconv.Itoa(i)
		if _, busy := p.running[name]; busy {
			continue
		}
		if a, err := p.m.GetAgent(name); err == nil && (a.Effective() == Verifying || a.IllegalEdit()) {
			continue
		}
		// A wrapper of another process runs it (a drone of an earlier run
		// of this pool that outlived it): its lock would make our drone
		// exit "busy" at once, again and again.
		if alive, err := p.m.Alive(name); err != nil || alive {
			continue
		}
		return name
	}
}

func (p *poolRun) launch(wait time.Duration, exits chan<- droneExit) error {
	name := p.droneName()
	d := &drone{name: name, cmd: p.opt.Drone(name, wait), start: time.Now(), wait: wait}
	if d.cmd.Env == nil {
		d.cmd.Env = os.Environ()
	}
	d.cmd.Env = append(d.cmd.Env, PoolAdmissionEnv+"="+p.admission)
	d.stderr.max = 4096
	d.cmd.Stdout = &d.stdout
	d.cmd.Stderr = &d.stderr
	// Own process group: a terminal Ctrl-C reaches the pool only, which
	// drains instead of killing its drones mid-item. Pdeathsig: a pool
	// that dies (SIGKILL, a crash) interrupts its drones as a second
	// Ctrl-C would (SIGTERM: the wrapper forwards it to its child and
	// releases the item) instead of leaving them to run unsupervised.
	// Linux sends it when the forking thread ends, so the drone is
	// started, and waited for, from a goroutine locked to its thread.
	// Drones also watch the pool's liveness lock (SpawnOptions.PoolRun)
	// for launchers where the pool is not their parent.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := d.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- d.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pool %s: start drone %s: %w", p.opt.Name, name, err)
	}
	p.launched[name] = true
	p.mu.Lock()
	p.running[name] = d
	p.metrics.Spawned++
	p.metrics.Drones = len(p.running)
	p.metrics.PeakDrones = max(p.metrics.PeakDrones, len(p.running))
	p.mu.Unlock()
	go func() {
		err := <-waited
		var res *SpawnResult
		if out := bytes.TrimSpace(d.stdout.Bytes()); len(out) > 0 {
			var r SpawnResult
			if jerr := json.Unmarshal(out, &r); jerr == nil && r.Outcome != "" {
				res = &r
			}
		}
		exits <- droneExit{d: d, res: res, err: err}
	}()
	return nil
}

// finish accounts for an exited drone; it reports whether the drone found
// no work.
func (p *poolRun) finish(e droneExit, report func(error)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, e.d.name)
	p.metrics.Drones = len(p.running)
	noWork := false
	switch {
	case e.res == nil:
		// The wrapper died without reporting: its item comes back by
		// liveness (the next take or reap), its agent by ReapAgents.
		p.metrics.Crashed++
		p.busy += time.Since(e.d.start)
		report(fmt.Errorf("pool %s: drone %s crashed (%v): %s", p.opt.Name, e.d.name, e.err, e.d.stderr.String()))
		_ = p.m.event(journal.Event{Type: "pool.drone_crashed", Kind: "pool", Path: PoolPath(p.opt.Name), Agent: e.d.name,
			Data: map[string]any{"error": fmt.Sprint(e.err), "stderr": e.d.stderr.String()}})
		p.reap(report)
	case e.res.Outcome == OutcomeNoWork:
		noWork = true
	default:
		p.busy += time.Since(e.d.start)
		switch {
		case e.res.ItemError != "":
			report(fmt.Errorf("pool %s: drone %s: item %s: %s", p.opt.Name, e.d.name, e.res.Item, e.res.ItemError))
		case e.res.Outcome == OutcomeDone:
			p.countDone(e.res.Queue + "/" + e.res.Item)
		case e.res.Outcome == OutcomeFailed:
			p.metrics.ItemsFailed++
		case e.res.Outcome == OutcomeReleased:
			p.metrics.ItemsReleased++
		}
		if e.res.Stolen {
			p.metrics.Steals++
		}
	}
	return noWork
}

// leaveGates, while the pool drains, interrupts (SIGINT) the drones
// whose command has succeeded and that wait at a human gate: they run
// nothing, they wait for a person, so a drain that waited for them would
// last until someone decides. The drone gives its item back with its
// work done (queues.Claim.MarkWorkDone) and exits; the next run of the
// pool waits at the gate again without running the command. Each drone
// is interrupted once (done); a drone that reaches its gate later is
// found at a later turn (its item's write wakes the pool).
func (p *poolRun) leaveGates(done map[string]bool) {
	// A gate that cannot be read is check's to report, not every turn's.
	gates, _ := p.opt.Broker.PendingGates()
	for _, g := range gates {
		if g.Stage != queues.StageComplete {
			continue
		}
		it, err := p.opt.Broker.Get(g.Item)
		if err != nil || it.State != queues.Claimed || it.WorkDone.IsZero() {
			continue
		}
		d, ok := p.running[it.ClaimedBy]
		if !ok || done[d.name] {
			continue
		}
		done[d.name] = true
		p.mu.Lock()
		p.metrics.AtGates++
		p.mu.Unlock()
		_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGINT)
	}
}

// stopWaiters, while the pool drains, interrupts (SIGINT) the drones that
// wait for an item (--on-empty idle) and hold no claim: a drain makes no
// new claims, and left alone they would wait out IdleWait (a minute)
// before the drain could end. A waiting wrapper interrupted claims
// nothing (outcome no_work). Only a drone that holds its agent's lock is
// signalled: it took its signals before it took the lock, so a SIGINT
// cannot kill it as a crash. One that claims an item in the instant
// between the look and the signal forwards it to its command and
// releases the item, as a second Ctrl-C would.
func (p *poolRun) stopWaiters() {
	var waiting []*drone
	for _, d := range p.running {
		if d.wait > 0 && !d.stopped {
			waiting = append(waiting, d)
		}
	}
	if len(waiting) == 0 {
		return
	}
	st, err := p.stats()
	if err != nil {
		return // the next turn looks again
	}
	for _, d := range waiting {
		if st.owners[d.name] > 0 {
			continue
		}
		if free, err := p.m.Store.LockFree(schema.AgentLockKey(d.name)); err != nil || free {
			continue // not in the wrapper's wait yet: a later turn
		}
		d.stopped = true
		_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGINT)
	}
}

func (p *poolRun) setPaused(why string) {
	p.mu.Lock()
	p.paused = why
	p.metrics.Paused = why
	if p.metrics.State == "running" || p.metrics.State == "paused" {
		p.metrics.State = "running"
		if why != "" {
			p.metrics.State = "paused"
		}
	}
	p.mu.Unlock()
}

// drain stops the launches and tells the running drones, through the
// pool's document (state: draining, written now rather than at the next
// tick), to claim nothing more (Manager.poolDraining): an idle drone ends
// its wait at once instead of taking an item, or holding the drain, for
// up to IdleWait; a drone that holds an item finishes it.
func (p *poolRun) drain(report func(error)) {
	p.setState("draining")
	report(p.writeDoc(false))
}

// askedToDrain reports whether the pool's document says draining while
// the run has not drained (DrainPool wrote it).
func (p *poolRun) askedToDrain() bool {
	d, err := p.m.Store.Get(PoolPath(p.opt.Name))
	if err != nil || d.String("state") != "draining" {
		return false
	}
	p.drainAsked.Store(true)
	return true
}

func (p *poolRun) setState(s string) {
	p.mu.Lock()
	p.metrics.State = s
	p.mu.Unlock()
}

func (p *poolRun) snapshot() PoolMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.started)
	busy := p.busy
	for _, d := range p.running {
		busy += time.Since(d.start)
	}
	mt := p.metrics
	if secs := el.Seconds(); secs > 0 {
		mt.Throughput = round2(float64(mt.ItemsDone) / el.Minutes())
		mt.Amplification = round2(busy.Seconds() / secs)
		mt.Utilization = round2(busy.Seconds() / (secs * float64(p.opt.Max)))
	}
	mt.Elapsed = el.Round(time.Millisecond).String()
	return mt
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func (p *poolRun) progress() {
	if p.opt.Progress != nil {
		p.opt.Progress(p.snapshot())
	}
}

// writeDoc creates or updates pools/<name>.md with the configuration and
// the current metrics.
func (p *poolRun) writeDoc(first bool) error {
	mt := p.snapshot()
	now := p.m.now()
	fields := []docstore.Field{
		{Key: "queues", Value: p.opt.Queues}, {Key: "min", Value: p.opt.Min}, {Key: "max", Value: p.opt.Max}, {Key: "on_empty", Value: p.opt.OnEmpty},
		{Key: "steal", Value: p.opt.Steal}, {Key: "state", Value: mt.State}, {Key: "drones", Value: mt.Drones}, {Key: "peak_drones", Value: mt.PeakDrones},
		{Key: "spawned", Value: mt.Spawned}, {Key: "crashed", Value: mt.Crashed}, {Key: "items_done", Value: mt.ItemsDone}, {Key: "items_failed", Value: mt.ItemsFailed},
		{Key: "items_released", Value: mt.ItemsReleased}, {Key: "steals", Value: mt.Steals}, {Key: "throughput", Value: mt.Throughput},
		{Key: "utilization", Value: mt.Utilization}, {Key: "amplification", Value: mt.Amplification}, {Key: "updated", Value: now},
	}
	p.mu.Lock()
	paused := p.paused
	p.mu.Unlock()
	if first {
		fields = append(fields, docstore.Field{Key: "command", Value: p.opt.Command}, docstore.Field{Key: "pid", Value: os.Getpid()}, docstore.Field{Key: "host", Value: p.m.Host}, docstore.Field{Key: "started", Value: now})
		if p.opt.Model != "" {
			fields = append(fields, docstore.Field{Key: "model", Value: p.opt.Model})
		}
	}
	set := func(d *docstore.Doc) error {
		// A drain asked of the running pool (DrainPool) is kept, not
		// overwritten by the metrics of a run that has not seen it yet;
		// one asked between the lock and the first write is counted in
		// drain_requests only (the state said what an earlier run left).
		live := mt.State == "running" || mt.State == "paused"
		asked := live && (!first && d.String("state") == "draining" || first && docInt(d, "drain_requests") != p.drainsBefore)
		if err := d.SetMany(fields); err != nil {
			return err
		}
		if asked {
			p.drainAsked.Store(true)
			if err := d.Set("state", "draining"); err != nil {
				return err
			}
		}
		if first && p.opt.Model == "" {
			// An earlier run's model is not this run's.
			if err := d.Delete("model"); err != nil {
				return err
			}
		}
		if paused != "" {
			return d.Set("paused", paused)
		}
		return d.Delete("paused")
	}
	rel := PoolPath(p.opt.Name)
	if first {
		d, err := docstore.New(schema.Pool, []docstore.Field{{Key: schema.VersionField, Value: schema.Pool.Version}, {Key: "id", Value: docstore.NewID()}, {Key: "created", Value: now}},
			[]byte(poolBody(p.opt.Name, p.opt.Command, p.opt.Queues)))
		if err != nil {
			return err
		}
		if err := set(d); err != nil {
			return err
		}
		if err := p.m.Store.CreateWith(rel, d, docstore.CreateOptions{Force: p.opt.NewPool}); err == nil || !errors.Is(err, docstore.ErrExist) {
			return err
		}
		// An existing pool document (an earlier run): its counters
		// restart, and a body that is the one an earlier run wrote says
		// this run's command (a body edited by hand is kept).
		setFirst := set
		set = func(d *docstore.Doc) error {
			if err := setFirst(d); err != nil {
				return err
			}
			if body := string(d.Body()); poolBodyRe.MatchString(body) {
				d.SetBody([]byte(poolBody(p.opt.Name, p.opt.Command, p.opt.Queues)))
			}
			return nil
		}
	}
	_, err := p.m.Store.Update(rel, set)
	return err
}

// poolBody is the body a pool run writes in its document: what its drones
// run, on which queues. An argument that is not a plain word is quoted
// for the shell, so the command reads as it was given.
func poolBody(name string, command, queues []string) string {
	args := make([]string, len(command))
	for i, a := range command {
		args[i] = shellWord(a)
	}
	return fmt.Sprintf("\n# Pool %s\n\nDrones run `%s` on %s. The numbers above are live while the pool runs.\n", name,
		strings.Join(args, " "), strings.Join(queues, ", "))
}

// poolBodyRe matches a body poolBody wrote (for any run).
var poolBodyRe = regexp.MustCompile("\\A\\n# Pool [^\\n]*\\n\\nDrones run `[^\\n]*` on [^\\n]*\\. The numbers above are live while the pool runs\\.\\n\\z")

// shellWord quotes a word for sh unless it is plain.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// poolWatchEvery is how often a drone looks at its pool's liveness lock
// (SpawnOptions.PoolRun): a flock dropped by a dead process is no file
// event.
const poolWatchEvery = time.Second

// watchPool returns a context cancelled with cause ErrPoolGone once
// nobody holds pool's liveness lock (looked at now, then every
// poolWatchEvery), or when ctx is done; stop ends the watch. An error
// reading the lock is no proof of death: the watch goes on.
func (m *Manager) watchPool(ctx context.Context, pool string) (context.Context, context.CancelFunc) {
	return m.watchCond(ctx, func() error {
		free, err := m.Store.LockFree(schema.PoolLockKey(pool))
		if err == nil && free {
			return &AgentError{Op: "spawn", Path: PoolPath(pool), Err: ErrPoolGone}
		}
		return nil
	})
}

// watchCond returns a context cancelled with check's error as its cause
// once check returns one (asked now, then every poolWatchEvery), or when
// ctx is done; stop ends the watch.
func (m *Manager) watchCond(ctx context.Context, check func() error) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	stop := func() { cancel(context.Canceled) }
	if err := check(); err != nil {
		cancel(err)
		return wctx, stop
	}
	go func() {
		t := time.NewTicker(poolWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if err := check(); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return wctx, stop
}

// poolDraining returns ErrPoolDraining when pool's document says it
// drains (or has stopped): its drones claim nothing more. The run writes
// its state there before it launches a drone and as soon as it drains
// (poolRun.drain). A document that cannot be read is no proof of a drain.
func (m *Manager) poolDraining(pool string) error {
	d, err := m.Store.Get(PoolPath(pool))
	if err != nil {
		return nil
	}
	if st := d.String("state"); st == "draining" || st == "stopped" {
		return &AgentError{Op: "spawn", Path: PoolPath(pool), Err: ErrPoolDraining}
	}
	return nil
}
