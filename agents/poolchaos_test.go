package agents

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// A pool fills every free slot up to Max while claimable items wait:
// drones busy with long items do not count against a waiting item. Here
// two long items block until the test releases them; a third, added
// while they run, must be done before that (with the old accounting it
// waited for a long item to finish: never, here).
func TestPoolFillsFreeSlots(t *testing.T) {
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{OnEmpty: "terminate"})
	release := filepath.Join(t.TempDir(), "release")
	script := `if [ "$(cat)" = long ]; then while [ ! -e "$RELEASE" ]; do sleep 0.01; done; fi; echo ok`
	t.Setenv("RELEASE", release)
	long1 := mustItem(t, b, "work", "long", "long")
	long2 := mustItem(t, b, "work", "long", "long")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.RunPool(ctx, PoolOptions{Name: "p", Queues: []string{"work"}, Max: 4, Broker: b, Tick: 50 * time.Millisecond,
			Command: []string{"script"}, Drone: helperDrone(m.Store.Root(), "p", []string{"work"}, script)})
		done <- err
	}()
	defer func() { os.WriteFile(release, nil, 0o644); <-done }()
	claimed := func(n int) func() bool {
		return func() bool { st, err := b.Stats("work"); return err == nil && st.Claimed == n }
	}
	waitUntil(t, 60*time.Second, "both long items to be claimed", claimed(2))
	short := mustItem(t, b, "work", "short", "short")
	waitUntil(t, 60*time.Second, "the short item to be done while the long ones run", func() bool {
		it, err := b.Get(short.ID)
		return err == nil && it.State == queues.Done
	})
	// The long items were still running (they wait for the release).
	for _, id := range []string{long1.ID, long2.ID} {
		it, err := b.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != queues.Claimed {
			t.Errorf("long item %s is %s when the short item was done, want claimed", id, it.State)
		}
	}
}

// Timings as ratios: a pool with max N, fed N equal items one at a time
// (each added once the previous one is claimed, as work arrives), takes
// about one item's time, not N: every item gets a free slot at once.
func TestPoolScalesToMaxRatio(t *testing.T) {
	const n = 4
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{OnEmpty: "terminate"})
	script := `sleep 1.5; echo ok`
	runPool := func(items int) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		mustItem(t, b, "work", "job", "x")
		done := make(chan error, 1)
		go func() {
			_, err := m.RunPool(ctx, PoolOptions{Name: "p", Queues: []string{"work"}, Max: n, Broker: b, Tick: 50 * time.Millisecond,
				Command: []string{"script"}, Drone: helperDrone(m.Store.Root(), "p", []string{"work"}, script)})
			done <- err
		}()
		for i := 1; i < items; i++ {
			waitUntil(t, time.Minute, "the last item to be claimed", func() bool {
				st, err := b.Stats("work")
				return err == nil && st.Pending == 0
			})
			mustItem(t, b, "work", "job", "x")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	one := runPool(1)
	all := runPool(n)
	if ratio := all.Seconds() / one.Seconds(); ratio > 2 {
		t.Errorf("%d items arriving one by one took %.1fx one item's time (%v vs %v), want about 1x", n, ratio, all, one)
	}
}

// TestHelperChaosDrone is not a test: a drone (spawn wrapper) of
// TestPoolChaos, in its own process; it records its pid for the killer.
func TestHelperChaosDrone(t *testing.T) {
	dir := os.Getenv("TAVERN_CHAOS_STORE")
	if dir == "" || os.Getenv("TAVERN_CHAOS_ROLE") != "drone" {
		t.Skip("helper process")
	}
	pidFile := filepath.Join(os.Getenv("PIDS"), "wrapper-"+strconv.Itoa(os.Getpid()))
	os.WriteFile(pidFile, nil, 0o644)
	defer os.Remove(pidFile)
	s, err := docstore.Open(dir)
	if err != nil {
		os.Exit(10)
	}
	m, _ := NewManager(s)
	b, _ := queues.Open(s, queues.Options{Journal: m.Journal})
	wait, _ := time.ParseDuration(os.Getenv("TAVERN_TEST_WAIT"))
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: os.Getenv("TAVERN_TEST_AGENT"), Pool: "p",
		Queues: []string{"work"}, Work: QueueWork(b), Wait: wait, Command: []string{"/bin/sh", "-c", chaosScript}, Env: os.Environ()})
	if res != nil {
		fmt.Fprintf(os.Stdout, `{"agent":%q,"outcome":%q,"item":%q,"exit_code":%d,"state":%q}`+"\n", res.Agent, res.Outcome, res.Item, res.ExitCode, res.State)
	}
	if err != nil && res == nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(11)
	}
	os.Exit(0)
}

// TestHelperChaosPool is not a test: the pool of TestPoolChaos, in its own
// process so that it can be SIGKILLed and restarted.
func TestHelperChaosPool(t *testing.T) {
	dir := os.Getenv("TAVERN_CHAOS_STORE")
	if dir == "" || os.Getenv("TAVERN_CHAOS_ROLE") != "pool" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(dir)
	if err != nil {
		os.Exit(10)
	}
	m, _ := NewManager(s)
	b, _ := queues.Open(s, queues.Options{Journal: m.Journal})
	drone := func(agent string, wait time.Duration) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChaosDrone$")
		cmd.Env = append(os.Environ(), "TAVERN_CHAOS_ROLE=drone", "TAVERN_TEST_AGENT="+agent, "TAVERN_TEST_WAIT="+wait.String())
		return cmd
	}
	_, err = m.RunPool(context.Background(), PoolOptions{Name: "p", Queues: []string{"work"}, Max: 6, Broker: b, Tick: 100 * time.Millisecond,
		Command: []string{"chaos"}, Drone: drone})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(11)
	}
	os.Exit(0)
}

// chaosScript executes one item: it holds a lock of the item for as long
// as any process of the execution lives (the sleep inherits it), so a
// second execution that starts while an earlier one still runs cannot
// take it and logs the overlap.
const chaosScript = `
exec 8>>"$LOGDIR/$TAVERN_ITEM.lock"
if ! flock -n 8; then echo "overlap $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"; exit 3; fi
echo "start $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"
: > "$PIDS/child-$$"
sleep 0.05
echo "end $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"
rm -f "$PIDS/child-$$"
echo "did $TAVERN_ITEM"
`

// chaosVictim picks a live process of the run (a drone's wrapper or its
// child) at random: its pid file exists and its environment carries the
// run's marker, so a reused pid is never killed.
func chaosVictim(pids, marker string) (int, string) {
	ents, _ := os.ReadDir(pids)
	rand.Shuffle(len(ents), func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
	// Half the kills prefer a child: children live shorter than wrappers.
	if rand.IntN(2) == 0 {
		sort.SliceStable(ents, func(i, j int) bool {
			return strings.HasPrefix(ents[i].Name(), "child-") && !strings.HasPrefix(ents[j].Name(), "child-")
		})
	}
	for _, e := range ents {
		kind, p, _ := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + p + "/environ")
		if err != nil || !strings.Contains(string(env), marker) || gone(pid) {
			os.Remove(filepath.Join(pids, e.Name()))
			continue
		}
		return pid, kind
	}
	return 0, ""
}

// The pool test of issue 13: a pool of 6 drones over n items while
// wrappers and drones' children are SIGKILLed at random (kills times)
// and the pool itself is SIGKILLed and restarted once. Every item is
// executed at most once per attempt, never while another execution of
// it still runs, and is done exactly once.
func TestPoolChaos(t *testing.T) {
	n, kills := 300, 60
	if raceEnabled || testing.Short() {
		n, kills = 120, 30 // each drone process is several times slower under the race detector
	}
	if v, _ := strconv.Atoi(os.Getenv("TAVERN_CHAOS_ITEMS")); v > 0 {
		n, kills = v, v/5
	}
	poolChaos(t, n, kills)
}

func poolChaos(t *testing.T, n, kills int) {
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{MaxAttempts: 100, Backoff: time.Millisecond, BackoffMax: 10 * time.Millisecond, OnEmpty: "terminate"})
	for i := 0; i < n; i++ {
		mustItem(t, b, "work", "item", "payload")
	}
	logDir, pids := t.TempDir(), t.TempDir()
	marker := "TAVERN_CHAOS_STORE=" + m.Store.Root()
	startPool := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChaosPool$")
		cmd.Env = append(os.Environ(), marker, "TAVERN_CHAOS_ROLE=pool", "LOGDIR="+logDir, "PIDS="+pids)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	doneCount := func() int {
		st, err := b.Stats("work")
		if err != nil {
			return 0
		}
		return st.Done
	}
	pool := startPool()
	deadline := time.Now().Add(8 * time.Minute)
	restarted, killed, wrappers := false, 0, 0
	for killed < kills {
		if time.Now().After(deadline) {
			t.Fatalf("chaos did not finish: %d kills, %d of %d done", killed, doneCount(), n)
		}
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
		if !restarted && doneCount() >= n/3 {
			pool.Process.Signal(syscall.SIGKILL)
			pool.Wait()
			pool = startPool()
			restarted = true
		}
		if doneCount() >= n-10 {
			break // leave the tail to finish: kills need running drones
		}
		pid, kind := chaosVictim(pids, marker)
		if pid == 0 {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
			if kind == "wrapper" {
				wrappers++
			}
		}
	}
	if !restarted {
		pool.Process.Signal(syscall.SIGKILL)
		pool.Wait()
		pool = startPool()
	}
	exited := make(chan error, 1)
	go func() { exited <- pool.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("pool: %v", err)
		}
	case <-time.After(time.Until(deadline) + time.Minute):
		t.Fatalf("the pool did not drain: %d of %d done", doneCount(), n)
	}
	t.Logf("%d items, %d kills (%d wrappers), pool restarted once", n, killed, wrappers)

	// Every item done, exactly once; nothing left claimed or pending.
	st, err := b.Stats("work")
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != n || st.Pending != 0 || st.Claimed != 0 || st.Dead != 0 {
		t.Fatalf("done %d pending %d claimed %d dead %d, want %d done", st.Done, st.Pending, st.Claimed, st.Dead, n)
	}
	completed := map[string]int{}
	for _, e := range events(t, m, queues.EventCompleted) {
		completed[e.Item]++
	}
	for id, c := range completed {
		if c > 1 {
			t.Errorf("item %s completed %d times", id, c)
		}
	}
	// At most one execution per attempt, and never two at once.
	f, err := os.Open(filepath.Join(logDir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	perAttempt := map[string]int{}
	sc := bufio.NewScanner(f)
	overlaps := 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch fs[0] {
		case "overlap":
			overlaps++
			t.Errorf("item %s attempt %s started while an earlier execution of it still ran", fs[1], fs[2])
		case "start":
			perAttempt[fs[1]+" "+fs[2]]++
		}
	}
	for k, c := range perAttempt {
		if c > 1 {
			t.Errorf("item attempt %s executed %d times", k, c)
		}
	}
	if killed < kills/2 {
		t.Errorf("only %d of %d kills landed", killed, kills)
	}
}
