package agents

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

func newBroker(tb testing.TB, m *Manager) *queues.Broker {
	tb.Helper()
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

func mustQueue(tb testing.TB, b *queues.Broker, name string, opt queues.QueueOptions) {
	tb.Helper()
	if _, err := b.CreateQueue(name, opt); err != nil {
		tb.Fatal(err)
	}
}

func mustItem(tb testing.TB, b *queues.Broker, queue, title, body string) *queues.Item {
	tb.Helper()
	it, err := b.Add(queue, queues.AddOptions{Title: title, Body: []byte(body)})
	if err != nil {
		tb.Fatal(err)
	}
	return it
}

// waitUntil re-checks cond until it holds or the deadline passes. It is
// for conditions produced by another process, where there is no event to
// wait on in the test itself.
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSpawnDeliversItemAndEnv(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "build", queues.QueueOptions{})
	it := mustItem(t, b, "build", "compile", "make all\nline two")
	mustAgent(t, m, AgentSpec{Name: "boss"})
	out := filepath.Join(t.TempDir(), "env")
	script := `cat > "$OUT.stdin"; env | grep '^TAVERN_' | sort > "$OUT"; pwd > "$OUT.pwd"; echo working; echo "the result" > "$TAVERN_RESULT"`
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "drone-1", Parent: "boss", Queues: []string{"build"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", script}, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeDone || res.ExitCode != 0 || res.Item != it.ID || res.State != Done || res.Spawns != 1 {
		t.Fatalf("result = %+v", res)
	}
	stdin, _ := os.ReadFile(out + ".stdin")
	if strings.TrimSpace(string(stdin)) != "make all\nline two" {
		t.Errorf("stdin = %q", stdin)
	}
	env, _ := os.ReadFile(out)
	itemPath, _ := m.Store.Abs(queues.ItemPath("build", queues.Claimed, it.ID))
	for _, want := range []string{
		"TAVERN_AGENT=drone-1", "TAVERN_DIR=" + m.Store.Root(), "TAVERN_ITEM=" + it.ID,
		"TAVERN_ITEM_PATH=" + itemPath, "TAVERN_ATTEMPT=1", "TAVERN_PARENT=boss", "TAVERN_QUEUE=build",
	} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if pwd, _ := os.ReadFile(out + ".pwd"); strings.TrimSpace(string(pwd)) != m.ProjectDir() {
		t.Errorf("pwd = %q, want %q", pwd, m.ProjectDir())
	}
	done, err := b.Get(it.ID)
	if err != nil || done.State != queues.Done || done.Result != "the result" {
		t.Fatalf("item = %+v, %v", done, err)
	}
	msgs, err := m.ChannelMessages(messages.DirectChannel("drone-1"))
	if err != nil || len(msgs) != 1 || msgs[0].Text != "working" || msgs[0].Sender != "drone-1" {
		t.Fatalf("captured = %+v, %v", msgs, err)
	}
	a, _ := m.GetAgent("drone-1")
	if a.PID != 0 || a.Host != "" || a.Spawns != 1 {
		t.Errorf("agent after run: %+v", a)
	}
	d, _ := m.GetAgentDoc("drone-1")
	if s, _ := Section(d.Body(), SectionAssignment); !strings.Contains(s, it.ID) {
		t.Errorf("assignment = %q", s)
	}
	if s, _ := Section(d.Body(), SectionMessages); !strings.Contains(s, "working") {
		t.Errorf("recent messages = %q", s)
	}
}

func TestSpawnExitCodes(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{MaxAttempts: 2, Backoff: time.Millisecond})
	bad := mustItem(t, b, "q", "bad", "x")

	// Last stdout lines are the result when there is no TAVERN_RESULT.
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "d", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", "echo compiling >&2; echo 'error: bad thing' >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeFailed || res.ExitCode != 3 || res.State != Failed {
		t.Fatalf("result = %+v", res)
	}
	got, _ := b.Get(bad.ID)
	if got.State != queues.Pending || !strings.Contains(got.LastError, "exit status 3") || !strings.Contains(got.LastError, "error: bad thing") {
		t.Fatalf("item after failure = %s %q", got.State, got.LastError)
	}

	// An agent with commitments goes to verifying on exit 0.
	if _, err := m.AddCommitment("d", "ok", "true", 0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "backoff to pass", func() bool {
		it, _ := b.Get(bad.ID)
		return it.NotBefore.Before(time.Now())
	})
	res, err = m.Spawn(context.Background(), SpawnOptions{Name: "d", Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", "echo one; echo two"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeDone || res.State != Verifying || res.Spawns != 2 {
		t.Fatalf("result = %+v", res)
	}
	got, _ = b.Get(bad.ID)
	if got.State != queues.Done || !strings.HasPrefix(got.Result, "one") {
		t.Fatalf("item = %s %q", got.State, got.Result)
	}
	// In verifying, it cannot be spawned until verified.
	_, err = m.Spawn(context.Background(), SpawnOptions{Name: "d", Command: []string{"true"}})
	wantErr(t, err, ErrBusy)

	// Nothing to claim: ErrNoWork, the agent stays as it was.
	mustAgent(t, m, AgentSpec{Name: "e"})
	res, err = m.Spawn(context.Background(), SpawnOptions{Name: "e", Queues: []string{"q"}, Work: QueueWork(b), Command: []string{"true"}})
	wantErr(t, err, ErrNoWork)
	if res == nil || res.Outcome != OutcomeNoWork || res.State != Idle {
		t.Fatalf("no work result = %+v", res)
	}
}

func TestSpawnSignalForwardedReleasesItem(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustItem(t, b, "q", "long", "x")
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	got := filepath.Join(dir, "got")
	// The child reports the signal it received, then exits 0.
	script := fmt.Sprintf(`trap 'echo TERM > %q; exit 0' TERM; touch %q; while :; do sleep 0.05; done`, got, ready)
	sigs, done, errc := spawnUntilReady(t, m, b, script, ready)
	if a, _ := m.GetAgent("s"); a.State != Working || a.PID == 0 {
		t.Fatalf("running agent = %+v", a)
	}
	sigs <- syscall.SIGTERM
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	res := <-done
	if data, _ := os.ReadFile(got); strings.TrimSpace(string(data)) != "TERM" {
		t.Fatalf("child did not get SIGTERM: %q", data)
	}
	if res.Outcome != OutcomeReleased || !res.Interrupted || res.State != Idle {
		t.Fatalf("result = %+v", res)
	}
	item, _ := b.Get(it.ID)
	if item.State != queues.Pending || item.LastError != "" {
		t.Fatalf("item = %s %q, want pending without error", item.State, item.LastError)
	}
}

func TestSpawnConstitutionChangeRefused(t *testing.T) {
	m := newManager(t)
	m.WriteConstitution("drone", "Do one thing.", ConstitutionOptions{})
	mustAgent(t, m, AgentSpec{Name: "c1", Role: "drone"})
	if _, err := m.Spawn(context.Background(), SpawnOptions{Name: "c1", Command: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	sha2, _ := m.WriteConstitution("drone", "Do one thing. Then another.", ConstitutionOptions{})
	_, err := m.Spawn(context.Background(), SpawnOptions{Name: "c1", Command: []string{"true"}})
	wantErr(t, err, ErrConstitutionChanged)
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "c1", Command: []string{"true"}, AcceptConstitution: true})
	if err != nil || res.State != Done {
		t.Fatalf("accepted spawn: %+v %v", res, err)
	}
	a, _ := m.GetAgent("c1")
	if a.Constitution != sha2 {
		t.Errorf("recorded %s, want %s", a.Constitution, sha2)
	}
	evs := events(t, m, "agent.spawned")
	if last := evs[len(evs)-1]; last.Data["constitution_accepted"] != sha2 {
		t.Errorf("spawn event = %v", last.Data)
	}
}

// A refused spawn changes nothing — not the agent, not the queue — and is
// journaled with its reason.
func TestSpawnRefusedChangesNothing(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "work", queues.QueueOptions{})
	m.WriteConstitution("drone", "Do one thing.", ConstitutionOptions{})
	mustAgent(t, m, AgentSpec{Name: "c1", Role: "drone"})
	if _, err := m.Spawn(context.Background(), SpawnOptions{Name: "c1", Command: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	it := mustItem(t, b, "work", "an item", "body")
	m.WriteConstitution("drone", "Do one thing. Then another.", ConstitutionOptions{})
	agentBefore := readFile(t, m, AgentPath("c1"))
	itemPath := "queues/work/pending/" + it.ID + ".md"
	itemBefore := readFile(t, m, itemPath)

	_, err := m.Spawn(context.Background(), SpawnOptions{Name: "c1", Command: []string{"true"}, Queues: []string{"work"}, Work: QueueWork(b)})
	wantErr(t, err, ErrConstitutionChanged)
	if got := readFile(t, m, AgentPath("c1")); got != agentBefore {
		t.Errorf("agent document changed by a refused spawn:\n%s\nwas:\n%s", got, agentBefore)
	}
	if got := readFile(t, m, itemPath); got != itemBefore {
		t.Errorf("item changed by a refused spawn:\n%s\nwas:\n%s", got, itemBefore)
	}
	evs := events(t, m, "agent.spawn_refused")
	if len(evs) != 1 || evs[0].Agent != "c1" || !strings.Contains(fmt.Sprint(evs[0].Data["reason"]), "constitution") {
		t.Errorf("refusal events: %+v", evs)
	}
}

func readFile(tb testing.TB, m *Manager, rel string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(m.Store.Root(), rel))
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func TestSpawnBusy(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "b1"})
	l, err := m.Store.Lock(schema.AgentLockKey("b1"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	_, err = m.Spawn(context.Background(), SpawnOptions{Name: "b1", Command: []string{"true"}})
	wantErr(t, err, ErrBusy)
	if evs := events(t, m, "agent.spawn_refused"); len(evs) != 1 {
		t.Errorf("refusal events: got %d, want 1", len(evs))
	}
}

// TestHelperProcess is the spawn wrapper run as a separate process by
// TestSpawnWrapperKilled.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("TAVERN_TEST_WRAPPER")
	if dir == "" {
		t.Skip("helper process")
	}
	s, err := docstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := queues.Open(s, queues.Options{Journal: m.Journal})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Spawn(context.Background(), SpawnOptions{Name: os.Getenv("TAVERN_TEST_AGENT"), Queues: []string{"q"}, Work: QueueWork(b),
		Command: []string{"/bin/sh", "-c", os.Getenv("TAVERN_TEST_SCRIPT")}})
	if err != nil {
		t.Fatal(err)
	}
}

// SIGKILL of the wrapper: its child dies with it, the kernel drops the
// liveness locks, the item goes back to pending on the next queue reap and
// the agent is failed on the next agent reap.
func TestSpawnWrapperKilled(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{Lease: time.Hour})
	it := mustItem(t, b, "q", "doomed", "x")
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "TAVERN_TEST_WRAPPER="+m.Store.Root(), "TAVERN_TEST_AGENT=k1",
		"TAVERN_TEST_SCRIPT=touch "+ready+"; exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "child to start", func() bool {
		_, err := os.Stat(ready)
		a, _ := m.GetAgent("k1")
		return err == nil && a.PID != 0
	})
	a, _ := m.GetAgent("k1")
	if a.State != Working || a.PID == 0 {
		t.Fatalf("agent = %+v", a)
	}
	childPID := a.PID
	if alive, _ := m.Alive("k1"); !alive {
		t.Fatal("liveness lock not held while running")
	}
	// Nothing is reaped while the wrapper lives.
	if names, _, err := m.ReapAgents(); err != nil || len(names) != 0 {
		t.Fatalf("reaped a live agent: %v %v", names, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The child dies with its wrapper (Pdeathsig); until it has, it holds
	// the instance's lock and so the item.
	waitUntil(t, 30*time.Second, "the child to die with its wrapper", func() bool { return gone(childPID) })

	rep, err := b.Reap("q")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Returned) != 1 || rep.Returned[0].ID != it.ID {
		t.Fatalf("reap returned %v", rep.Returned)
	}
	if got, _ := b.Get(it.ID); got.State != queues.Pending {
		t.Fatalf("item state %s, want pending", got.State)
	}
	names, _, err := m.ReapAgents()
	if err != nil || len(names) != 1 || names[0] != "k1" {
		t.Fatalf("ReapAgents = %v %v", names, err)
	}
	a, _ = m.GetAgent("k1")
	if a.State != Failed || a.PID != 0 {
		t.Fatalf("agent after reap = %s pid %d", a.State, a.PID)
	}
	if n := len(events(t, m, "agent.reaped")); n != 1 {
		t.Errorf("%d agent.reaped events", n)
	}
	// It can be spawned again.
	res, err := m.Spawn(context.Background(), SpawnOptions{Name: "k1", Queues: []string{"q"}, Work: QueueWork(b), Command: []string{"true"}})
	if err != nil || res.Item != it.ID || res.Attempt != 2 || res.Spawns != 2 {
		t.Fatalf("respawn = %+v %v", res, err)
	}
}

// A queue that names nothing is refused before anything is written: by
// spawn (no new agent, an existing one unchanged), by CreateAgent, and by
// any write of an agent's queues (RuleNames); a queue's on_dead must name
// an existing channel.
func TestUnknownQueueWritesNothing(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "build", queues.QueueOptions{})
	_, err := m.Spawn(context.Background(), SpawnOptions{Name: "s4", Queues: []string{"nosuchq"}, Work: QueueWork(b), Command: []string{"true"}})
	if !errors.Is(err, queues.ErrUnknownQueue) {
		t.Fatalf("spawn --queue nosuchq: %v, want ErrUnknownQueue", err)
	}
	if _, err := m.GetAgent("s4"); !errors.Is(err, docstore.ErrNotExist) {
		t.Errorf("agent s4 after a refused spawn: %v, want none", err)
	}
	if _, err := m.CreateAgent(AgentSpec{Name: "q1", Queues: []string{"biuld"}}); !errors.Is(err, queues.ErrUnknownQueue) || !errors.Is(err, schema.ErrUnknownName) {
		t.Errorf("CreateAgent with queue biuld: %v, want an unknown queue", err)
	}
	if _, err := m.GetAgent("q1"); !errors.Is(err, docstore.ErrNotExist) {
		t.Errorf("agent q1 after a refused create: %v, want none", err)
	}
	mustAgent(t, m, AgentSpec{Name: "q2", Queues: []string{"build"}})
	if _, err := m.EditAgent("q2", func(d *docstore.Doc) error { return d.Set("queues", []string{"build", "nosuchq"}) }); !errors.Is(err, queues.ErrUnknownQueue) {
		t.Errorf("setting q2's queues to a typo: %v, want an unknown queue", err)
	}
	if _, err := b.CreateQueue("q6", queues.QueueOptions{OnDead: "notify nochan"}); !errors.Is(err, schema.ErrUnknownName) {
		t.Errorf("queue with on_dead notify nochan: %v, want an unknown channel", err)
	}
	if _, err := os.Stat(filepath.Join(m.Store.Root(), "queues", "q6")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("queues/q6 after a refused create: %v, want it absent", err)
	}
}

// A run whose item was completed by its own claim (the child's `tavern
// item done "$TAVERN_ITEM"`; here the test does it at the claim's
// attempt) and which is then interrupted was reported released, the
// item done: it is done, interrupted, with the child's exit status.
func TestSpawnSignalAfterOwnDone(t *testing.T) {
	m := newManager(t)
	b := newBroker(t, m)
	mustQueue(t, b, "q", queues.QueueOptions{})
	it := mustItem(t, b, "q", "long", "x")
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	script := fmt.Sprintf(`trap 'exit 7' TERM; touch %q; while :; do sleep 0.05; done`, ready)
	sigs, done, errc := spawnUntilReady(t, m, b, script, ready)
	if _, err := b.CompleteAs(it.ID, 1, "s", "did it"); err != nil {
		t.Fatal(err)
	}
	sigs <- syscall.SIGTERM
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Outcome != OutcomeDone || !res.Interrupted || res.ExitCode != 7 || res.State != Done || res.ItemError != "" {
		t.Fatalf("result = %+v, want done, interrupted, exit 7, agent done", res)
	}
	item, _ := b.Get(it.ID)
	if item.State != queues.Done || item.Result != "did it" {
		t.Fatalf("item = %s %q, want done with its result", item.State, item.Result)
	}
}

// spawnUntilReady runs script as agent s on queue q with a signal
// channel, and returns once the script has created ready and the agent
// records its pid.
func spawnUntilReady(t *testing.T, m *Manager, b *queues.Broker, script, ready string) (chan os.Signal, chan *SpawnResult, chan error) {
	t.Helper()
	sigs := make(chan os.Signal, 1)
	done := make(chan *SpawnResult, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := m.Spawn(context.Background(), SpawnOptions{Name: "s", Queues: []string{"q"}, Work: QueueWork(b),
			Command: []string{"/bin/sh", "-c", script}, Signals: sigs})
		errc <- err
		done <- res
	}()
	waitUntil(t, 10*time.Second, "child to start", func() bool {
		_, err := os.Stat(ready)
		a, _ := m.GetAgent("s")
		return err == nil && a.PID != 0
	})
	return sigs, done, errc
}
