package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// poolScript executes one item. It holds a lock of the item for as long
// as any process of the execution lives (the sleep inherits it), so an
// execution that starts while an earlier one of the same item still runs
// cannot take it and logs the overlap.
const poolScript = `
exec 8>>"$LOGDIR/$TAVERN_ITEM.lock"
if ! flock -n 8; then echo "overlap $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"; exit 3; fi
echo "start $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"
: > "$LOGDIR/pids/child-$$"
sleep 0.2
echo "end $TAVERN_ITEM $TAVERN_ATTEMPT" >> "$LOGDIR/log"
rm -f "$LOGDIR/pids/child-$$"
`

// poolChaos runs `tavern pool run` (6 drones) over 300 items (times the
// scale) while it SIGKILLs spawn wrappers and their children at random,
// 60 times (times the scale), and SIGKILLs and restarts the pool once.
// Every item must be done, executed at most once per attempt and never
// twice at once.
func poolChaos(e *env) row {
	dir := e.project("pool")
	root := filepath.Join(dir, ".tavern")
	n, kills := 300*e.scale, 60*e.scale
	s, err := docstore.Open(root)
	if err != nil {
		fatal(err)
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateQueue("work", queues.QueueOptions{MaxAttempts: 1000, Backoff: time.Millisecond, BackoffMax: 10 * time.Millisecond, OnEmpty: "terminate"}); err != nil {
		fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := b.Add("work", queues.AddOptions{Title: "item", Body: []byte("payload")}); err != nil {
			fatal(err)
		}
	}
	logDir := filepath.Join(e.scratch, "pool-log")
	os.MkdirAll(filepath.Join(logDir, "pids"), 0o755)
	marker := "LOGDIR=" + logDir
	startPool := func() *exec.Cmd {
		cmd := exec.Command(e.bin, "pool", "run", "p", "--queue", "work", "--max", "6", "--on-empty", "terminate", "--quiet", "--", "sh", "-c", poolScript)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(), marker)
		cmd.Stderr, _ = os.OpenFile(filepath.Join(logDir, "pool.err"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		return cmd
	}
	doneCount := func() int {
		ents, _ := os.ReadDir(filepath.Join(root, "queues/work/done"))
		return len(ents)
	}
	pool := startPool()
	exited := make(chan error, 1)
	go func() { exited <- pool.Wait() }()
	restarted, killed, wrappers := false, 0, 0
	deadline := time.Now().Add(time.Duration(5*e.scale) * time.Minute)
	for killed < kills && time.Now().Before(deadline) && doneCount() < n-10 {
		time.Sleep(time.Duration(5+rand.IntN(40)) * time.Millisecond)
		if !restarted && doneCount() >= n/3 {
			pool.Process.Signal(syscall.SIGKILL)
			<-exited
			pool = startPool()
			go func(p *exec.Cmd) { exited <- p.Wait() }(pool)
			restarted = true
		}
		pid, kind := poolVictim(e.bin, logDir, marker)
		if pid != 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
			if kind == "wrapper" {
				wrappers++
			}
		}
	}
	// Kills in quick succession are crashes in a row to the pool, which
	// then holds its next launch up to agents' maxCrashWait (a minute)
	// until a drone's report or an item one of its drones completes ends
	// the streak: room for that wait and the items left after it.
	select {
	case <-exited:
	case <-time.After(time.Until(deadline) + 3*time.Minute):
		pool.Process.Signal(syscall.SIGKILL)
	}
	r := row{tried: n}
	r.left, r.note = e.leftAfterDoctor(dir)
	for _, st := range itemStates(dir, "work") {
		if len(st) != 1 || st[0] != queues.Done {
			r.lost++
		}
	}
	r.twice = twiceCompleted(dir)
	perAttempt, overlaps := map[string]int{}, 0
	if f, err := os.Open(filepath.Join(logDir, "log")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			switch {
			case len(fs) == 3 && fs[0] == "overlap":
				overlaps++
			case len(fs) == 3 && fs[0] == "start":
				perAttempt[fs[1]+" "+fs[2]]++
			}
		}
		f.Close()
	}
	for _, c := range perAttempt {
		if c > 1 {
			r.twice++
		}
	}
	r.twice += overlaps
	r.torn, _ = torn(dir, nil)
	r.note = strings.TrimSpace(fmt.Sprintf("%d claims, %d SIGKILLs (%d wrappers, %d drones), pool restarted once. %s", claims(dir), killed, wrappers, killed-wrappers, r.note))
	return r
}

// poolVictim picks a live process of the run at random: a spawn wrapper
// (a tavern spawn process of this run) or a drone's child (its pid file),
// half the time preferring children. A process is recognised by the run's
// marker in its environment, so a reused pid is never killed.
func poolVictim(bin, logDir, marker string) (int, string) {
	var wrappers, children []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + p.Name() + "/environ")
		if err != nil || !strings.Contains(string(env), marker) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 1 && args[0] == bin && args[1] == "spawn" {
			wrappers = append(wrappers, pid)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(logDir, "pids"))
	for _, en := range ents {
		if pid, err := strconv.Atoi(strings.TrimPrefix(en.Name(), "child-")); err == nil {
			env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
			if err == nil && strings.Contains(string(env), marker) {
				children = append(children, pid)
			} else {
				os.Remove(filepath.Join(logDir, "pids", en.Name()))
			}
		}
	}
	if len(children) > 0 && (len(wrappers) == 0 || rand.IntN(2) == 0) {
		return children[rand.IntN(len(children))], "child"
	}
	if len(wrappers) > 0 {
		return wrappers[rand.IntN(len(wrappers))], "wrapper"
	}
	return 0, ""
}
