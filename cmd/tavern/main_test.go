package main

// The CLI's contract (commands, output, exit codes, files on disk) is
// tested by the scripts in testdata/script/*.txtar (testscript: `exec
// tavern ...` runs this package's main in a subprocess, the test binary
// standing in for the tavern binary). Tests of several processes at once
// (races, blocked waits woken by another process, signals, crashes) stay
// in Go, in proc_test.go; they run the same binary from $PATH.

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){"tavern": main})
}

// cleanupM removes the plain build (binDir) after the tests and ends the
// shared chromium (sharedBrowser).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	code := c.m.Run()
	stopBrowser()
	if plainDir != "" {
		os.RemoveAll(plainDir)
	}
	return code
}

var (
	plainOnce sync.Once
	plainDir  string
	plainErr  error
)

// binDir is a directory to put before $PATH so that `tavern` is a build
// of this command without the race detector, or "" to run this test
// binary, which testscript.Main installed on $PATH as tavern. Under -race
// that binary pays the race runtime's start-up (0.2s against 0.03s, and a
// second's sleep at exit unless GORACE says otherwise) on each of the
// thousands of runs, which does not fit `make test`'s budget; the race
// detector is for the library, whose tests run under it.
func binDir(tb testing.TB) string {
	dir, err := plainBuild()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

func plainBuild() (string, error) {
	if !raceEnabled {
		return "", nil
	}
	if dir := os.Getenv(testBinDirEnv); dir != "" {
		return sharedBuild(dir)
	}
	plainOnce.Do(func() {
		plainDir, plainErr = os.MkdirTemp("", "tavern-plain-")
		if plainErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(plainDir, "tavern"), ".").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return plainDir, plainErr
}

// testBinDirEnv names a directory holding a plain build of this command
// that make test made once for every package that runs the binary (this
// one, cmd/tavern/multi, examples/soak): each building its own linked it
// three times, and in a cold build cache compiled every dependency
// without the race detector several times over, at once.
const testBinDirEnv = "TAVERN_TEST_BINDIR"

// sharedBuild checks that dir (from $TAVERN_TEST_BINDIR) holds tavern.
func sharedBuild(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "tavern")); err != nil {
		return "", fmt.Errorf("$%s: %w", testBinDirEnv, err)
	}
	return dir, nil
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if dir := binDir(t); dir != "" {
				env.Setenv("PATH", dir+string(filepath.ListSeparator)+env.Getenv("PATH"))
			}
			// git in scripts: no user or system configuration.
			env.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			// The repository's test data (golden documents, bad input).
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			env.Setenv("TESTDATA", filepath.Join(wd, "testdata"))
			env.Values[snapshotKey{}] = map[string]map[string]string{}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"json":      cmdJSON,
			"capture":   cmdCapture,
			"changed":   cmdChanged,
			"snapshot":  cmdSnapshot,
			"unchanged": cmdUnchanged,
			"sparse":    cmdSparse,
			"sleep":     cmdSleep,
		},
	})
}

// exits [-min DUR] CODE PROG [ARGS...] runs a program (as exec does) and
// checks its exit status; -min also checks it took at least DUR.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	var min time.Duration
	if len(args) > 1 && args[0] == "-min" {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		min, args = d, args[2:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits [-min DUR] CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	start := time.Now()
	err = ts.Exec(args[1], args[2:]...)
	took := time.Since(start)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
	if took < min {
		ts.Fatalf("%s returned after %s, before %s", args[1], took, min)
	}
}

// json [-stderr] PATH WANT checks a value in the JSON of the last
// command's stdout (or stderr, a one-line JSON object). PATH is a dot
// path: .key, .3 (a list index), .[] (every element: the values become a
// list), .len() (the length of a list or object); "." is the whole
// document.
// WANT is JSON, or else taken as a string. ! json checks the value is
// different.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	src := "stdout"
	if len(args) > 0 && args[0] == "-stderr" {
		src, args = "stderr", args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: json [-stderr] PATH WANT")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(src)), &doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", src, err)
	}
	got, err := jsonPath(doc, args[0])
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	var want any
	if err := json.Unmarshal([]byte(args[1]), &want); err != nil {
		want = args[1]
	}
	if reflect.DeepEqual(got, want) == neg {
		g, _ := json.Marshal(got)
		hint := ""
		if _, isString := got.(string); isString && want != args[1] {
			// A hash such as 93299518132074e0 is also a JSON number.
			hint = ` (WANT is read as JSON: write a string that may look like a number as "$VAR")`
		}
		ts.Fatalf("%s %s is %s, want %s%s%s", src, args[0], g, map[bool]string{true: "not "}[neg], args[1], hint)
	}
}

func jsonPath(v any, path string) (any, error) {
	if path == "." {
		return v, nil
	}
	if !strings.HasPrefix(path, ".") {
		return nil, fmt.Errorf("a path starts with a dot")
	}
	parts := strings.Split(path[1:], ".")
	var walk func(v any, parts []string) (any, error)
	walk = func(v any, parts []string) (any, error) {
		if len(parts) == 0 {
			return v, nil
		}
		p, rest := parts[0], parts[1:]
		switch x := v.(type) {
		case []any:
			switch p {
			case "len()":
				return float64(len(x)), nil
			case "[]":
				out := []any{}
				for _, e := range x {
					w, err := walk(e, rest)
					if err != nil {
						return nil, err
					}
					out = append(out, w)
				}
				return out, nil
			}
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no element %q in a list of %d", p, len(x))
			}
			return walk(x[i], rest)
		case map[string]any:
			if p == "len()" {
				return float64(len(x)), nil
			}
			return walk(x[p], rest)
		case nil:
			return nil, nil
		}
		return nil, fmt.Errorf("%q: not a list or object", p)
	}
	return walk(v, parts)
}

// capture [-stderr] NAME [REGEXP] sets the environment variable NAME to
// the last command's stdout (or stderr), trimmed, or to REGEXP's first
// group in it.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	src := "stdout"
	if len(args) > 0 && args[0] == "-stderr" {
		src, args = "stderr", args[1:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: capture [-stderr] NAME [REGEXP]")
	}
	out := ts.ReadFile(src)
	val := strings.TrimSpace(out)
	if len(args) == 2 {
		m := regexp.MustCompile(args[1]).FindStringSubmatch(out)
		if len(m) < 2 {
			ts.Fatalf("%s does not match %s", src, args[1])
		}
		val = m[1]
	}
	ts.Setenv(args[0], val)
}

// changed BEFORE AFTER LINE... checks that two files have the same
// number of lines and differ in exactly the given lines of AFTER (in
// order); a LINE written /RE/ is a regexp the whole line matches (a
// time stamp). ! changed checks they differ in line count.
func cmdChanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: changed BEFORE AFTER LINE...")
	}
	a := strings.SplitAfter(ts.ReadFile(args[0]), "\n")
	b := strings.SplitAfter(ts.ReadFile(args[1]), "\n")
	if neg {
		if len(a) == len(b) {
			ts.Fatalf("%s and %s have the same number of lines", args[0], args[1])
		}
		return
	}
	if len(a) != len(b) {
		ts.Fatalf("%s has %d lines, %s %d", args[0], len(a), args[1], len(b))
	}
	var diff []string
	for i := range a {
		if a[i] != b[i] {
			diff = append(diff, strings.TrimSuffix(b[i], "\n"))
		}
	}
	want := args[2:]
	same := len(diff) == len(want)
	for i := 0; same && i < len(want); i++ {
		if w := want[i]; len(w) > 1 && strings.HasPrefix(w, "/") && strings.HasSuffix(w, "/") {
			same = regexp.MustCompile("^(?:" + w[1:len(w)-1] + ")$").MatchString(diff[i])
		} else {
			same = diff[i] == w
		}
	}
	if !same {
		ts.Fatalf("changed lines %q, want %q", diff, want)
	}
}

// snapshot NAME DIR records every file and symlink under DIR (bytes,
// mode, size, mtime; link targets), but the engine-private .locks/, .tmp/
// and .index; unchanged NAME DIR checks nothing changed since.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: snapshot NAME DIR")
	}
	snap, err := snapshotDir(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Value(snapshotKey{}).(map[string]map[string]string)[args[0]] = snap
}

type snapshotKey struct{}

func cmdUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unchanged NAME DIR")
	}
	before, ok := ts.Value(snapshotKey{}).(map[string]map[string]string)[args[0]]
	if !ok {
		ts.Fatalf("no snapshot %s", args[0])
	}
	after, err := snapshotDir(ts.MkAbs(args[1]))
	ts.Check(err)
	var diff []string
	for k, v := range before {
		if after[k] != v {
			diff = append(diff, fmt.Sprintf("%s: %q -> %q", k, v, after[k]))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		ts.Fatalf("%s changed:\n%s", args[1], strings.Join(diff, "\n"))
	}
}

func snapshotDir(root string) (map[string]string, error) {
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".locks" || rel == ".tmp" || rel == ".index" {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "link " + target
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			snap[rel] = fmt.Sprintf("%x %v %d %d", h.Sum(nil), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		case fi.IsDir():
			snap[rel] = "dir"
		}
		return nil
	})
	return snap, err
}

// sparse FILE SIZE makes a sparse file of SIZE bytes (a huge document
// that costs no disk).
func cmdSparse(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sparse FILE SIZE")
	}
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(f.Truncate(n))
	ts.Check(f.Close())
}

// sleep DUR: for wall-clock contracts only (a TTL running out), never to
// wait for another process.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DUR")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}
