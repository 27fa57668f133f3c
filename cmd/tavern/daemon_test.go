package main

// The query daemon through the built binary: reads through a daemon see
// every write that came before them (the CLI's, hand edits with sed and
// vim, from many processes at once), and a daemon that is stopped,
// killed, or serving another store is ignored with the right answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/daemon"
)

// startDaemon runs `tavern daemon start` and returns the daemon's pid; the
// daemon is stopped (killed, if it will not stop) when the test ends.
func startDaemon(t *testing.T, p *project) int {
	t.Helper()
	p.ok("daemon", "start")
	var st struct {
		Running bool
		PID     int
	}
	p.json(&st, "daemon", "status")
	if !st.Running || st.PID == 0 {
		t.Fatalf("daemon status after start: %+v", st)
	}
	t.Cleanup(func() {
		if proc, err := os.FindProcess(st.PID); err == nil {
			proc.Signal(syscall.SIGCONT)
			proc.Kill()
		}
	})
	return st.PID
}

// daemonServed is the number of queries the store's daemon answered.
func daemonServed(t *testing.T, p *project) int {
	t.Helper()
	var st struct{ Served int }
	p.json(&st, "daemon", "status")
	return st.Served
}

// lsNames runs ls --json with env and returns the names listed.
func lsNames(t *testing.T, p *project, env []string, args ...string) ([]string, error) {
	t.Helper()
	cmd := p.tavern(append(append([]string{"ls"}, args...), "--json")...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("tavern ls %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return nil, err
	}
	var list []struct{ Name string }
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("ls --json: %v\n%s", err, out)
	}
	names := make([]string, 0, len(list))
	for _, e := range list {
		names = append(names, e.Name)
	}
	return names, nil
}

// viaDaemon: reads that must be answered by the daemon (else they fail),
// with a timeout no loaded machine reaches: these tests are about
// freshness, not speed.
var viaDaemon = []string{"TAVERN_DAEMON=require", "TAVERN_DAEMON_TIMEOUT=60s"}

func seqAgentDoc(name string, seq int) string {
	return fmt.Sprintf("---\nschema_version: 1\nname: %s\nstate: idle\nspawns: 0\nseq: %d\n---\n", name, seq)
}

// TestDaemonReadsItsWrites: writers in parallel, each a loop of a write
// followed at once by a read through the daemon that must see it. The
// writes alternate between tavern set, sed -i (a new file renamed over
// the old one) and an in-place rewrite (O_TRUNC, same inode).
func TestDaemonReadsItsWrites(t *testing.T) {
	t.Parallel()
	sed := needProgram(t, "sed")
	p := newProject(t)
	const writers, rounds = 4, 12
	for w := range writers {
		p.write(fmt.Sprintf("agents/w%d.md", w), seqAgentDoc(fmt.Sprintf("w%d", w), 0))
	}
	startDaemon(t, p)
	before := daemonServed(t, p)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			path := p.path("agents/" + name + ".md")
			for i := 1; i <= rounds; i++ {
				seq := strconv.Itoa(i)
				var err error
				switch i % 3 {
				case 0:
					if r := p.run("set", "agents/"+name, "seq="+seq); r.code != 0 {
						err = fmt.Errorf("set: %s", r)
					}
				case 1:
					err = exec.Command(sed, "-i", fmt.Sprintf("s/^seq: .*/seq: %s/", seq), path).Run()
				case 2:
					err = os.WriteFile(path, []byte(seqAgentDoc(name, i)), 0o644)
				}
				if err != nil {
					errs <- fmt.Errorf("%s round %d: write: %v", name, i, err)
					return
				}
				names, err := lsNames(t, p, viaDaemon, "agents", "--where", "seq="+seq, "--where", "name="+name)
				if err != nil {
					errs <- err
					return
				}
				if len(names) != 1 || names[0] != name {
					errs <- fmt.Errorf("%s round %d: ls --where seq=%s through the daemon lists %q right after the write, want [%s]", name, i, seq, names, name)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := daemonServed(t, p) - before; got < writers*rounds {
		t.Errorf("the daemon answered %d queries, want at least %d: the reads did not go through it", got, writers*rounds)
	}
}

// TestDaemonSeesVimSaves: vim's save (the old file renamed to a backup, a
// new one written) is seen by the next read through the daemon.
func TestDaemonSeesVimSaves(t *testing.T) {
	t.Parallel()
	vim := needProgram(t, "vim")
	p := newProject(t)
	rel := "agents/v.md"
	p.write(rel, seqAgentDoc("v", 0))
	startDaemon(t, p)
	for i := 1; i <= 6; i++ {
		cmd := p.cmd(t.Context(), vim, "-N", "-u", "NONE", "-i", "NONE", "-es",
			"-c", "set backupcopy=auto backupskip=", "-c", fmt.Sprintf("%%s/^seq: .*$/seq: %d/", i), "-c", "wq", p.path(rel))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("vim save %d: %v\n%s", i, err, out)
		}
		names, err := lsNames(t, p, viaDaemon, "agents", "--where", "seq="+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 1 || names[0] != "v" {
			t.Fatalf("after vim save %d: ls --where seq=%d through the daemon lists %q, want [v]", i, i, names)
		}
	}
}

// TestDaemonStoppedOrKilled: readers hammer ls while the daemon is
// stopped (SIGSTOP: it accepts nothing, answers nothing), continued, and
// finally killed (its socket left behind). Every answer is the right one,
// and with the daemon stopped or dead a read still ends within seconds.
func TestDaemonStoppedOrKilled(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	want := map[string]bool{}
	for i := range 30 {
		name := fmt.Sprintf("a%02d", i)
		seq := i % 3
		if seq == 1 {
			want[name] = true
		}
		p.write("agents/"+name+".md", seqAgentDoc(name, seq))
	}
	pid := startDaemon(t, p)
	proc, _ := os.FindProcess(pid)
	env := []string{"TAVERN_DAEMON_TIMEOUT=300ms"}
	check := func(stage string) {
		t.Helper()
		start := time.Now()
		names, err := lsNames(t, p, env, "agents", "--where", "seq=1")
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if len(names) != len(want) {
			t.Fatalf("%s: ls lists %d agents %q, want %d", stage, len(names), names, len(want))
		}
		for _, n := range names {
			if !want[n] {
				t.Fatalf("%s: ls lists %s, which has seq != 1", stage, n)
			}
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("%s: ls took %s", stage, d)
		}
	}
	check("daemon running")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // stop and continue the daemon at random points of the reads
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				proc.Signal(syscall.SIGCONT)
				return
			case <-time.After(time.Duration(7+i%5*13) * time.Millisecond):
			}
			if i%2 == 0 {
				proc.Signal(syscall.SIGSTOP)
			} else {
				proc.Signal(syscall.SIGCONT)
			}
		}
	}()
	for i := range 15 {
		check(fmt.Sprintf("read %d while the daemon is stopped and continued", i))
	}
	close(stop)
	wg.Wait()
	proc.Signal(syscall.SIGSTOP)
	check("daemon stopped")
	proc.Signal(syscall.SIGCONT)
	proc.Kill()
	proc.Wait()
	if _, err := os.Lstat(p.path(".daemon.sock")); err != nil {
		t.Logf("socket gone after SIGKILL (%v): the dead-socket case is not exercised", err)
	}
	check("daemon killed, socket left behind")
	p.fails(3, "daemon", "status")
}

// TestDaemonOtherStore: a socket that leads to the daemon of another
// store (here a symbolic link to it) is not trusted: the read answers
// from its own files.
func TestDaemonOtherStore(t *testing.T) {
	t.Parallel()
	a, b := newProject(t), newProject(t)
	a.write("agents/x.md", seqAgentDoc("x", 1))
	b.write("agents/y.md", seqAgentDoc("y", 1))
	startDaemon(t, a)
	if err := os.Symlink(a.path(".daemon.sock"), b.path(".daemon.sock")); err != nil {
		t.Fatal(err)
	}
	names, err := lsNames(t, b, nil, "agents", "--where", "seq=1")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "y" {
		t.Fatalf("ls in store b lists %q, want [y] (not store a's daemon's answer)", names)
	}
	if _, err := lsNames(t, b, viaDaemon, "agents"); err == nil {
		t.Fatal("TAVERN_DAEMON=require in store b succeeded through store a's daemon")
	}
}

// TestDaemonStartStopStatus: the command's contract, and a long-running
// process (tavern watch) taking over serving when the daemon stops.
func TestDaemonStartStopStatus(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.fails(3, "daemon", "status")
	p.fails(3, "daemon", "stop")
	pid := startDaemon(t, p)
	if out := p.ok("daemon", "start"); !strings.Contains(out, "already served by tavern daemon (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("second start: %q", out)
	}
	if out := p.ok("daemon", "status"); !strings.Contains(out, "tavern daemon (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("status: %q", out)
	}
	p.ok("daemon", "stop")
	p.fails(3, "daemon", "status")
	if _, err := os.Lstat(p.path(".daemon.sock")); err == nil {
		t.Error("the socket is left after daemon stop")
	}

	// A long-running process (tavern watch) started while a daemon
	// serves takes over when that daemon stops.
	startDaemon(t, p)
	w, _ := startWatch(t, p)
	defer func() {
		w.Process.Signal(syscall.SIGTERM)
		w.Wait()
	}()
	p.ok("daemon", "stop")
	poll(t, "tavern watch taking over", func() bool {
		return strings.Contains(p.run("daemon", "status").out, "tavern watch")
	})
	// daemon stop refuses to stop it; daemon start finds it serving.
	if r := p.fails(1, "daemon", "stop"); !strings.Contains(r.err, "tavern watch") {
		t.Errorf("daemon stop with watch serving: %s", r)
	}
	if out := p.ok("daemon", "start"); !strings.Contains(out, "already served by tavern watch") {
		t.Errorf("start with watch serving: %q", out)
	}
	names, err := lsNames(t, p, viaDaemon, "agents")
	if err != nil || len(names) != 0 {
		t.Errorf("ls through tavern watch: %q, %v", names, err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".tavern", ".daemon.log")); err != nil {
		t.Errorf("no daemon log: %v", err)
	}
}

// inotifyWatches is the number of inotify watches process pid holds (a
// watching projection holds one per directory of the store).
func inotifyWatches(t *testing.T, pid int) int {
	t.Helper()
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		b, err := os.ReadFile(fd)
		if err != nil {
			continue // closed since the glob
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// TestDaemonPoolOnlyIfNone: a pool started while another process serves
// the store opens no projection of its own (a hundred pools on one store
// do not each watch all of it), and takes over serving when that process
// stops.
func TestDaemonPoolOnlyIfNone(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/fdinfo"); err != nil {
		t.Skip("needs /proc to count a process's inotify watches")
	}
	p := newProject(t)
	for i := range 20 {
		p.ok("queue", "create", fmt.Sprintf("q%02d", i))
	}
	startDaemon(t, p)
	pool := p.tavern("pool", "run", "p", "--queue", "q00", "--min", "1", "--max", "1", "--on-empty", "idle", "--quiet", "--", "sleep", "600")
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Process.Kill(); pool.Wait() })
	poll(t, "the pool's drone", func() bool {
		var list []struct{ Name string }
		p.json(&list, "agent", "ls")
		return len(list) > 0
	})
	before := inotifyWatches(t, pool.Process.Pid)
	p.ok("daemon", "stop")
	poll(t, "tavern pool run taking over", func() bool {
		return strings.Contains(p.run("daemon", "status").out, "tavern pool run")
	})
	after := inotifyWatches(t, pool.Process.Pid)
	if after < 20 || before >= after {
		t.Fatalf("pool's inotify watches: %d while the daemon served, %d once it serves; want far fewer before", before, after)
	}
	names, err := lsNames(t, p, viaDaemon, "agents")
	if err != nil || len(names) != 1 {
		t.Errorf("ls through the pool: %q, %v", names, err)
	}
}

// TestDaemonLsSameOutput: ls through the daemon prints, byte for byte,
// what it prints without one (stdout, the problems on stderr, the exit
// code), for JSON (written from the fields the daemon leaves encoded)
// and the table, with sorting, limits, bodies, and documents that are
// invalid or do not parse.
func TestDaemonLsSameOutput(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.ok("queue", "create", "build")
	for i := range 30 {
		p.ok("queue", "add", "build", "--title", fmt.Sprintf("task \"%d\" <&> é\ttab", i), "--priority", strconv.Itoa(i%3+1))
	}
	p.write("queues/build/pending/p01-99999999-0000-7000-8000-000000000000.md", "---\ntitle: [unclosed\n---\n")
	p.write("queues/build/pending/p01-99999998-0000-7000-8000-000000000000.md",
		"---\nschema_version: 1\nid: p01-99999998-0000-7000-8000-000000000000\nqueue: build\ntitle: 5\npriority: nope\nlabels: [a, {b: 1.5}]\n---\nbody\n")
	queries := [][]string{
		{"ls", "items", "--json"},
		{"ls", "items", "--where", "priority=2", "--json"},
		{"ls", "items", "--sort", "-priority", "--limit", "4", "--json"},
		{"ls", "items", "--body", "--limit", "3", "--json"},
		{"ls", "items"},
		{"ls", "items", "--where", "state=pending", "--sort", "title"},
	}
	off := make([]result, len(queries))
	for i, q := range queries {
		off[i] = p.runEnv([]string{"TAVERN_DAEMON=off"}, q...)
	}
	startDaemon(t, p)
	before := daemonServed(t, p)
	for i, q := range queries {
		got := p.runEnv(viaDaemon, q...)
		if got != off[i] {
			t.Errorf("tavern %s through the daemon:\n%s\nwithout it:\n%s", strings.Join(q, " "), got, off[i])
		}
	}
	if got := daemonServed(t, p) - before; got < len(queries) {
		t.Errorf("the daemon answered %d of %d queries", got, len(queries))
	}
}

// TestDaemonStartChildFails: a background daemon that exits before it
// serves, for a reason `daemon start` does not check first, made it
// exit 1 with "daemon exited before serving (exit status N): " and the
// whole log (warnings, the child's "tavern: " line) as the message: the
// child's exit code and error position were lost, and under --json the
// error object held the log. It now fails with the child's own error,
// code and position. The reason here is real: with no inotify watches
// left the child's projection polls, which cannot serve queries (exit 1).
func TestDaemonStartChildFails(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	prefix := inLowWatchLimit(t, 0)
	start := func(args ...string) result {
		return runResult(t, p.cmd(context.Background(), prefix[0], append(append(prefix[1:], tavernBin(t), "daemon", "start"), args...)...))
	}
	const why = "a polling projection cannot prove it is current, so it cannot serve queries"
	r := start()
	if r.code != 1 || !strings.HasPrefix(r.err, "tavern: "+p.path("")) || !strings.HasSuffix(r.err, why+"\n") || strings.Count(r.err, "\n") != 1 {
		t.Errorf("daemon start, its child polling: got exit %d, stderr %q; want 1 and the child's one error line", r.code, r.err)
	}
	r = start("--json")
	var obj struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(r.err), &obj); err != nil || r.code != 1 || obj.Code != 1 || !strings.HasPrefix(obj.Error, p.path("")) || !strings.HasSuffix(obj.Error, why) {
		t.Errorf("daemon start --json, its child polling: got exit %d, stderr %q; want 1 and the child's error object", r.code, r.err)
	}
}

// TestDaemonStartChildCode: the child's exit code and position come back
// as they are. The child is a stand-in (daemon start runs the program it
// was started as, found on $PATH when started by a bare name: here a
// script earlier on $PATH) that fails as tavern does on an invalid
// document: a warning, then exit 5 with its JSON error and path:line:col.
func TestDaemonStartChildCode(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	bin := t.TempDir()
	child := "#!/bin/sh\necho 'tavern: warning: a warning first' >&2\n" +
		`echo '{"code":5,"error":"agents/x.md:3:8: state: \"dancing\" is not a state","path":"agents/x.md","line":3,"col":8}' >&2` +
		"\nexit 5\n"
	if err := os.WriteFile(filepath.Join(bin, "tavern"), []byte(child), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		args := []string{"daemon", "start"}
		if asJSON {
			args = append(args, "--json")
		}
		cmd := p.tavern(args...)
		cmd.Args[0] = "tavern" // cmd.Path is the real one
		cmd.Env = append(cmd.Env, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		want := "tavern: agents/x.md:3:8: state: \"dancing\" is not a state\n"
		if asJSON {
			want = `{"code":5,"col":8,"error":"agents/x.md:3:8: state: \"dancing\" is not a state","kind":"error","line":3,"path":"agents/x.md"}` + "\n"
		}
		if code != 5 || errb.String() != want {
			t.Errorf("daemon start (json %v), the child exiting 5: got exit %d, stderr %q; want 5, %q", asJSON, code, errb.String(), want)
		}
	}
}

// TestDaemonStartConcurrent: `daemon start` is what hooks and scripts run
// to make sure a daemon serves; several at once all succeed (one starts
// it, the others find it serving), one daemon runs, and its log is not
// cut under it. Before, a start whose child found the daemon another
// start had just made failed with "daemon exited before serving
// (<nil>)" and the child's JSON, and every start truncated the running
// daemon's log.
func TestDaemonStartConcurrent(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	const n = 4
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() { results <- runResult(t, p.tavern("daemon", "start", "--json")) }()
	}
	pids := map[int]bool{}
	started := 0
	for i := 0; i < n; i++ {
		r := <-results
		var st struct {
			Already bool `json:"already_served"`
			PID     int  `json:"pid"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.out), &st) != nil || st.PID == 0 {
			t.Errorf("concurrent daemon start: %s", r)
			continue
		}
		pids[st.PID] = true
		if !st.Already {
			started++
		}
	}
	var st struct {
		Running bool
		PID     int
	}
	p.json(&st, "daemon", "status")
	t.Cleanup(func() {
		if proc, err := os.FindProcess(st.PID); err == nil {
			proc.Kill()
		}
	})
	if len(pids) != 1 || !pids[st.PID] || started > 1 {
		t.Errorf("starts named pids %v (%d started), status pid %d: want one daemon", pids, started, st.PID)
	}
	// The daemon writes its log as it serves; a later start that finds it
	// must leave that log whole.
	p.ok("daemon", "start")
	p.ok("daemon", "stop")
	log, err := os.ReadFile(p.path(".daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(log, 0) >= 0 {
		t.Errorf("daemon log has NUL bytes (truncated under the daemon):\n%q", log)
	}
	// No child stands by to take over: once the stopped daemon is gone,
	// nothing of this store's runs (before, a child that lost the race
	// stood by and served after the stop).
	children := func() (pids []string) {
		out, _ := exec.Command("pgrep", "-f", "daemon start --foreground").Output()
		for _, f := range strings.Fields(string(out)) {
			if b, _ := os.ReadFile("/proc/" + f + "/environ"); bytes.Contains(b, []byte(p.path(""))) {
				pids = append(pids, f)
			}
		}
		return pids
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(children()) > 0 {
		if time.Now().After(deadline) {
			for _, pid := range children() {
				cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
				status, _ := os.ReadFile("/proc/" + pid + "/status")
				t.Errorf("left running: pid %s %q\n%s", pid, cmdline, status[:min(len(status), 200)])
			}
			t.FailNow()
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := p.run("daemon", "status"); r.code == 0 {
		t.Errorf("a daemon serves after daemon stop: %s", r)
	}
}

// TestDaemonStartWaitRunsOut: a start whose daemon does not answer within
// --wait fails (exit 3) and leaves no daemon behind. Before, the child
// went on and served a moment after the command said it had not.
func TestDaemonStartWaitRunsOut(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// The test holds the daemon's election lock, so the child stands by
	// and cannot answer within any --wait (a tiny --wait alone raced a
	// child that answered before the start's first look, on a loaded
	// machine).
	lock, err := os.OpenFile(filepath.Join(p.dir, ".tavern", daemon.LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	r := p.run("daemon", "start", "--wait", "300ms")
	lock.Close() // the lock is free: a child left behind would now serve
	if r.code != 3 || !strings.Contains(r.err, "did not answer within 300ms") {
		t.Fatalf("daemon start --wait 300ms: %s", r)
	}
	// The child is gone: nothing serves, now or once it would have
	// taken the lock (a daemon of this tiny store answers within a
	// second).
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if r := p.run("daemon", "status"); r.code == 0 {
			p.run("daemon", "stop")
			t.Fatalf("a daemon serves after a start that failed: %s", r)
		}
	}
}

// stubbornDaemon serves the store's daemon socket as an explicit daemon
// that says yes to stop and goes on serving: what `daemon stop` sees of
// a daemon that hangs on its way out.
func stubbornDaemon(t *testing.T, p *project) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(p.dir, ".tavern", daemon.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	status, err := json.Marshal(daemon.Status{PID: os.Getpid(), Who: "tavern daemon", Explicit: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			var req daemon.Request
			if err := json.NewDecoder(conn).Decode(&req); err == nil {
				h := daemon.Header{V: daemon.Version}
				if req.Op == "status" {
					h.Info = status
				}
				line, _ := json.Marshal(h)
				conn.Write(append(line, '\n'))
			}
			conn.Close()
		}
	}()
}

// TestDaemonStopStillServes: a daemon that still serves once stop's wait
// is over is said in words, exit 3. Before, the message ended with Go's
// "context deadline exceeded" after a fixed 30s.
func TestDaemonStopStillServes(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	stubbornDaemon(t, p)
	r := p.run("daemon", "stop", "--wait", "200ms")
	want := fmt.Sprintf("tavern: daemon pid %d did not stop within 200ms", os.Getpid())
	if r.code != 3 || !strings.Contains(r.err, want) || strings.Contains(r.err, "deadline exceeded") {
		t.Fatalf("daemon stop --wait 200ms: %s\nwant exit 3 and %q", r, want)
	}
}
