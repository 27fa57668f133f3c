package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// crashPoints SIGKILLs tavern commands (set, new, add, take, done, send)
// at random points of their run: the delay is drawn up to 1.5 times the
// command's median run time, and only kills that caught the command
// running count as crash points. Afterwards (and after doctor --fix):
// every document parses (torn), every item an add reported exists in
// exactly one state directory, every agent a new reported and every
// message a send reported exists (lost), no item was completed twice.
func crashPoints(e *env) row {
	dir := e.project("crash")
	e.must(dir, "queue", "create", "q")
	e.must(dir, "new", "agent", "a")
	target := 2000 * e.scale
	ops := []string{"set", "new", "add", "take", "done", "send"}
	median := map[string]time.Duration{}
	var items, agents, texts []string
	seq := 0
	argsFor := func(op string) []string {
		seq++
		switch op {
		case "set":
			return []string{"set", "agents/a", fmt.Sprintf("counter=%d", seq)}
		case "new":
			return []string{"new", "agent", fmt.Sprintf("n%d", seq)}
		case "add":
			return []string{"queue", "add", "q", "--title", fmt.Sprintf("t%d", seq)}
		case "take":
			return []string{"queue", "take", "q"}
		case "done":
			claimed, _ := os.ReadDir(filepath.Join(dir, ".tavern/queues/q/claimed"))
			if len(claimed) == 0 {
				return []string{"queue", "take", "q"}
			}
			return []string{"item", "done", strings.TrimSuffix(claimed[rand.IntN(len(claimed))].Name(), ".md"), "--result", "-"}
		default:
			return []string{"send", "c", fmt.Sprintf("msg-%d", seq)}
		}
	}
	record := func(op string, args []string, out string) {
		switch op {
		case "new":
			agents = append(agents, args[2])
		case "add":
			items = append(items, strings.TrimSpace(out))
		case "send":
			texts = append(texts, args[2])
		}
	}
	// Median run time of each command, uncrashed (these runs count as
	// work, not as crash points).
	for _, op := range ops {
		var ds []time.Duration
		for i := 0; i < 9; i++ {
			args := argsFor(op)
			start := time.Now()
			r := e.tavern(dir, args...)
			ds = append(ds, time.Since(start))
			if r.code == 0 {
				record(op, args, r.out)
			}
		}
		slices.Sort(ds)
		median[op] = ds[len(ds)/2]
	}
	tried, runs := 0, 0
	for tried < target && runs < 4*target {
		runs++
		op := ops[rand.IntN(len(ops))]
		if op == "take" || op == "done" {
			if len(items) == 0 {
				op = "add"
			}
		}
		args := argsFor(op)
		cmd := exec.Command(e.bin, args...)
		cmd.Dir = dir
		cmd.Env = cleanEnv()
		cmd.Stdin = strings.NewReader("result\n")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		delay := time.Duration(rand.Int64N(int64(median[op])*3/2 + 1))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			tried++
			continue
		}
		if err == nil {
			record(op, args, out.String())
		}
	}
	r := row{tried: tried}
	r.left, r.note = e.leftAfterDoctor(dir)
	// Lost: what a command reported done must be there.
	states := itemStates(dir, "q")
	for _, id := range items {
		if len(states[id]) == 0 {
			r.lost++
		}
	}
	for _, a := range agents {
		if _, err := os.Stat(filepath.Join(dir, ".tavern/agents", a+".md")); err != nil {
			r.lost++
		}
	}
	var chunks bytes.Buffer
	ents, _ := os.ReadDir(filepath.Join(dir, ".tavern/messages/c"))
	for _, en := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, ".tavern/messages/c", en.Name()))
		chunks.Write(b)
	}
	for _, t := range texts {
		if !bytes.Contains(chunks.Bytes(), []byte("\n"+t+"\n")) {
			r.lost++
		}
	}
	var first string
	r.torn, first = torn(dir, nil)
	r.twice = twiceCompleted(dir)
	if r.torn > 0 {
		r.note = strings.TrimSpace(r.note + " first torn: " + first)
	}
	r.note = strings.TrimSpace(fmt.Sprintf("%d claims. %s", claims(dir), r.note))
	if tried < target {
		r.note = strings.TrimSpace(fmt.Sprintf("%s only %d crash points in %d runs", r.note, tried, runs))
	}
	return r
}
