package main

// make bench, issue 21 goals 1, 3 and 5: the built binary on stores of
// 10k, 30k and 100k agent documents of about 1 KiB each (1% of them
// state: working), written as plain files and indexed once, against
// what a person would run on the same tree in the same run.
//
//   - BenchmarkScale/docs=N/ls-cold: `ls agents --where state=working`
//     without the index cache (ms/op; rss-MiB, the peak resident size).
//   - .../ls-warm: the same with the index cache warm, no daemon.
//   - .../ls-daemon: the same while `tavern daemon start` serves.
//   - .../watch-ready: `tavern watch` from exec to its ready line.
//   - .../daemon-ready: `tavern daemon start --foreground` from exec to
//     its first answer; rss-MiB, its resident size then.
//   - BenchmarkScaleBaseline/docs=N/{find,find-stat,grep}: `find .tavern |
//     wc -l`, `find .tavern -printf '%T@\n' | wc -l` (a stat of every file,
//     what any answer that must notice an edit does) and `grep -rl`.
//   - BenchmarkProjectionMemory: the daemon and `tavern watch` on the 100k
//     store, resident size when ready, after 3,000 hand edits (sed -i
//     style: a new file renamed over the old) and after 30,000.
//
// The stores are built once per TAVERN_BENCH_DIR (make bench keeps it for
// all rounds) and reused.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/daemon"
)

// scaleSizes are the store sizes; TAVERN_BENCH_SCALE=10000,30000 picks
// some (a quicker run).
var scaleSizes = func() []int {
	sizes := []int{10_000, 30_000, 100_000}
	if v := os.Getenv("TAVERN_BENCH_SCALE"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	return sizes
}()

var scaleStores struct {
	sync.Mutex
	dirs map[int]string
}

// scaleStore returns the project of n agent documents, building it if
// this TAVERN_BENCH_DIR has none yet: written as plain files, then a
// `tavern watch` runs until it has journaled every one of them (as it
// would the first time on a tree written by hand), so the journal's
// heads and the index cache exist as they do in a store in use.
func scaleStore(b *testing.B, n int) string {
	b.Helper()
	tavern := benchTavern(b)
	scaleStores.Lock()
	defer scaleStores.Unlock()
	if d := scaleStores.dirs[n]; d != "" {
		return d
	}
	base := os.Getenv("TAVERN_BENCH_DIR")
	if base == "" {
		base = filepath.Join(os.TempDir(), "tavern-scale-bench")
	}
	dir := filepath.Join(base, fmt.Sprintf("scale-%d", n))
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		os.RemoveAll(dir)
		if err := buildScaleStore(b, tavern, dir, n); err != nil {
			b.Fatal(err)
		}
	}
	if scaleStores.dirs == nil {
		scaleStores.dirs = map[int]string{}
	}
	scaleStores.dirs[n] = dir
	return dir
}

func scaleDoc(i, spawns int) string {
	state := "idle"
	if i%100 == 0 {
		state = "working"
	}
	return fmt.Sprintf("---\nschema_version: 1\nname: agent-%06d\nrole: worker\nstate: %s\nspawns: %d\ncreated: 2026-01-01T00:00:00.000Z\nupdated: 2026-01-01T00:00:00.000Z\n---\n## Assignment\n\n%s",
		i, state, spawns, strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", 14))
}

func buildScaleStore(b *testing.B, tavern, dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var st runStats
	if _, err := st.try(dir, nil, tavern, "init"); err != nil {
		return err
	}
	agents := filepath.Join(dir, ".tavern", "agents")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := os.WriteFile(filepath.Join(agents, fmt.Sprintf("agent-%06d.md", i)), []byte(scaleDoc(i, 0)), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	w := startScaleWatch(b, tavern, dir)
	if err := waitExternals(dir, n, 30*time.Minute); err != nil {
		w.stop()
		return err
	}
	w.stop()
	return os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
}

// waitExternals waits until the store's journal holds at least n external
// records (tavern watch journals every hand edit after its grace period).
func waitExternals(dir string, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		got, err := countJournal(dir, `"type":"external"`)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("journal: %d external records after %s, want %d", got, limit, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func countJournal(dir, needle string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, ".tavern", "events", "*.jsonl"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		n += bytes.Count(data, []byte(needle))
	}
	return n, nil
}

// longRun is a long-running tavern process of a benchmark.
type longRun struct {
	cmd     *exec.Cmd
	ready   time.Duration // from exec to its ready line
	stopped bool
}

func (l *longRun) stop() {
	if l.stopped {
		return
	}
	l.stopped = true
	l.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { l.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		l.cmd.Process.Kill()
		<-done
	}
}

// rss is the process's resident size in MiB.
func (l *longRun) rss() float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", l.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// startLong starts tavern args in dir and waits for a line containing
// ready on its stderr.
func startLong(b *testing.B, tavern, dir, ready string, env []string, args ...string) *longRun {
	b.Helper()
	cmd := exec.Command(tavern, args...)
	cmd.Dir = dir
	cmd.Env = append(benchEnv(), env...)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	l := &longRun{cmd: cmd}
	b.Cleanup(l.stop) // also when the benchmark fails
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(10 * time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				b.Fatalf("tavern %s exited before %q (is another daemon serving?)", strings.Join(args, " "), ready)
			}
			if strings.Contains(line, ready) {
				l.ready = time.Since(start)
				go func() {
					for range lines {
					}
				}()
				return l
			}
		case <-timeout:
			cmd.Process.Kill()
			b.Fatalf("tavern %s: no %q within 10 minutes", strings.Join(args, " "), ready)
		}
	}
}

func startScaleWatch(b *testing.B, tavern, dir string) *longRun {
	return startLong(b, tavern, dir, "tavern: watching", []string{"TAVERN_DAEMON=off"}, "watch")
}

// startScaleDaemon starts an explicit daemon in the foreground and waits
// until it answers.
func startScaleDaemon(b *testing.B, tavern, dir string) *longRun {
	l := startLong(b, tavern, dir, "tavern: daemon for", nil, "daemon", "start", "--foreground")
	root := filepath.Join(dir, ".tavern")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := daemon.GetStatus(context.Background(), root, 5*time.Second); err == nil {
			return l
		}
		if time.Now().After(deadline) {
			l.stop()
			b.Fatal("the daemon does not answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func BenchmarkScale(b *testing.B) {
	tavern := benchTavern(b)
	off := []string{"TAVERN_DAEMON=off"}
	ls := []string{tavern, "ls", "agents", "--where", "state=working"}
	for _, n := range scaleSizes {
		dir := scaleStore(b, n)
		var warm runStats
		warm.run(b, dir, off, ls...) // the index as the files are now
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			b.Run("ls-cold", func(b *testing.B) {
				var st runStats
				for range b.N {
					b.StopTimer()
					if err := os.RemoveAll(filepath.Join(dir, ".tavern", ".index")); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					st.run(b, dir, off, ls...)
				}
				st.report(b)
				b.ReportMetric(float64(st.maxRSS)/1024, "rss-MiB")
			})
			b.Run("ls-warm", func(b *testing.B) {
				var st runStats
				for range b.N {
					st.run(b, dir, off, ls...)
				}
				st.report(b)
				b.ReportMetric(float64(st.maxRSS)/1024, "rss-MiB")
			})
			b.Run("ls-daemon", func(b *testing.B) {
				b.StopTimer()
				d := startScaleDaemon(b, tavern, dir)
				b.StartTimer()
				var st runStats
				for range b.N {
					st.run(b, dir, []string{"TAVERN_DAEMON=require", "TAVERN_DAEMON_TIMEOUT=60s"}, ls...)
				}
				b.StopTimer()
				d.stop()
				st.report(b)
			})
			b.Run("watch-ready", func(b *testing.B) {
				var total time.Duration
				for range b.N {
					w := startScaleWatch(b, tavern, dir)
					total += w.ready
					b.StopTimer()
					w.stop()
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
			})
			b.Run("daemon-ready", func(b *testing.B) {
				var total time.Duration
				var rss float64
				for range b.N {
					d := startScaleDaemon(b, tavern, dir)
					total += d.ready
					b.StopTimer()
					rss = max(rss, d.rss())
					d.stop()
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
				b.ReportMetric(rss, "rss-MiB")
			})
		})
	}
}

func BenchmarkScaleBaseline(b *testing.B) {
	for _, n := range scaleSizes {
		dir := scaleStore(b, n)
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			for _, tc := range []struct{ name, sh string }{
				{"find", "find .tavern | wc -l"},
				{"find-stat", `find .tavern -printf '%T@\n' | wc -l`},
				{"grep", "grep -rl 'state: working' .tavern/agents | wc -l"},
			} {
				b.Run(tc.name, func(b *testing.B) {
					var st runStats
					for range b.N {
						st.run(b, dir, nil, "sh", "-c", tc.sh)
					}
					st.report(b)
				})
			}
		})
	}
}

// handEdits makes edits from..from+count of a run (edit k rewrites
// document k mod n with spawns base+k, so every edit changes its file)
// the way sed -i does (a new file renamed over the old).
func handEdits(b *testing.B, dir string, from, count, n, base int) {
	b.Helper()
	agents := filepath.Join(dir, ".tavern", "agents")
	for k := from; k < from+count; k++ {
		i := k % n
		tmp := filepath.Join(agents, fmt.Sprintf(".sed%06d", i))
		if err := os.WriteFile(tmp, []byte(scaleDoc(i, base+k)), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(agents, fmt.Sprintf("agent-%06d.md", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// settledRSS samples the resident sizes of the daemon d and the watch w
// once a second for a reconcile period (the full rescan every 30 s
// allocates a listing of every file, returned a few seconds later) and
// records each one's median as daemon-<label>-MiB and watch-<label>-MiB,
// the largest sample as ...-peak-MiB. One sample would land on a rescan's
// garbage or not by chance: 20 MiB apart at 100k documents.
func settledRSS(figures map[string]float64, label string, d, w *longRun) {
	var ds, ws []float64
	for range 30 {
		ds, ws = append(ds, d.rss()), append(ws, w.rss())
		time.Sleep(time.Second)
	}
	for name, xs := range map[string][]float64{"daemon": ds, "watch": ws} {
		slices.Sort(xs)
		figures[name+"-"+label+"-MiB"] = xs[len(xs)/2]
		figures[name+"-"+label+"-peak-MiB"] = xs[len(xs)-1]
	}
}

// BenchmarkProjectionMemory: resident sizes of the daemon and of tavern
// watch on the 100k store, ready and after hand edits (MiB; the goal is
// ≤ 150 MiB, and 30,000 edits ≤ 1.1× 3,000), each the median of a
// reconcile period's samples (settledRSS).
func BenchmarkProjectionMemory(b *testing.B) {
	tavern := benchTavern(b)
	n := scaleSizes[len(scaleSizes)-1] // 100k unless TAVERN_BENCH_SCALE says otherwise
	dir := scaleStore(b, n)
	var warm runStats
	warm.run(b, dir, []string{"TAVERN_DAEMON=off"}, tavern, "ls", "agents")
	for range b.N {
		d := startScaleDaemon(b, tavern, dir)
		w := startScaleWatch(b, tavern, dir)
		// Both settle what they read at start-up (and the watch its
		// journal) before the first figure: a watching projection saves
		// a stale index 5 s after it opened (initialSaveDelay), and
		// returns that save's garbage a tick or two later (idleTrim).
		time.Sleep(10 * time.Second)
		figures := map[string]float64{}
		settledRSS(figures, "ready", d, w)
		base, err := countJournal(dir, `"type":"external"`)
		if err != nil {
			b.Fatal(err)
		}
		spawns := int(time.Now().Unix()%1000) * 1_000_000
		edited := 0
		for _, step := range []struct {
			label string
			edits int
		}{{"3k", 3000}, {"30k", 27000}} {
			handEdits(b, dir, edited, step.edits, n, spawns)
			edited += step.edits
			// Seen by the daemon (a query syncs it) and journaled by
			// the watch (each edit after its grace period).
			var q runStats
			if out := q.run(b, dir, []string{"TAVERN_DAEMON=require", "TAVERN_DAEMON_TIMEOUT=120s"}, tavern, "ls", "agents", "--where", "spawns="+strconv.Itoa(spawns+edited-1), "--limit", "1"); !strings.Contains(out, "agent-") {
				b.Fatalf("the daemon does not list the last edit: %q", out)
			}
			if err := waitExternals(dir, base+edited, 10*time.Minute); err != nil {
				b.Fatal(err)
			}
			// Settled: the memory limit follows the live heap, and a
			// burst's garbage is returned once a tick (2 s) passed
			// without a collection (idleTrim).
			time.Sleep(8 * time.Second)
			settledRSS(figures, step.label, d, w)
		}
		w.stop()
		d.stop()
		for k, v := range figures {
			b.ReportMetric(v, k)
		}
	}
}
