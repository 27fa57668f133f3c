//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A stopped spawn wrapper (SIGSTOP) stops renewing its claim while its
// child keeps executing the item. Once the lease and the queue's
// lease_grace have passed the reaper takes the item back, and it must
// kill the instance's tree first: handed out with the child still
// running, the item would run twice at once (issue 13: "an item is never
// handed out while an earlier execution can still be running").
func TestHungWrapperTreeKilledBeforeReclaim(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q", "--lease", "1s", "--lease-grace", "1s")
	id := strings.TrimSpace(p.ok("queue", "add", "q"))
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	w := p.tavern("spawn", "--name", "st", "--queue", "q", "--", "sh", "-c", "echo $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; exec sleep 60")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	t.Cleanup(func() {
		w.Process.Kill()
		w.Wait()
		if child > 0 {
			syscall.Kill(child, syscall.SIGKILL)
		}
	})
	poll(t, "the child to start", func() bool {
		data, err := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && child > 0
	})
	if err := w.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pending := p.path("queues/q/pending/" + id + ".md")
	poll(t, "the reaper to take the hung item back", func() bool {
		p.ok("reap")
		_, err := os.Stat(pending)
		return err == nil
	})
	if alive(child) {
		t.Fatalf("item %s went back to pending while its execution (pid %d) still runs", id, child)
	}
	if data := p.read("queues/q/pending/" + id + ".md"); !strings.Contains(data, "were killed") {
		t.Fatalf("last_error does not say the hung tree was killed:\n%s", data)
	}
}

// `tavern doctor` after kill -9 of a spawn wrapper whose child's tree
// outlived it (Pdeathsig reaches the child only; a grandchild in its
// group keeps the instance lock and the item): doctor reports the dead
// wrapper and the orphaned processes (orphan-process), exits 5, changes
// nothing, and --fix kills them.
func TestDoctorReportsOrphanOfKilledWrapper(t *testing.T) {
	p := newProject(t)
	p.ok("queue", "create", "q")
	p.ok("queue", "add", "q")
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	w := p.tavern("spawn", "--name", "o", "--queue", "q", "--", "sh", "-c", "sleep 60 & echo $! > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"; wait")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var orphan int
	t.Cleanup(func() {
		if orphan > 0 {
			syscall.Kill(orphan, syscall.SIGKILL)
		}
	})
	poll(t, "the grandchild to start", func() bool {
		data, err := os.ReadFile(pidFile)
		orphan, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && orphan > 0
	})
	w.Process.Kill()
	w.Wait()
	if !alive(orphan) {
		t.Skip("the grandchild died with the wrapper: nothing outlived it")
	}
	r := p.run("doctor", "--json")
	if r.code != 5 {
		t.Fatalf("doctor: %v", r)
	}
	var rep struct {
		Findings []struct{ Kind, Path string }
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range rep.Findings {
		kinds[f.Kind+" "+f.Path] = true
	}
	if !kinds["dead-wrapper agents/o.md"] || !kinds["orphan-process agents/o.md"] {
		t.Fatalf("doctor findings %+v, want dead-wrapper and orphan-process of agents/o.md", rep.Findings)
	}
	if !alive(orphan) {
		t.Fatal("doctor without --fix killed the orphan")
	}
	p.ok("doctor", "--fix")
	if alive(orphan) {
		t.Fatalf("orphan %d still runs after doctor --fix", orphan)
	}
	if r := p.run("doctor"); r.code != 0 {
		t.Fatalf("doctor after --fix: %v", r)
	}
}

// A dead instance that nothing replaced acquires nothing (issue 13: "late
// actions from a dead instance are fenced"). A spawn's child takes the
// merge slot and reserves src/** (a live instance: no false fence), and
// leaves a background grandchild; the wrapper is kill -9'd. The grandchild
// runs on with the instance's environment ($TAVERN_AGENT,
// $TAVERN_INSTANCE): its token acquire and reserve, with or without a
// TTL or a wait, exit 4 (fenced, the instance is not alive) and write
// nothing; what the live instance held comes back. Before the fence these
// fell back to a lease in the agent's name and got the slot.
func TestDeadInstanceAcquireFenced(t *testing.T) {
	p := newProject(t)
	p.ok("token", "init", "merge", "--count", "1")
	files := filepath.Join(t.TempDir(), "f")
	late := [][]string{
		{"token", "acquire", "merge"},
		{"token", "acquire", "merge", "--ttl", "1m", "--wait", "5s"},
		{"reserve", "src/**"},
		{"reserve", "doc/**", "--ttl", "1h", "--wait", "5s"},
	}
	var orphan strings.Builder
	fmt.Fprintf(&orphan, "while [ ! -e %s.go ]; do sleep 0.05; done\n", files)
	for i, args := range late {
		fmt.Fprintf(&orphan, "%s '%s' > %s.%d.out 2> %s.%d.err; echo $? > %s.%d.rc\n", tavernBin(t), strings.Join(args, "' '"), files, i, files, i, files, i)
	}
	fmt.Fprintf(&orphan, "touch %s.done\n", files)
	if err := os.WriteFile(files+".orphan.sh", []byte(orphan.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`set -e
printf %%s "$TAVERN_INSTANCE" > %[2]s.instance
%[1]s token acquire merge > %[2]s.handle
%[1]s reserve 'src/**' > %[2]s.reserve
sh %[2]s.orphan.sh & echo $! > %[2]s.pid.tmp && mv %[2]s.pid.tmp %[2]s.pid
wait`, tavernBin(t), files)
	w := p.tavern("spawn", "--name", "alice", "--", "sh", "-c", script)
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	t.Cleanup(func() {
		w.Process.Kill()
		w.Wait()
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	poll(t, "the live instance to hold and start the grandchild", func() bool {
		data, err := os.ReadFile(files + ".pid")
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})
	instance, _ := os.ReadFile(files + ".instance")
	slots := tokenSlots(t, p)
	if len(slots) != 1 || slots[0].Free || slots[0].Hold != "agent" || slots[0].Instance != string(instance) {
		t.Fatalf("the live instance's slot = %+v, want held by agent alice instance %s", slots, instance)
	}
	w.Process.Kill()
	w.Wait()
	if !alive(pid) {
		t.Skip("the grandchild died with the wrapper: nothing outlived it")
	}
	if err := os.WriteFile(files+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll(t, "the grandchild's late commands", func() bool {
		_, err := os.Stat(files + ".done")
		return err == nil
	})
	for i, args := range late {
		rc, _ := os.ReadFile(fmt.Sprintf("%s.%d.rc", files, i))
		errs, _ := os.ReadFile(fmt.Sprintf("%s.%d.err", files, i))
		out, _ := os.ReadFile(fmt.Sprintf("%s.%d.out", files, i))
		if strings.TrimSpace(string(rc)) != "4" || !strings.Contains(string(errs), "fenced: instance "+string(instance)+" of alice is not alive") {
			t.Errorf("late %v from the dead instance: exit %s\nstdout: %s\nstderr: %s", args, rc, out, errs)
		}
	}
	// Nothing was written for the dead instance; what the live one held
	// comes back at this look.
	if slots := tokenSlots(t, p); len(slots) != 1 || !slots[0].Free {
		t.Errorf("slot after the late acquires = %+v, want free", slots)
	}
	if out := p.ok("reservations", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("reservations after the late reserves: %s", out)
	}
	if n := len(journalEvents(t, p.dir, "token.acquired")); n != 1 {
		t.Errorf("%d token.acquired, want the live instance's only", n)
	}
	if n := len(journalEvents(t, p.dir, "reservation.made")); n != 1 {
		t.Errorf("%d reservation.made, want the live instance's only", n)
	}
}
