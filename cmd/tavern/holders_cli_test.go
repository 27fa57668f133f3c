package main

// Token slots and reservations held by a spawned agent, SIGKILLed, and
// a late release from the dead instance (issue 15), through the built
// binary with real processes: `tavern spawn` wrappers, one-shot CLI
// holders and waiters.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spawnedHolder is an agent run by `tavern spawn` whose child takes a
// merge slot and reserves src/**, writes its instance, slot handle and
// reservation id into files, then sleeps until killed.
type spawnedHolder struct {
	wrapper       *exec.Cmd
	child         int // pid (and process group) of the child
	instance      string
	handle, resID string
}

func spawnHolder(t *testing.T, dir, agent, instance, tag string) *spawnedHolder {
	t.Helper()
	files := filepath.Join(t.TempDir(), tag)
	script := fmt.Sprintf(`set -e
printf %%s "$TAVERN_INSTANCE" > %[2]s.instance
%[1]s token acquire merge > %[2]s.handle
%[1]s reserve 'src/**' --ttl 1h --json > %[2]s.reserve
echo $$ > %[2]s.ready
exec sleep 600`, tavernBin(t), files)
	w := exec.Command(tavernBin(t), "spawn", "--name", agent, "--", "sh", "-c", script)
	w.Dir = dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "TAVERN_") {
			w.Env = append(w.Env, e)
		}
	}
	// Until the spawn wrapper mints instances itself, the test names one;
	// the child records whichever it runs as.
	w.Env = append(w.Env, "TAVERN_INSTANCE="+instance)
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	h := &spawnedHolder{wrapper: w}
	t.Cleanup(func() { h.kill() })
	poll(t, agent+"'s child to hold", func() bool {
		if w.ProcessState != nil {
			return true
		}
		_, err := os.Stat(files + ".ready")
		return err == nil
	})
	read := func(ext string) string {
		data, err := os.ReadFile(files + ext)
		if err != nil {
			t.Fatalf("%s (wrapper: %v): %v", ext, w.ProcessState, err)
		}
		return strings.TrimSpace(string(data))
	}
	h.child, _ = strconv.Atoi(read(".ready"))
	h.instance, h.handle = read(".instance"), read(".handle")
	var rs []struct{ ID string }
	if err := json.Unmarshal([]byte(read(".reserve")), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("reserve printed %q: %v", read(".reserve"), err)
	}
	h.resID = rs[0].ID
	return h
}

// kill SIGKILLs the wrapper and the child's process group.
func (h *spawnedHolder) kill() {
	if h.child > 0 {
		syscall.Kill(-h.child, syscall.SIGKILL)
	}
	h.wrapper.Process.Kill()
	h.wrapper.Wait()
}

type tokenSlotJSON struct {
	ID, HeldBy, Hold, Instance string
	Epoch                      int
	Free                       bool
}

func tokenSlots(t *testing.T, p *project) []tokenSlotJSON {
	t.Helper()
	var slots []struct {
		ID       string `json:"id"`
		HeldBy   string `json:"held_by"`
		Hold     string `json:"hold"`
		Instance string `json:"instance"`
		Epoch    int    `json:"epoch"`
		Free     bool   `json:"free"`
	}
	if err := json.Unmarshal([]byte(p.ok("token", "ls", "merge", "--json")), &slots); err != nil {
		t.Fatal(err)
	}
	out := make([]tokenSlotJSON, len(slots))
	for i, s := range slots {
		out[i] = tokenSlotJSON{s.ID, s.HeldBy, s.Hold, s.Instance, s.Epoch, s.Free}
	}
	return out
}

// TestKillHolderCLI: a spawned agent holds the merge token and src/**;
// two waiters block on them (`token acquire --wait`, `reserve --wait`).
// SIGKILL the agent: both come back within one liveness check (not at
// the 5m lease or 1h TTL), and the waiters get them.
func TestKillHolderCLI(t *testing.T) {
	p := newProject(t)
	p.ok("token", "init", "merge", "--count", "1")
	p.ok("agent", "new", "bob")
	alice := spawnHolder(t, p.dir, "alice", "alice-1", "a")
	slots := tokenSlots(t, p)
	if len(slots) != 1 || slots[0].Free || slots[0].Hold != "agent" || slots[0].Instance != alice.instance {
		t.Fatalf("slot = %+v, want held by agent alice instance %s", slots, alice.instance)
	}
	type result struct {
		out, err string
		code     int
		at       time.Time
	}
	start := func(args ...string) chan result {
		ch := make(chan result, 1)
		go func() {
			out, errs, code, err := tv(p.dir, nil, args...)
			if err != nil {
				errs += err.Error()
				code = -1
			}
			ch <- result{out, errs, code, time.Now()}
		}()
		return ch
	}
	tokWaiter := start("token", "acquire", "merge", "--wait", "60s")
	resWaiter := start("reserve", "src/a.go", "--as", "bob", "--wait", "60s")
	// Both are blocked once each journaled its wait.
	poll(t, "both waiters to block", func() bool {
		return len(journalEvents(t, p.dir, "token.waiting")) == 1 && len(journalEvents(t, p.dir, "reservation.waiting")) == 1
	})
	killed := time.Now()
	alice.kill()
	for what, ch := range map[string]chan result{"token acquire": tokWaiter, "reserve": resWaiter} {
		r := <-ch
		if r.code != 0 {
			t.Fatalf("%s after the holder was killed: exit %d\n%s%s", what, r.code, r.out, r.err)
		}
		// One liveness check is 1s; a lease or TTL would be minutes.
		if d := r.at.Sub(killed); d > 15*time.Second {
			t.Fatalf("%s took %s after the kill", what, d)
		}
		if what == "reserve" && !strings.Contains(r.err, "reserved by alice (holder gone: agent alice is not alive; the reservation is being released)") {
			t.Fatalf("reserve did not say the holder was dead: %q", r.err)
		}
	}
	for _, typ := range []string{"token.reclaimed", "reservation.reclaimed"} {
		ev := journalEvents(t, p.dir, typ)
		if len(ev) != 1 || ev[0]["data"].(map[string]any)["reason"] != "agent alice is not alive" {
			t.Fatalf("journal %s = %v", typ, ev)
		}
	}
}

// TestLateReleaseFencedCLI: instance 1 of alice is killed, instance 2
// takes the token and the reservation; a late `token release --as alice`,
// bare-id release and `unreserve --as alice` from instance 1 change
// nothing (exit 4, "fenced"); release by handle and unreserve --id work.
func TestLateReleaseFencedCLI(t *testing.T) {
	p := newProject(t)
	p.ok("token", "init", "merge", "--count", "1")
	first := spawnHolder(t, p.dir, "alice", "alice-1", "a")
	first.kill()
	// The next look returns what the dead instance held. (Once spawn
	// records each instance in the agent document, a successor's own
	// acquire does that too: the dead instance's hold names a replaced
	// instance even though the agent's lock is held again.)
	p.ok("token", "ls")
	p.ok("reservations")
	second := spawnHolder(t, p.dir, "alice", "alice-2", "b")
	if first.instance == second.instance {
		t.Fatalf("both spawns ran as instance %q", first.instance)
	}
	late := []string{"TAVERN_INSTANCE=" + first.instance, "TAVERN_AGENT=alice"}
	id, _, _ := strings.Cut(second.handle, ":")
	for _, args := range [][]string{
		{"token", "release", "merge"},     // --as alice from the environment
		{"token", "release", "merge", id}, // bare id: whatever is current
		{"unreserve"},
		{"unreserve", "src/**"},
	} {
		out, errs, code, err := tv(p.dir, late, args...)
		if err != nil || code != 4 || !strings.Contains(errs, "fenced") || !strings.Contains(errs, second.instance) {
			t.Fatalf("late %v from %s: exit %d %v\n%s%s", args, first.instance, code, err, out, errs)
		}
	}
	// The stale handle of instance 1 is refused by its epoch.
	if _, errs, code, _ := tv(p.dir, late, "token", "release", "merge", first.handle); code != 4 || !strings.Contains(errs, "stale epoch") {
		t.Fatalf("stale handle: exit %d %s", code, errs)
	}
	slots := tokenSlots(t, p)
	if len(slots) != 1 || slots[0].Free || slots[0].Instance != second.instance {
		t.Fatalf("after late releases the slot is %+v, want held by %s", slots, second.instance)
	}
	if out := p.ok("reservations", "--json"); !strings.Contains(out, second.resID) {
		t.Fatalf("after a late unreserve the reservations are %s, want %s", out, second.resID)
	}
	// By handle and by id: possible from anywhere.
	if out, errs, code, _ := tv(p.dir, late, "token", "release", "merge", second.handle); code != 0 {
		t.Fatalf("release by handle: exit %d %s%s", code, out, errs)
	}
	if out, errs, code, _ := tv(p.dir, late, "unreserve", "--id", second.resID); code != 0 || strings.TrimSpace(out) != "released 1" {
		t.Fatalf("unreserve --id: exit %d %s%s", code, out, errs)
	}
	second.kill()
}

// TestHolderNamesCLI: --as goes through the one agent name rule (exit 2,
// nothing written).
func TestHolderNamesCLI(t *testing.T) {
	p := newProject(t)
	p.ok("token", "init", "merge", "--count", "1")
	for _, name := range []string{"a\nb", "a/b", "@../x", "Alice"} {
		p.fails(2, "token", "acquire", "merge", "--as", name, "--ttl", "1m")
		p.fails(2, "reserve", "src/**", "--as", name)
	}
	if out := p.ok("reservations", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("reservations written: %s", out)
	}
	if slots := tokenSlots(t, p); !slots[0].Free {
		t.Fatalf("slot taken: %+v", slots)
	}
}
