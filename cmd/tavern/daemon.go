package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/daemon"
)

func newDaemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "the query daemon: one-shot reads answered from a live projection",
		Description: `While a long-running tavern process watches the store (tavern watch, serve,
ui, pool run, verifier) or an explicit daemon runs, one-shot reads (ls, queue
ls) ask it over the socket .tavern/.daemon.sock and get the projection's
answer without reading the documents. The daemon first makes sure it has
seen every change made before the question (it writes a marker file and
waits for its inotify event), so an answer is never older than the files;
without a daemon, or with one that is dead, stopped, busy past the timeout
or serving another store, commands answer from the files as before.

One process serves at a time (it holds .tavern/.locks/daemon.lock); when it
ends, another long-running process takes over within seconds.

TAVERN_DAEMON=off makes commands ignore any daemon and long-running
processes not serve; TAVERN_DAEMON=require makes a read fail (exit 1) when
no daemon answers. TAVERN_DAEMON_TIMEOUT bounds a read's wait for the
daemon (default 1s).

Examples:
   tavern daemon start
   tavern daemon status --json
   tavern daemon stop`,
		Subcommands: []*cli.Command{
			{
				Name:  "start",
				Usage: "start an explicit daemon (in the background unless --foreground)",
				Description: `Starts a daemon process for the store and returns once it answers. If a
process already serves the store, says which and exits 0; so do starts
run at once (one daemon starts, the others find it). Its log is
.tavern/.daemon.log. A daemon that exits before it serves fails this
command with its own error and exit code, and one that does not answer
within --wait is stopped (exit 3); one that cannot make its socket
(.tavern/.daemon.sock) exits with that error rather than retrying, and one
that finds another process serving says so and exits 0 (it does not stand
by). --foreground serves from this process until interrupted (or tavern
daemon stop).

Examples:
   tavern daemon start
   tavern daemon start --foreground &`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "foreground", Usage: "serve from this process"},
					&cli.DurationFlag{Name: "wait", Value: 2 * time.Minute, Usage: "wait at most `DUR` for the daemon to answer",
						Action: positiveDur("wait", "the daemon would be given up on before it could answer")},
				},
				Action: runDaemonStart,
			},
			{
				Name:  "stop",
				Usage: "stop the explicit daemon",
				Description: `Asks the explicit daemon to stop and waits until it has (at most --wait).
Exit 3 if none serves or it still serves after --wait; exit 1 if the store
is served by another kind of process (stop that process instead).

Examples:
   tavern daemon stop
   tavern daemon stop --wait 5s`,
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "wait at most `DUR` for the daemon to stop serving",
						Action: positiveDur("wait", "the stop would be given up on before the daemon could stop")},
				},
				Action: runDaemonStop,
			},
			{
				Name:  "status",
				Usage: "which process serves the store's queries",
				Description: `Prints the serving process, its pid, the documents it holds, how many
syncs and queries it has done. Exit 3 if none serves.

Examples:
   tavern daemon status
   tavern daemon status --json`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runDaemonStatus,
			},
		},
	}
}

// daemonMode is TAVERN_DAEMON: "" (use a daemon when one answers), "off",
// "require".
func daemonMode() string { return strings.ToLower(os.Getenv("TAVERN_DAEMON")) }

func daemonTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("TAVERN_DAEMON_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return daemon.DefaultTimeout
}

// errNoDaemon: TAVERN_DAEMON=require and no daemon answered.
var errNoDaemon = errors.New("TAVERN_DAEMON=require: no query daemon answered")

// askDaemon runs op on the store's daemon. ok is false when the caller
// must answer from the files (no daemon, or it failed); err is set only
// under TAVERN_DAEMON=require.
func askDaemon(c *cli.Context, s *docstore.Store, op string, args any) (info json.RawMessage, payload []byte, ok bool, err error) {
	mode := daemonMode()
	if mode == "off" {
		return nil, nil, false, nil
	}
	info, payload, err = daemon.Call(c.Context, s.Root(), op, args, daemonTimeout())
	if err != nil {
		if mode == "require" {
			return nil, nil, false, fmt.Errorf("%w: %w", errNoDaemon, err)
		}
		return nil, nil, false, nil
	}
	return info, payload, true, nil
}

// serveQueries makes this long-running process the store's query daemon
// (now, or when the current one ends), answering from p. It returns the
// function that stops serving.
func serveQueries(c *cli.Context, s *docstore.Store, p *watcher.Projection, who string) func() {
	if daemonMode() == "off" {
		return func() {}
	}
	srv, err := daemon.Start(p, daemon.Options{Who: who, Handlers: queryHandlers(s),
		OnError: func(err error) { reportErr(c, "daemon", err) }})
	if err != nil {
		return func() {} // a polling projection: reads go to the files
	}
	return func() { srv.Close() }
}

// openServingProjection opens, in the background, a full watching
// projection for a long-running process that has none of its own (pool
// run, verifier), serves queries from it, and gives the manager's reaper
// its agents from it. It returns the function that stops all that (it
// waits for an opening still under way); with TAVERN_DAEMON=off it does
// nothing. With onlyIfNone (a pool, which reaps through its takes and
// needs no projection of its own) it opens one only while no other process
// serves the store, checked every few seconds: a hundred pools on one
// store do not each hold a projection of it.
func openServingProjection(c *cli.Context, m *agents.Manager, who string, onlyIfNone bool) func() {
	if daemonMode() == "off" {
		return func() {}
	}
	var (
		mu      sync.Mutex
		stopped bool
		cleanup = func() {}
	)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for onlyIfNone {
			if _, err := daemon.GetStatus(context.Background(), m.Store.Root(), daemonTimeout()); err != nil {
				break
			}
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Second):
			}
		}
		p, err := watcher.Open(m.Store, watcher.Options{Watch: true, Cache: true})
		if err != nil {
			warnf(c, nil, "no query daemon: %w", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			p.Close()
			return
		}
		m.SetReapCandidates(reapCandidates(p, m.Host))
		stop := serveQueries(c, m.Store, p, who)
		longRunningMemory(0)
		cleanup = func() {
			m.SetReapCandidates(nil)
			stop()
			p.Close()
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		close(quit)
		<-done
		cleanup()
	}
}

// reapCandidates answers agents.Manager.ReapCandidates from a watching
// projection: the agents whose document names this host.
func reapCandidates(p *watcher.Projection, host string) func() ([]string, error) {
	return func() ([]string, error) {
		es, err := p.Query(watcher.Query{Kind: "agents", Where: []docstore.Cond{{Field: "host", Op: "=", Value: host}}})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(es))
		for _, e := range es {
			names = append(names, e.Name)
		}
		return names, nil
	}
}

// daemonStarted is daemon start's --json answer: already_served is true
// when a process already served the store (who says which).
type daemonStarted struct {
	Already bool   `json:"already_served"`
	PID     int    `json:"pid"`
	Who     string `json:"who"`
	Root    string `json:"root"`
	Docs    int    `json:"documents"`
}

func runDaemonStart(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("daemon start takes no arguments")
	}
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	if st, err := daemon.GetStatus(c.Context, dir, daemonTimeout()); err == nil {
		if c.Bool("json") {
			return printJSON(c, daemonStarted{Already: true, PID: st.PID, Who: st.Who, Root: dir, Docs: st.Docs})
		}
		outf(c, "already served by %s (pid %d)\n", st.Who, st.PID)
		return nil
	}
	if c.Bool("foreground") {
		return runDaemonForeground(c)
	}
	// What the daemon will open first, opened here: a tavern.md it
	// cannot read is this command's error (path:line:col, exit 5), not
	// a daemon that exits before serving with its log as the message.
	s, err := docstore.Open(dir)
	if err != nil {
		return err
	}
	b, err := queues.Open(s, queues.Options{})
	if err != nil {
		return err
	}
	b.Close()
	// This program, as it was started (a build run from $PATH under
	// another name, or a test binary standing in for tavern, dispatches
	// on its name).
	exe, err := exec.LookPath(os.Args[0])
	if err != nil {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	// The child logs into a file of its own until it serves, then that
	// file becomes .daemon.log: a start that loses a race to another
	// (two hooks starting the daemon at once) must not cut the running
	// daemon's log under it.
	logPath := filepath.Join(dir, ".daemon.log")
	tmpLog := fmt.Sprintf("%s.%d", logPath, os.Getpid())
	logf, err := os.OpenFile(tmpLog, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	defer os.Remove(tmpLog) // gone already unless the daemon never served
	keepLog := func() string {
		if os.Rename(tmpLog, logPath) != nil {
			return tmpLog
		}
		return logPath
	}
	// --json: the child's error, should it exit before serving, is the
	// last line of its log as a JSON error object, which daemonExited
	// turns back into this command's error.
	cmd := exec.Command(exe, "daemon", "start", "--foreground", "--json")
	cmd.Env = append(os.Environ(), "TAVERN_DIR="+dir)
	cmd.Dir = filepath.Dir(dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this shell
	if err := cmd.Start(); err != nil {
		return err
	}
	// exited is closed when the child is gone (waitErr is then its
	// status): several places wait for it.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(c.Duration("wait"))
	served := func(st *daemon.Status) error {
		already := st.PID != cmd.Process.Pid // another start's child won the race
		if already {
			// Ours, still starting, would serve once that one stops.
			stopChild(cmd.Process, exited)
		} else {
			keepLog()
		}
		if c.Bool("json") {
			return printJSON(c, daemonStarted{Already: already, PID: st.PID, Who: st.Who, Root: dir, Docs: st.Docs})
		}
		if already {
			outf(c, "already served by %s (pid %d)\n", st.Who, st.PID)
			return nil
		}
		outf(c, "started: pid %d serves %s (%s)\n", st.PID, dir, counted(st.Docs, "document"))
		return nil
	}
	for {
		if st, err := daemon.GetStatus(c.Context, dir, daemonTimeout()); err == nil {
			return served(st)
		}
		select {
		case <-exited:
			// A child that found another daemon serving exits 0.
			if st, serr := daemon.GetStatus(c.Context, dir, daemonTimeout()); serr == nil {
				return served(st)
			}
			return daemonExited(keepLog(), waitErr)
		case <-c.Context.Done():
			stopChild(cmd.Process, exited) // interrupted: nothing left behind
			return c.Context.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			// A failed start leaves nothing behind: the child, merely
			// slow, would otherwise start serving after this said it
			// did not.
			stopChild(cmd.Process, exited)
			if st, err := daemon.GetStatus(c.Context, dir, daemonTimeout()); err == nil && st.PID != cmd.Process.Pid {
				return served(st)
			}
			return fmt.Errorf("%w and was stopped (see %s)", timedOut(context.DeadlineExceeded, c.Duration("wait"), "daemon pid %d did not answer", cmd.Process.Pid), keepLog())
		}
	}
}

// stopChild ends a daemon child that did not answer in time: SIGTERM,
// then SIGKILL if it has not exited 5 s later.
func stopChild(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// daemonExited is the error of a background daemon that exited before
// it served: the child's own, as it reported it (the JSON error object
// that ends its log: message and position) with its exit status, so
// `daemon start` fails as `daemon start --foreground` would have. A child
// that left no such line (killed by a signal) is named by its log and
// status.
func daemonExited(logPath string, waitErr error) error {
	log, _ := os.ReadFile(logPath)
	text := strings.TrimSpace(string(log))
	code := exitError
	var xe *exec.ExitError
	if errors.As(waitErr, &xe) && xe.ExitCode() > 0 {
		code = xe.ExitCode()
	}
	last := text[strings.LastIndexByte(text, '\n')+1:]
	var ce childError
	if json.Unmarshal([]byte(last), &ce) == nil && ce.Msg != "" {
		return withCode(code, &ce)
	}
	return withCode(code, fmt.Errorf("daemon exited before serving (%v): %s", waitErr, text))
}

// runDaemonForeground is the explicit daemon: a full watching projection
// that serves queries and reaps, until interrupted or stopped.
func runDaemonForeground(c *cli.Context) error {
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	// The reaper's queues first: a tavern.md they cannot read is the
	// error every command gives (path:line:col, exit 5), not a warning
	// in .daemon.log behind a "started" — and a daemon that reaps
	// nothing for the rest of its life.
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		return err
	}
	defer b.Close()
	longRunningStart()
	p, err := watcher.Open(m.Store, watcher.Options{Watch: true, Cache: true})
	if err != nil {
		return err
	}
	defer p.Close()
	if p.Polling() {
		return fmt.Errorf("%s: %s: a polling projection cannot prove it is current, so it cannot serve queries", m.Store.Root(), p.Mode())
	}
	ctx, stop := context.WithCancel(c.Context)
	defer stop()
	var mu sync.Mutex
	var starting = true
	var startErr error
	srv, err := daemon.Start(p, daemon.Options{Who: "tavern daemon", Explicit: true, OnStop: stop,
		Handlers: queryHandlers(m.Store), OnError: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if starting {
				startErr = err // the first attempt's: returned below
				return
			}
			reportErr(c, "daemon", err)
		}})
	if err != nil {
		return err
	}
	defer srv.Close()
	mu.Lock()
	starting = false
	first := startErr
	mu.Unlock()
	if first != nil && !srv.Serving() {
		// The explicit daemon exists to serve: a socket it cannot make
		// is its error (daemon start reports it), not a retry every few
		// seconds for ever behind a "started". A process that serves
		// already is no error (the server said nothing).
		return fmt.Errorf("daemon: %w", first)
	}
	if !srv.Serving() {
		// Another process serves (it started between daemon start's
		// check and this one): the explicit daemon does not stand by to
		// take over, or `daemon stop` would stop one and leave this one
		// serving. It says who serves, as daemon start does; its server
		// is closed first, or it could take over meanwhile.
		srv.Close()
		return alreadyServed(c, m.Store.Root())
	}
	m.SetReapCandidates(reapCandidates(p, m.Host))
	defer runReaper(c, m, b)()
	longRunningMemory(0)
	errf(c, "tavern: daemon for %s (%s)\n", m.Store.Root(), counted(p.Len(), "document"))
	<-ctx.Done()
	return nil
}

// alreadyServed is the explicit daemon's answer when another process
// holds the store's daemon lock: who serves, once it answers (it may be
// making its socket still).
func alreadyServed(c *cli.Context, dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := daemon.GetStatus(c.Context, dir, daemonTimeout())
		if err == nil {
			if c.Bool("json") {
				return printJSON(c, daemonStarted{Already: true, PID: st.PID, Who: st.Who, Root: dir, Docs: st.Docs})
			}
			outf(c, "already served by %s (pid %d)\n", st.Who, st.PID)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another process holds the daemon lock of %s but does not answer: %w", dir, err)
		}
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func runDaemonStop(c *cli.Context) error {
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	st, err := daemon.GetStatus(c.Context, dir, daemonTimeout())
	if err != nil {
		return &notFoundError{msg: "no daemon serves " + dir}
	}
	if !st.Explicit {
		return fmt.Errorf("%s is served by %s (pid %d), which does not stop on request: stop that process", dir, st.Who, st.PID)
	}
	if err := daemon.Stop(c.Context, dir, daemonTimeout()); err != nil {
		return err
	}
	deadline := time.Now().Add(c.Duration("wait"))
	for {
		cur, err := daemon.GetStatus(c.Context, dir, daemonTimeout())
		if err != nil || cur.PID != st.PID {
			if c.Bool("json") {
				return printJSON(c, map[string]any{"stopped": true, "pid": st.PID, "root": dir})
			}
			outf(c, "stopped: pid %d\n", st.PID)
			return nil
		}
		if time.Now().After(deadline) {
			return timedOut(context.DeadlineExceeded, c.Duration("wait"), "daemon pid %d did not stop", st.PID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runDaemonStatus(c *cli.Context) error {
	dir, err := storeDir(c)
	if err != nil {
		return err
	}
	st, err := daemon.GetStatus(c.Context, dir, daemonTimeout())
	if err != nil {
		if c.Bool("json") {
			printJSON(c, map[string]any{"running": false, "root": dir})
			return errSilentNothing
		}
		return &notFoundError{msg: "no daemon serves " + dir}
	}
	if c.Bool("json") {
		return printJSON(c, struct {
			Running bool `json:"running"`
			*daemon.Status
		}{true, st})
	}
	outf(c, "%s (pid %d) serves %s\n", st.Who, st.PID, st.Root)
	outf(c, "  since %s, %s, %s\n", st.Started.Format(time.RFC3339), counted(st.Docs, "document"), st.Mode)
	outf(c, "  %s, %s answered\n", counted(int(st.Gen), "sync"), counted(int(st.Served), "query", "queries"))
	return nil
}
