package agents

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// TestHelperWrapper is not a test: a spawn wrapper in its own process
// (the body of `tavern spawn`), for tests that SIGKILL it.
func TestHelperWrapper(t *testing.T) {
	dir := os.Getenv("TAVERN_TEST_WRAPPER")
	if dir == "" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(dir)
	if err != nil {
		os.Exit(10)
	}
	m, _ := NewManager(s)
	b, _ := queues.Open(s, queues.Options{Journal: m.Journal})
	_, err = m.Spawn(context.Background(), SpawnOptions{Name: os.Getenv("TAVERN_TEST_AGENT"), Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", os.Getenv("TAVERN_TEST_SCRIPT")}, Env: os.Environ(),
		OnStart: func(string, int, WorkClaim) { os.Stdout.WriteString("started\n") }})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(11)
	}
	os.Exit(0)
}

// startWrapper runs TestHelperWrapper for agent with script and waits
// until its child runs.
func startWrapper(t *testing.T, m *Manager, agent, script string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWrapper$")
	cmd.Env = append(append(os.Environ(), "TAVERN_TEST_WRAPPER="+m.Store.Root(), "TAVERN_TEST_AGENT="+agent, "TAVERN_TEST_SCRIPT="+script), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(out).ReadString('\n'); line <- l }()
	select {
	case l := <-line:
		if strings.TrimSpace(l) != "started" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("wrapper did not start its child: %q %s", l, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("wrapper did not start its child in 60s")
	}
	return cmd
}

// gone reports whether process pid has exited (a zombie has).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	waitUntil(t, 30*time.Second, file, func() bool {
		b, err := os.ReadFile(file)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	b, _ := os.ReadFile(file)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// orphanScript runs a background grandchild that holds the descriptors
// the child inherited (the instance's lock among them), and waits.
const orphanScript = `sleep 600 & echo $! > "$OUT/gc"; echo $$ > "$OUT/child"; wait`

// SIGKILL of a wrapper: its child dies with it (Pdeathsig), and its
// item is not handed out while a grandchild that inherited the instance
// lock still runs. The agent reaper kills that orphaned tree, and then
// the item comes back.
func TestKilledWrapperItemNeverRunsTwice(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Hour})
	it := mustItem(t, b, "q", "job", "x")
	out := t.TempDir()
	w := startWrapper(t, m, "drone-1", orphanScript, "OUT="+out)
	child, gc := readPID(t, filepath.Join(out, "child")), readPID(t, filepath.Join(out, "gc"))
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()

	waitUntil(t, 30*time.Second, "the child to die with its wrapper", func() bool { return gone(child) })
	if gone(gc) {
		t.Fatal("the grandchild died too: the test needs it alive")
	}
	// The grandchild may still be executing the item: not reaped, not
	// claimable.
	rep, err := b.Reap("q")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Returned)+len(rep.Dead) != 0 {
		t.Fatalf("reaped %d items while a process of the killed run still lives", len(rep.Returned)+len(rep.Dead))
	}
	if _, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}}); !errors.Is(err, queues.ErrEmpty) {
		t.Fatalf("take while the orphan lives: %v, want nothing claimable", err)
	}
	// The agent reaper finds the wrapper dead and kills its tree.
	reaped, _, err := m.ReapAgents()
	if err != nil || len(reaped) != 1 {
		t.Fatalf("ReapAgents = %v, %v", reaped, err)
	}
	waitUntil(t, 30*time.Second, "the orphaned grandchild to be killed", func() bool { return gone(gc) })
	if evs := events(t, m, "agent.orphans_killed"); len(evs) != 1 {
		t.Errorf("%d agent.orphans_killed events, want 1", len(evs))
	}
	rep, err = b.Reap("q")
	if err != nil || len(rep.Returned) != 1 || rep.Returned[0].ID != it.ID {
		t.Fatalf("reap after the tree died: %+v %v, want the item back", rep, err)
	}
}

// A respawn under the name of a killed wrapper is not refused as busy:
// it kills the orphaned tree of the dead instance first, then reclaims
// the item (attempt 2) and completes it. A late completion from the dead
// instance is refused by the fence.
func TestRespawnAfterKilledWrapper(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Hour})
	it := mustItem(t, b, "q", "job", "x")
	out := t.TempDir()
	w := startWrapper(t, m, "drone-1", orphanScript, "OUT="+out)
	gc := readPID(t, filepath.Join(out, "gc"))
	a, _ := m.GetAgent("drone-1")
	deadInstance := a.Instance
	if deadInstance == "" {
		t.Fatal("the agent document records no instance")
	}
	claimed, _ := b.Get(it.ID)
	if claimed.Instance != deadInstance {
		t.Fatalf("claim instance %q, agent instance %q", claimed.Instance, deadInstance)
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()

	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "drone-1", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", "echo second"}})
	if err != nil {
		t.Fatalf("respawn: %v", err)
	}
	if !gone(gc) {
		t.Error("the dead instance's grandchild survived the respawn")
	}
	if res.Outcome != OutcomeDone || res.Item != it.ID || res.Attempt != 2 || res.Instance == deadInstance {
		t.Fatalf("respawn result %+v, want the item done on attempt 2 by a new instance", res)
	}
	// A late action of the dead instance, whatever the name.
	late, err := queues.Open(m.Store, queues.Options{Journal: m.Journal, Instance: deadInstance})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if _, err := late.Complete(it.ID, 0, "late"); !errors.Is(err, queues.ErrStale) {
		t.Errorf("late completion: %v, want ErrStale", err)
	}
	if got, _ := b.Get(it.ID); got.State != queues.Done || got.Result != "second" {
		t.Errorf("item %s %q, want done by the respawn", got.State, got.Result)
	}
}

// A child killed by a signal is reported by the signal's name.
func TestSpawnReportsSignalName(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{Backoff: time.Millisecond})
	it := mustItem(t, b, "q", "job", "x")
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "k", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", "kill -KILL $$"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != "SIGKILL" || res.ExitCode != 128+9 || res.Outcome != OutcomeFailed {
		t.Fatalf("result %+v, want SIGKILL, 137, failed", res)
	}
	got, _ := b.Get(it.ID)
	if !strings.HasPrefix(got.LastError, "killed by SIGKILL") {
		t.Errorf("last_error %q, want \"killed by SIGKILL\"", got.LastError)
	}
}

// Leftovers of a child that exited (a background job in its group) do
// not outlive it: the item is settled only after they are killed.
func TestChildLeftoversKilledBeforeSettle(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	mustItem(t, b, "q", "job", "x")
	out := t.TempDir()
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "bg", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", `sleep 600 >/dev/null 2>&1 & echo $! > "$OUT/gc"; exit 1`}, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeFailed {
		t.Fatalf("outcome %s", res.Outcome)
	}
	gc := readPID(t, filepath.Join(out, "gc"))
	if !gone(gc) {
		t.Fatal("a background job of the child outlived it: its failed item can be handed out while it runs")
	}
}
