package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// workDoneItem leaves an item of queue q whose work is done: a spawn
// runs its command (which appends a line to the returned file), waits at
// the item's human gate and is interrupted there, so the item goes back
// to pending with work_done recorded.
func workDoneItem(t *testing.T, p *project, q string) (id, runs string) {
	t.Helper()
	runs = filepath.Join(t.TempDir(), "runs")
	p.ok("queue", "create", q)
	id = strings.TrimSpace(p.ok("queue", "add", q, "--title", "review me", "--gate", "human"))
	w := p.tavern("spawn", "--queue", q, "--name", "rev", "--", "sh", "-c", `echo ran >> "$RUNS"; echo built`)
	w.Env = append(w.Env, "RUNS="+runs)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the wrapper to wait at the gate", func() bool { return p.agentState("rev") == "waiting" })
	w.Process.Signal(syscall.SIGINT)
	_ = w.Wait() // exits 130: released at the gate
	if doc := p.read("queues/" + q + "/pending/" + id + ".md"); !strings.Contains(doc, "\nwork_done: ") {
		t.Fatalf("the item is not pending with work_done after the interrupt:\n%s", doc)
	}
	return id, runs
}

// A person's `queue take` of an item whose work is done (its command ran
// and succeeded; it waits at a human gate) still claims it — it is the
// person's to see through — but says so: work_done, the gates it waits
// at and the next step (decide the gate, then item done), in --json and
// on stderr. It was handed out as if fresh, and the person redid the
// work.
func TestTakeSaysWorkDone(t *testing.T) {
	p := newProject(t)
	id, runs := workDoneItem(t, p, "q")

	var got struct {
		ID       string   `json:"id"`
		State    string   `json:"state"`
		WorkDone bool     `json:"work_done"`
		WaitsAt  []string `json:"waits_at"`
		NextStep string   `json:"next_step"`
	}
	p.json(&got, "queue", "take", "q")
	if got.ID != id || got.State != "claimed" || !got.WorkDone || !slices.Equal(got.WaitsAt, []string{id}) {
		t.Fatalf("take --json = %+v, want %s claimed, work_done, waits_at [%s]", got, id, id)
	}
	for _, want := range []string{"tavern approve " + id, "tavern item done " + id} {
		if !strings.Contains(got.NextStep, want) {
			t.Errorf("next_step %q does not say %q", got.NextStep, want)
		}
	}

	// In text: stdout is "ID ATTEMPT" and the file, as for any item; the
	// note is on stderr.
	p.ok("item", "release", id)
	r := p.run("queue", "take", "q")
	if r.code != 0 || !strings.HasPrefix(r.out, id+" ") {
		t.Fatalf("take: %s", r)
	}
	for _, want := range []string{id + ": its work is done already", "waits at gate " + id, "tavern approve " + id} {
		if !strings.Contains(r.err, want) {
			t.Errorf("take's stderr %q does not say %q", r.err, want)
		}
	}

	// The next step, as said: the gate, then done; the command ran once.
	p.ok("approve", id)
	p.ok("item", "done", id)
	if _, err := os.Stat(p.path("queues/q/done/" + id + ".md")); err != nil {
		t.Fatalf("the item is not done: %v", err)
	}
	if data, _ := os.ReadFile(runs); string(data) != "ran\n" {
		t.Fatalf("the command ran %q, want once", data)
	}

	// A fresh item says nothing of the kind.
	fresh := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "fresh"))
	r = p.run("queue", "take", "q", "--json")
	if r.code != 0 || strings.Contains(r.out, `"work_done": true`) || strings.Contains(r.out, "next_step") || !strings.Contains(r.out, fresh) {
		t.Fatalf("take of a fresh item: %s", r)
	}
}

// The plain `tavern next` listing offered an item whose work is done as
// if it were work to do: it is marked now, "work done, waits at gate G"
// in text and work_done, waits_at, next_step under --json, as take says.
func TestNextSaysWorkDone(t *testing.T) {
	p := newProject(t)
	id, _ := workDoneItem(t, p, "q")
	fresh := strings.TrimSpace(p.ok("queue", "add", "q", "--title", "fresh"))

	var got []struct {
		ID       string   `json:"id"`
		WorkDone bool     `json:"work_done"`
		WaitsAt  []string `json:"waits_at"`
		NextStep string   `json:"next_step"`
	}
	p.json(&got, "next", "--json")
	if len(got) != 2 {
		t.Fatalf("next --json = %+v, want 2 items", got)
	}
	for _, g := range got {
		switch g.ID {
		case id:
			if !g.WorkDone || !slices.Equal(g.WaitsAt, []string{id}) || !strings.Contains(g.NextStep, "tavern approve "+id) {
				t.Errorf("next --json: %+v, want work_done, waits_at [%s] and the next step", g, id)
			}
		case fresh:
			if g.WorkDone || g.WaitsAt != nil || g.NextStep != "" {
				t.Errorf("next --json: fresh item %+v says its work is done", g)
			}
		default:
			t.Errorf("next --json: unexpected %+v", g)
		}
	}

	out := p.ok("next")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		marked := strings.Contains(line, "work done, waits at gate "+id)
		if strings.HasPrefix(line, id+" ") != marked {
			t.Errorf("next: line %q: marked %v", line, marked)
		}
	}
	if !strings.Contains(out, id+" ") {
		t.Errorf("next does not list %s:\n%s", id, out)
	}

	// The person's prime lists it as next, marked the same way.
	if out := p.ok("prime"); !strings.Contains(out, `"review me" (work done, waits at gate `+id+")") {
		t.Errorf("prime does not mark %s:\n%s", id, out)
	}

	// Held by an agent, it says so too.
	p.ok("agent", "new", "bob")
	p.ok("queue", "take", "q", "--as", "bob")
	if out := p.ok("next", "--as", "bob"); !strings.Contains(out, "held (attempt") || !strings.Contains(out, "work done, waits at gate "+id) {
		t.Errorf("next --as bob:\n%s", out)
	}
}
