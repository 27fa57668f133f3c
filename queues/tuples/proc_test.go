package tuples

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// The test binary re-executes itself as worker processes: TestTupleHelper
// runs the mode named by TAVERN_TUPLE_HELPER against the store in
// TAVERN_DIR and reports on stdout.
const helperEnv = "TAVERN_TUPLE_HELPER"

func TestTupleHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	s, err := docstore.Open(os.Getenv("TAVERN_DIR"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	sp, err := NewSpace(s, SpaceOptions{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	switch mode {
	case "in": // take until a stop tuple; print every id taken
		fmt.Fprintln(w, "ready")
		w.Flush()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			tu, err := sp.In(ctx, "job", nil)
			cancel()
			if err != nil {
				fmt.Fprintln(w, "error:", err)
				w.Flush()
				os.Exit(1)
			}
			fmt.Fprintln(w, tu.ID)
			if tu.Values()["stop"] == true {
				w.Flush()
				os.Exit(0)
			}
		}
	case "hold-token": // acquire a slot for the life of this process
		tok, err := sp.TryAcquire("merge", AcquireOptions{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(tok.Handle())
		io.Copy(io.Discard, os.Stdin) // until killed
	case "reserve-process": // reserve for the life of this process
		if _, err := sp.Reserve(os.Getenv("TAVERN_AGENT"), []string{"src/**"}, ReserveOptions{Process: true}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("reserved")
		io.Copy(io.Discard, os.Stdin) // until killed
	case "agent": // stand in for an agent's spawn wrapper
		l, err := s.Lock(schema.AgentLockKey(os.Getenv("TAVERN_AGENT")))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		defer l.Unlock()
		fmt.Println("alive")
		io.Copy(io.Discard, os.Stdin)
	}
	os.Exit(0)
}

type tupleHelper struct {
	cmd   *exec.Cmd
	lines chan string
}

// startTupleHelper starts the test binary as a helper process in mode.
func startTupleHelper(tb testing.TB, sp *Space, mode string, env ...string) *tupleHelper {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTupleHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "TAVERN_DIR="+sp.Store().Root())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // held open: the helper blocks on it
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	h := &tupleHelper{cmd: cmd, lines: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return h
}

// line waits for the helper's next output line.
func (h *tupleHelper) line(tb testing.TB) string {
	tb.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			tb.Fatal("helper exited")
		}
		if strings.HasPrefix(l, "error:") {
			tb.Fatal("helper: " + l)
		}
		return l
	case <-time.After(30 * time.Second):
		tb.Fatal("helper said nothing for 30s")
	}
	return ""
}

// kill SIGKILLs the helper and waits until it is gone (its flocks are
// released by the kernel when its last descriptor closes, at exit).
func (h *tupleHelper) kill(tb testing.TB) {
	tb.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	h.cmd.Wait()
}

// TestInRaceProcesses: 4 processes blocked in `in` race for 1,000 tuples
// written while they wait; every tuple is consumed exactly once, none is
// left, and the journal agrees.
func TestInRaceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process race")
	}
	const workers, n = 4, 1000
	sp := newSpace(t, SpaceOptions{})
	var hs []*tupleHelper
	for i := 0; i < workers; i++ {
		h := startTupleHelper(t, sp, "in")
		if got := h.line(t); got != "ready" {
			t.Fatalf("worker said %q", got)
		}
		hs = append(hs, h)
	}
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[out(t, sp, "job", "n", i).ID] = true
	}
	for i := 0; i < workers; i++ {
		want[out(t, sp, "job", "stop", true).ID] = true
	}
	seen := map[string]int{}
	for _, h := range hs {
		for l := range h.lines {
			if strings.HasPrefix(l, "error:") {
				t.Fatalf("worker: %s", l)
			}
			seen[l]++
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("consumed %d distinct tuples, want %d", len(seen), len(want))
	}
	for id, c := range seen {
		if !want[id] || c != 1 {
			t.Fatalf("tuple %s consumed %d times (known: %v)", id, c, want[id])
		}
	}
	if left, _ := sp.List("job", nil); len(left) != 0 {
		t.Fatalf("%d tuples left", len(left))
	}
	trash, _ := filepath.Glob(filepath.Join(sp.Store().Root(), ".trash", "*-tuples__job__*.md"))
	if len(trash) != len(want) {
		t.Fatalf("%d tuples archived, want %d", len(trash), len(want))
	}
	ins := map[string]int{}
	for _, e := range tupleEvents(t, sp, "tuple.in") {
		ins[e.Data["id"].(string)]++
	}
	if len(ins) != len(want) {
		t.Fatalf("journal has %d tuple.in ids, want %d", len(ins), len(want))
	}
	for id, c := range ins {
		if c != 1 {
			t.Fatalf("journal: %s taken %d times", id, c)
		}
	}
}

// TestTokenHolderKilled: a slot held by a process comes back when the
// process is SIGKILLed, to a waiting Acquire, without any release.
func TestTokenHolderKilled(t *testing.T) {
	sp := newSpace(t, SpaceOptions{LivenessPoll: 50 * time.Millisecond})
	if _, err := sp.InitToken("merge", 1); err != nil {
		t.Fatal(err)
	}
	h := startTupleHelper(t, sp, "hold-token")
	handle := h.line(t)
	if _, err := sp.TryAcquire("merge", AcquireOptions{}); !errors.Is(err, ErrTokenBusy) {
		t.Fatalf("acquire while held: %v, want ErrTokenBusy", err)
	}
	// Nobody else can release a slot a live process holds.
	if err := sp.ReleaseToken("merge", handle, ReleaseOptions{}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("release of a live process's slot: %v, want ErrNotHolder", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		tok, err := sp.Acquire(ctx, "merge", AcquireOptions{})
		if err == nil {
			err = tok.Release()
		}
		got <- err
	}()
	h.kill(t)
	if err := <-got; err != nil {
		t.Fatalf("acquire after the holder was killed: %v", err)
	}
	ev := tupleEvents(t, sp, "token.reclaimed")
	if len(ev) != 1 || ev[0].Data["reason"] != "holder process died" {
		t.Fatalf("journal token.reclaimed = %+v", ev)
	}
}

// TestTokenAgentDied: a slot acquired --as an agent by a one-shot caller
// stays held while the agent's wrapper lives and comes back when it is
// killed.
func TestTokenAgentDied(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("quota", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.TryAcquire("quota", AcquireOptions{As: "alice"}); !errors.Is(err, ErrHolderNotAlive) {
		t.Fatalf("acquire for an agent with no live wrapper: %v, want ErrHolderNotAlive", err)
	}
	h := startTupleHelper(t, sp, "agent", "TAVERN_AGENT=alice")
	if got := h.line(t); got != "alive" {
		t.Fatalf("agent helper said %q", got)
	}
	tok, err := sp.TryAcquire("quota", AcquireOptions{As: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Hold != HoldAgent {
		t.Fatalf("hold = %s, want %s", tok.Hold, HoldAgent)
	}
	tok.Detach() // as a one-shot CLI exits
	if _, err := sp.TryAcquire("quota", AcquireOptions{}); !errors.Is(err, ErrTokenBusy) {
		t.Fatalf("acquire while alice lives: %v, want ErrTokenBusy", err)
	}
	h.kill(t)
	tok2, err := sp.TryAcquire("quota", AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire after alice died: %v", err)
	}
	if tok2.Epoch != tok.Epoch+1 {
		t.Fatalf("epoch = %d, want %d", tok2.Epoch, tok.Epoch+1)
	}
	// The dead agent's stale handle cannot free the new holding.
	if err := sp.ReleaseToken("quota", tok.Handle(), ReleaseOptions{}); !errors.Is(err, ErrNotHolder) {
		t.Fatalf("stale release: %v, want ErrNotHolder", err)
	}
	if err := tok2.Release(); err != nil {
		t.Fatal(err)
	}
}
