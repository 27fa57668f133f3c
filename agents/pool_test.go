package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// TestHelperDrone is one drone of TestPool: a spawn wrapper in its own
// process that prints its SpawnResult as JSON, like `tavern spawn --json`.
func TestHelperDrone(t *testing.T) {
	dir := os.Getenv("TAVERN_TEST_DRONE")
	if dir == "" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(dir)
	if err != nil {
		os.Exit(10)
	}
	m, _ := NewManager(s)
	b, _ := queues.Open(s, queues.Options{Journal: m.Journal})
	wait, _ := time.ParseDuration(os.Getenv("TAVERN_TEST_WAIT"))
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: os.Getenv("TAVERN_TEST_AGENT"), Pool: os.Getenv("TAVERN_TEST_POOL"),
		Queues: strings.Split(os.Getenv("TAVERN_TEST_QUEUES"), ","), Work: QueueWork(b), Wait: wait,
		Command: []string{"/bin/sh", "-c", os.Getenv("TAVERN_TEST_SCRIPT")}, Env: os.Environ()})
	if res != nil {
		json.NewEncoder(os.Stdout).Encode(res)
	}
	if err != nil && res == nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(11)
	}
	os.Exit(0)
}

func helperDrone(root, pool string, qs []string, script string) func(string, time.Duration) *exec.Cmd {
	return func(agent string, wait time.Duration) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDrone$")
		cmd.Env = append(os.Environ(), "TAVERN_TEST_DRONE="+root, "TAVERN_TEST_AGENT="+agent, "TAVERN_TEST_POOL="+pool,
			"TAVERN_TEST_QUEUES="+strings.Join(qs, ","), "TAVERN_TEST_WAIT="+wait.String(), "TAVERN_TEST_SCRIPT="+script)
		return cmd
	}
}

// droneScript logs start and end of every run under flock (so the log
// order is the real order), works a little, and fails 10% of the time.
const droneScript = `
exec 9>>"$DRONE_LOG.lock"
flock 9; echo "start $TAVERN_ITEM" >> "$DRONE_LOG"; flock -u 9
sleep 0.02
r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
flock 9; echo "end $TAVERN_ITEM" >> "$DRONE_LOG"; flock -u 9
if [ $((r % 10)) -eq 0 ]; then echo "unlucky $r" >&2; exit 1; fi
echo "did $TAVERN_ITEM"
`

func TestPool(t *testing.T) {
	n, maxDrones := 500, 8
	if raceEnabled || testing.Short() {
		n = 80 // the race detector makes each drone process several times slower
	}
	m := newRelaxedManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{MaxAttempts: 3, Backoff: time.Millisecond, BackoffMax: 5 * time.Millisecond, OnEmpty: "terminate"})
	for i := 0; i < n; i++ {
		if _, err := b.Add("work", queues.AddOptions{Title: "item", Body: []byte("payload")}); err != nil {
			t.Fatal(err)
		}
	}
	logFile := filepath.Join(t.TempDir(), "drones.log")
	t.Setenv("DRONE_LOG", logFile)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mt, err := m.RunPool(ctx, PoolOptions{Name: "p", Queues: []string{"work"}, Min: 1, Max: maxDrones, Broker: b,
		Command: []string{"sh", "-c", "droneScript"}, Drone: helperDrone(m.Store.Root(), "p", []string{"work"}, droneScript),
		OnError: func(err error) { t.Errorf("pool: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("pool did not terminate in time")
	}
	// Every item is done or dead (after max_attempts failures).
	st, err := b.Stats("work")
	if err != nil {
		t.Fatal(err)
	}
	if st.Done+st.Dead != n || st.Pending != 0 || st.Claimed != 0 {
		t.Fatalf("done %d dead %d pending %d claimed %d, want %d done or dead", st.Done, st.Dead, st.Pending, st.Claimed, n)
	}
	if st.Done < n/2 {
		t.Errorf("only %d of %d done at a 10%% failure rate", st.Done, n)
	}
	// Concurrency, measured by the drones themselves.
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cur, peak, starts := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch strings.Fields(sc.Text())[0] {
		case "start":
			cur++
			starts++
		case "end":
			cur--
		}
		peak = max(peak, cur)
	}
	if peak > maxDrones {
		t.Errorf("%d drones ran at once, max is %d", peak, maxDrones)
	}
	if peak < 2 {
		t.Errorf("peak concurrency %d: the pool never ran drones in parallel", peak)
	}
	// The pool's numbers agree with the journal and with the drones.
	count := func(typ string) int { return len(events(t, m, typ)) }
	completed, failed, dead := count(queues.EventCompleted), count(queues.EventFailed), count(queues.EventDead)
	if mt.ItemsDone != completed || mt.ItemsDone != st.Done {
		t.Errorf("pool items_done %d, journal completed %d, queue done %d", mt.ItemsDone, completed, st.Done)
	}
	if mt.ItemsFailed != failed+dead {
		t.Errorf("pool items_failed %d, journal failed %d + dead %d", mt.ItemsFailed, failed, dead)
	}
	if starts != mt.ItemsDone+mt.ItemsFailed {
		t.Errorf("drones ran %d times, pool counted %d", starts, mt.ItemsDone+mt.ItemsFailed)
	}
	if mt.PeakDrones > maxDrones || mt.Crashed != 0 {
		t.Errorf("metrics: %+v", mt)
	}
	d, err := m.Store.Get(PoolPath("p"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Int("items_done"); int(v) != completed {
		t.Errorf("pool document items_done %d, journal %d", v, completed)
	}
	if v, _ := d.Int("items_failed"); int(v) != failed+dead {
		t.Errorf("pool document items_failed %d, journal %d", v, failed+dead)
	}
	if d.String("state") != "stopped" {
		t.Errorf("pool state %q", d.String("state"))
	}
}
