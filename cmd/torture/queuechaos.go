package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// queueWorker is a worker process of queueChaos (the harness re-executes
// itself with -worker STORE LOG): it takes items as HoldLock claims,
// logs "start ID ATTEMPT", works a few milliseconds and completes,
// logging "done ID ATTEMPT" when the completion was accepted.
func queueWorker(args []string) int {
	if len(args) != 2 {
		return 2
	}
	s, err := docstore.Open(args[0])
	if err != nil {
		return 3
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		return 3
	}
	log, err := os.OpenFile(args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 3
	}
	for {
		c, err := b.Take(context.Background(), queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock, Wait: time.Second})
		if errors.Is(err, queues.ErrEmpty) {
			continue
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		fmt.Fprintf(log, "start %s %d\n", c.ID, c.Attempt)
		time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond)
		if _, err := c.Complete("ok"); err == nil {
			fmt.Fprintf(log, "done %s %d\n", c.ID, c.Attempt)
		}
	}
}

// queueChaos runs 8 worker processes over 5000 items (times the scale)
// while it SIGKILLs workers (and starts new ones) and SIGSTOPs others
// for up to 2 s (their claims go hung, are reaped after the lease and its
// grace, and their late completions are refused). Every item must end
// done, completed once.
func queueChaos(e *env) row {
	dir := e.project("queue")
	root := filepath.Join(dir, ".tavern")
	n := 5000 * e.scale
	s, err := docstore.Open(root)
	if err != nil {
		fatal(err)
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateQueue("q", queues.QueueOptions{Lease: time.Second, LeaseGrace: 500 * time.Millisecond, MaxAttempts: 1000}); err != nil {
		fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := b.Add("q", queues.AddOptions{Title: "item"}); err != nil {
			fatal(err)
		}
	}
	logFile := filepath.Join(e.scratch, "queue-workers.log")
	self, _ := os.Executable()
	start := func() *exec.Cmd {
		cmd := exec.Command(self, "-worker", root, logFile)
		cmd.Env = cleanEnv()
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		go cmd.Wait()
		return cmd
	}
	workers := make([]*exec.Cmd, 8)
	stopped := make([]time.Time, 8) // zero: running
	for i := range workers {
		workers[i] = start()
	}
	doneCount := func() int {
		ents, _ := os.ReadDir(filepath.Join(root, "queues/q/done"))
		return len(ents)
	}
	kills, stops := 0, 0
	deadline := time.Now().Add(time.Duration(5*e.scale) * time.Minute)
	for doneCount() < n && time.Now().Before(deadline) {
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
		now := time.Now()
		for i, t := range stopped {
			if !t.IsZero() && now.After(t) {
				workers[i].Process.Signal(syscall.SIGCONT)
				stopped[i] = time.Time{}
			}
		}
		i := rand.IntN(len(workers))
		switch rand.IntN(3) {
		case 0:
			workers[i].Process.Signal(syscall.SIGKILL)
			workers[i] = start()
			stopped[i] = time.Time{}
			kills++
		case 1:
			if stopped[i].IsZero() {
				workers[i].Process.Signal(syscall.SIGSTOP)
				stopped[i] = now.Add(time.Duration(200+rand.IntN(1800)) * time.Millisecond)
				stops++
			}
		}
	}
	for _, w := range workers {
		w.Process.Signal(syscall.SIGCONT)
		w.Process.Signal(syscall.SIGKILL)
	}
	r := row{tried: n}
	r.left, r.note = e.leftAfterDoctor(dir)
	states := itemStates(dir, "q")
	for _, st := range states {
		if len(st) != 1 || st[0] != queues.Done {
			r.lost++
		}
	}
	r.lost += n - len(states)
	// Completed twice: by the journal, and by the workers' own log of
	// accepted completions.
	r.twice = twiceCompleted(dir)
	if f, err := os.Open(logFile); err == nil {
		accepted := map[string]int{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fs := strings.Fields(sc.Text()); len(fs) == 3 && fs[0] == "done" {
				accepted[fs[1]]++
			}
		}
		f.Close()
		twice := 0
		for _, c := range accepted {
			if c > 1 {
				twice++
			}
		}
		r.twice = max(r.twice, twice)
	}
	r.torn, _ = torn(dir, nil)
	r.note = strings.TrimSpace(fmt.Sprintf("%d claims, %d SIGKILLs, %d SIGSTOPs. %s", claims(dir), kills, stops, r.note))
	return r
}
