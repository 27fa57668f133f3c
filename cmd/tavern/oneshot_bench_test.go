package main

// make bench, issue 21 goal 2: one-shot commands of the built binary (as
// `make build` builds it) against the same work done by the programs a
// user would otherwise reach for, in the same run:
//
//   - BenchmarkOneShot/{take-done,show,set,send,recv,ls-where-2k}: tavern
//     on a project whose store holds 2,000 items in one queue (1,800 of
//     them priority 1), an agent and a channel, the project a git
//     repository with the store committed.
//   - BenchmarkOneShot/ls-where-2k-daemon: the same ls while a query
//     daemon (tavern daemon start) serves the project.
//   - BenchmarkOneShotBaseline/sqlite-*: the sqlite3 command doing the
//     same on a WAL database of the same rows (a claim and a completion
//     are two calls, as they are two tavern commands); git-status: git
//     status in the same project. The floors: tavern-help (starting
//     this binary at all), tavern-init (the binary built to exit once its
//     packages are initialised: exec, runtime and package init, no
//     command), ls-floor-2k (the binary built to do, once initialised,
//     only the reads, lstats and write of ls-where-2k: lsfloor.go) and
//     go-hello (starting a Go program that prints a line).
//
// Metrics: ms/op (wall, per command or pair of commands) and cpu-ms/op
// (the child's user+system time, which a loaded machine inflates less).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore/storetest"
)

var (
	benchBinsMu sync.Mutex
	benchBins   = map[string]string{} // build tags: binary
)

// benchTavern returns the path of a tavern built as `make build` builds
// it: the test binary (which testscript installs as tavern) starts slower
// than the real one, and start-up is what one-shot figures measure.
func benchTavern(b *testing.B) string {
	b.Helper()
	return benchTavernTags(b, "urfave_cli_no_docs")
}

// benchTavernTags is benchTavern built with other tags, once per process.
func benchTavernTags(b *testing.B, tags string) string {
	b.Helper()
	benchBinsMu.Lock()
	defer benchBinsMu.Unlock()
	if bin, ok := benchBins[tags]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "tavern-bench-bin-")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "tavern")
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build -tags %s: %v\n%s", tags, err, out)
	}
	benchBins[tags] = bin
	return bin
}

// runStats accumulates the wall and CPU time of the commands a benchmark
// runs.
type runStats struct {
	wall, cpu time.Duration
	maxRSS    int64 // KiB, the largest of any command
}

// run runs argv in dir with env added and returns its stdout; the time it
// took is added to st.
func (st *runStats) run(b *testing.B, dir string, env []string, argv ...string) string {
	b.Helper()
	out, err := st.try(dir, env, argv...)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func (st *runStats) try(dir string, env []string, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(benchEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	st.wall += time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		st.cpu += ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > st.maxRSS {
			st.maxRSS = ru.Maxrss
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v\n%s%s", strings.Join(argv, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

func (st *runStats) report(b *testing.B) {
	b.ReportMetric(float64(st.wall.Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(st.cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// benchEnv is the environment without the caller's TAVERN_* settings.
func benchEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "TAVERN_") {
			env = append(env, e)
		}
	}
	return append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

var (
	oneShotOnce sync.Once
	oneShotDir  string
	oneShotErr  error
)

// oneShotStore builds, once per process, the project of the one-shot
// benchmarks and the sqlite3 database of the baselines beside it.
func oneShotStore(b *testing.B) string {
	b.Helper()
	tavern := benchTavern(b)
	oneShotOnce.Do(func() {
		oneShotDir = storetest.BenchDir(b)
		oneShotErr = fillOneShotStore(tavern, oneShotDir)
	})
	if oneShotErr != nil {
		b.Fatal(oneShotErr)
	}
	return oneShotDir
}

func fillOneShotStore(tavern, dir string) error {
	var st runStats
	for _, argv := range [][]string{
		{tavern, "init"},
		{tavern, "queue", "create", "build"},
		{tavern, "agent", "new", "alice", "--role", "builder"},
		{tavern, "agent", "new", "bob", "--role", "builder"},
		{tavern, "channel", "create", "general"},
	} {
		if _, err := st.try(dir, nil, argv...); err != nil {
			return err
		}
	}
	if err := addOneShotItems(dir, 0, 2000); err != nil {
		return err
	}
	for i := range 100 {
		if _, err := st.try(dir, []string{"TAVERN_AGENT=bob"}, tavern, "send", "general", fmt.Sprintf("message %d", i)); err != nil {
			return err
		}
	}
	for _, argv := range [][]string{{"git", "init", "-q", "."}, {"git", "add", "-A"}, {"git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "store"}} {
		if _, err := st.try(dir, nil, argv...); err != nil {
			return err
		}
	}
	// The baseline's database: the same items, agents and messages.
	var sql strings.Builder
	sql.WriteString("PRAGMA journal_mode=WAL;\n" +
		"CREATE TABLE items(id TEXT PRIMARY KEY, queue TEXT, title TEXT, priority INT, state TEXT, attempts INT, claimed_by TEXT, updated TEXT);\n" +
		"CREATE INDEX items_take ON items(queue, state, priority, id);\n" +
		"CREATE TABLE agents(name TEXT PRIMARY KEY, role TEXT, state TEXT, note TEXT, updated TEXT);\n" +
		"CREATE TABLE messages(id INTEGER PRIMARY KEY, channel TEXT, sender TEXT, body TEXT, sent TEXT);\n" +
		"CREATE TABLE bookmarks(agent TEXT, channel TEXT, last INT, PRIMARY KEY(agent, channel));\n" +
		"INSERT INTO agents VALUES('alice','builder','idle','',''),('bob','builder','idle','','');\nBEGIN;\n")
	for i := range 2000 {
		fmt.Fprintf(&sql, "INSERT INTO items VALUES('%s','build','task %d',%d,'pending',0,'','');\n", oneShotID(i), i, oneShotPriority(i))
	}
	for i := range 100 {
		fmt.Fprintf(&sql, "INSERT INTO messages(channel, sender, body, sent) VALUES('general','bob','message %d','');\n", i)
	}
	sql.WriteString("COMMIT;\n")
	cmd := exec.Command("sqlite3", filepath.Join(dir, "bench.db"))
	cmd.Stdin = strings.NewReader(sql.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sqlite3: %v\n%s", err, out)
	}
	return nil
}

func oneShotID(i int) string {
	return fmt.Sprintf("p%02d-%08d-0000-7000-8000-000000000000", oneShotPriority(i), i)
}

func oneShotPriority(i int) int {
	if i%10 == 0 {
		return 2
	}
	return 1
}

// addOneShotItems writes items [from, to) of the queue as tavern writes
// them (written directly: the tree is the fixture).
func addOneShotItems(dir string, from, to int) error {
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	for i := from; i < to; i++ {
		id := oneShotID(i)
		text := fmt.Sprintf("---\nschema_version: 1\nid: %s\nqueue: build\ntitle: task %d\npriority: %d\nattempts: 0\ncreated: %s\nupdated: %s\n---\nDo task %d.\n", id, i, oneShotPriority(i), now, now, i)
		if err := os.WriteFile(filepath.Join(dir, ".tavern", "queues", "build", "pending", id+".md"), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func needSQLite(b *testing.B) {
	b.Helper()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		b.Skip("sqlite3 is not installed (apt-get install sqlite3): no baseline")
	}
}

func BenchmarkOneShot(b *testing.B) {
	needSQLite(b)
	dir := oneShotStore(b)
	tavern := benchTavern(b)
	alice := []string{"TAVERN_AGENT=alice"}
	bob := []string{"TAVERN_AGENT=bob"}
	// TAVERN_DAEMON=off: no daemon serves this project anyway; the point is
	// the path a one-shot command takes without one.
	off := "TAVERN_DAEMON=off"
	b.Run("take-done", func(b *testing.B) {
		var st runStats
		for range b.N {
			out := st.run(b, dir, append(alice, off), tavern, "queue", "take", "build")
			id, attempt, ok := strings.Cut(strings.SplitN(out, "\n", 2)[0], " ")
			if !ok {
				b.Fatalf("queue take: %q", out)
			}
			st.run(b, dir, append(alice, off), tavern, "item", "done", id, "--attempt", attempt)
		}
		st.report(b)
	})
	b.Run("show", func(b *testing.B) {
		var st runStats
		for range b.N {
			st.run(b, dir, []string{off}, tavern, "show", "agents/alice")
		}
		st.report(b)
	})
	b.Run("set", func(b *testing.B) {
		var st runStats
		for i := range b.N {
			st.run(b, dir, []string{off}, tavern, "set", "agents/alice", "note=n"+strconv.Itoa(i))
		}
		st.report(b)
	})
	b.Run("send", func(b *testing.B) {
		var st runStats
		for i := range b.N {
			st.run(b, dir, append(alice, off), tavern, "send", "general", "hello "+strconv.Itoa(i))
		}
		st.report(b)
	})
	b.Run("recv", func(b *testing.B) {
		var st, setup runStats
		for i := range b.N {
			b.StopTimer()
			setup.run(b, dir, append(alice, off), tavern, "send", "general", "for bob "+strconv.Itoa(i))
			b.StartTimer()
			st.run(b, dir, append(bob, off), tavern, "recv", "general")
		}
		st.report(b)
	})
	lsWhere := func(b *testing.B, env []string) {
		var st runStats
		for range b.N {
			out := st.run(b, dir, env, tavern, "ls", "items", "--where", "priority=1", "--json")
			if b.N == 1 {
				var list []json.RawMessage
				if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) < 1000 {
					b.Fatalf("ls --json: %d documents, %v", len(list), err)
				}
			}
		}
		st.report(b)
	}
	b.Run("ls-where-2k", func(b *testing.B) { lsWhere(b, []string{off}) })
	b.Run("ls-where-2k-daemon", func(b *testing.B) {
		stop := startBenchDaemon(b, tavern, dir)
		defer stop()
		lsWhere(b, []string{"TAVERN_DAEMON=require", "TAVERN_DAEMON_TIMEOUT=30s"})
	})
}

// startBenchDaemon starts `tavern daemon start` for the project in dir
// (untimed) and returns the function that stops it.
func startBenchDaemon(b *testing.B, tavern, dir string) func() {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	var st runStats
	st.run(b, dir, nil, tavern, "daemon", "start")
	return func() {
		b.StopTimer()
		defer b.StartTimer()
		st.try(dir, nil, tavern, "daemon", "stop")
	}
}

// helloBin builds a Go program that prints a line: the floor of any Go
// command's start-up on this machine.
func helloBin(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	return filepath.Join(dir, "hello")
}

func BenchmarkOneShotBaseline(b *testing.B) {
	needSQLite(b)
	dir := oneShotStore(b)
	db := filepath.Join(dir, "bench.db")
	sqlite := func(st *runStats, b *testing.B, sql string) string {
		return st.run(b, dir, nil, "sqlite3", db, "PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;"+sql)
	}
	b.Run("sqlite-take-done", func(b *testing.B) {
		var st runStats
		for range b.N {
			out := sqlite(&st, b, "UPDATE items SET state='claimed', claimed_by='alice', attempts=attempts+1, updated=datetime('now') "+
				"WHERE id=(SELECT id FROM items WHERE queue='build' AND state='pending' ORDER BY priority, id LIMIT 1) RETURNING id, attempts;")
			id, attempts, ok := strings.Cut(strings.TrimSpace(out), "|")
			if !ok {
				b.Fatalf("take: %q", out)
			}
			sqlite(&st, b, fmt.Sprintf("UPDATE items SET state='done', updated=datetime('now') WHERE id='%s' AND attempts=%s AND state='claimed';", id, attempts))
		}
		st.report(b)
	})
	b.Run("sqlite-show", func(b *testing.B) {
		var st runStats
		for range b.N {
			sqlite(&st, b, "SELECT * FROM agents WHERE name='alice';")
		}
		st.report(b)
	})
	b.Run("sqlite-set", func(b *testing.B) {
		var st runStats
		for i := range b.N {
			sqlite(&st, b, fmt.Sprintf("UPDATE agents SET note='n%d', updated=datetime('now') WHERE name='alice';", i))
		}
		st.report(b)
	})
	b.Run("sqlite-send", func(b *testing.B) {
		var st runStats
		for i := range b.N {
			sqlite(&st, b, fmt.Sprintf("INSERT INTO messages(channel, sender, body, sent) VALUES('general','alice','hello %d',datetime('now'));", i))
		}
		st.report(b)
	})
	b.Run("sqlite-recv", func(b *testing.B) {
		var st, setup runStats
		for i := range b.N {
			b.StopTimer()
			sqlite(&setup, b, fmt.Sprintf("INSERT INTO messages(channel, sender, body, sent) VALUES('general','alice','for bob %d',datetime('now'));", i))
			b.StartTimer()
			sqlite(&st, b, "BEGIN IMMEDIATE; SELECT id, sender, body FROM messages WHERE channel='general' AND id > "+
				"COALESCE((SELECT last FROM bookmarks WHERE agent='bob' AND channel='general'), 0); "+
				"INSERT INTO bookmarks VALUES('bob','general',(SELECT MAX(id) FROM messages WHERE channel='general')) "+
				"ON CONFLICT(agent, channel) DO UPDATE SET last=excluded.last; COMMIT;")
		}
		st.report(b)
	})
	b.Run("git-status", func(b *testing.B) {
		var st runStats
		for range b.N {
			st.run(b, dir, nil, "git", "status")
		}
		st.report(b)
	})
	b.Run("tavern-help", func(b *testing.B) {
		tavern := benchTavern(b)
		var st runStats
		for range b.N {
			st.run(b, dir, nil, tavern, "--help")
		}
		st.report(b)
	})
	// Built to exit once initialised (exitinit.go): the part of every
	// command that no command's work can save. Built here, untimed.
	initOnly := benchTavernTags(b, "urfave_cli_no_docs,tavern_exit_at_init")
	b.Run("tavern-init", func(b *testing.B) {
		tavern := initOnly
		var st runStats
		for range b.N {
			st.run(b, dir, nil, tavern)
		}
		st.report(b)
	})
	// Built to do only the input and output that ls without a daemon
	// cannot do without (lsfloor.go): the floor of ls-where-2k. Its answer
	// is as long as the real one, whose run (untimed) also leaves the
	// index current. Built here, untimed.
	lsFloor := benchTavernTags(b, "urfave_cli_no_docs,tavern_ls_floor")
	b.Run("ls-floor-2k", func(b *testing.B) {
		b.StopTimer()
		var setup, st runStats
		out := setup.run(b, dir, []string{"TAVERN_DAEMON=off"}, benchTavern(b), "ls", "items", "--where", "priority=1", "--json")
		env := []string{"TAVERN_FLOOR_BYTES=" + strconv.Itoa(len(out))}
		b.StartTimer()
		for range b.N {
			if got := st.run(b, dir, env, lsFloor); len(got) != len(out) {
				b.Fatalf("ls floor wrote %d bytes, want %d", len(got), len(out))
			}
		}
		st.report(b)
	})
	b.Run("go-hello", func(b *testing.B) {
		hello := helloBin(b)
		var st runStats
		for range b.N {
			st.run(b, dir, nil, hello)
		}
		st.report(b)
	})
}
