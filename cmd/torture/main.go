// Command torture is the in-repo torture harness (`make torture`): it
// reproduces the crash and chaos figures of issue 13 against the built
// tavern binary and prints one table row per scenario:
//
//	crash points     SIGKILL at random points of set, new, add, take, done, send
//	queue chaos      8 worker processes under random SIGKILL/SIGSTOP/SIGCONT
//	pool chaos       tavern pool run while wrappers and drones are SIGKILLed
//	fault injection  a small tmpfs filled to ENOSPC, remounted read-only, EACCES
//	bad input        a corpus of broken and odd files in pending/
//	tuples           8 processes racing for tokens (count 1 and 3),
//	                 intersecting reservations and tuple in (issue 15)
//
// Columns: tried (crash points, items or files), lost, executed twice
// (completed twice, or two executions of one item at once), torn
// (documents that do not parse), left (findings `tavern doctor` still
// reports after `tavern doctor --fix`). Every column but tried must be 0;
// the exit status is 1 otherwise. TORTURE_SCALE=10 multiplies the sizes
// (the 10^5-claim version); TORTURE_KEEP=1 keeps the scratch stores for a
// post-mortem; TORTURE_DIR puts the scratch stores elsewhere
// (default: the system temp directory); TORTURE_TAVERN runs another build
// of tavern instead of building this tree's (to compare with an older
// commit). Fault injection needs mount
// rights (root): without them its row says why it was skipped.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one scenario's figures.
type row struct {
	name                           string
	tried, lost, twice, torn, left int
	skipped                        string // why the scenario did not run
	note                           string
	took                           time.Duration
}

func (r row) bad() bool { return r.skipped == "" && (r.lost+r.twice+r.torn+r.left) > 0 }

// env is a run of the harness: the tavern binary and a scratch root.
type env struct {
	bin     string // the built tavern binary
	scratch string
	scale   int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		os.Exit(queueWorker(os.Args[2:]))
	}
	only := flag.String("only", "", "run only the scenarios whose name contains this")
	flag.Parse()
	scale := 1
	if v, err := strconv.Atoi(os.Getenv("TORTURE_SCALE")); err == nil && v > 0 {
		scale = v
	}
	scratch, err := os.MkdirTemp(os.Getenv("TORTURE_DIR"), "tavern-torture-")
	if err != nil {
		fatal(err)
	}
	if os.Getenv("TORTURE_KEEP") == "" {
		defer os.RemoveAll(scratch)
	} else {
		fmt.Fprintf(os.Stderr, "torture: keeping %s\n", scratch)
	}
	bin := filepath.Join(scratch, "tavern")
	if other := os.Getenv("TORTURE_TAVERN"); other != "" {
		// Another build (an older commit's, to compare): copied, so that
		// the scratch directory holds everything the scenarios run.
		if err := copyFile(other, bin, 0o755); err != nil {
			fatal(err)
		}
	} else {
		build := exec.Command("go", "build", "-o", bin, "./cmd/tavern")
		build.Dir = moduleRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fatal(fmt.Errorf("building tavern: %w", err))
		}
	}
	e := &env{bin: bin, scratch: scratch, scale: scale}
	scenarios := []struct {
		name string
		run  func(*env) row
	}{
		{"crash points", crashPoints},
		{"queue chaos", queueChaos},
		{"pool chaos", poolChaos},
		{"fault injection", faultInjection},
		{"bad input", badInput},
		{"tuples", tupleStress},
	}
	var rows []row
	for _, s := range scenarios {
		if *only != "" && !strings.Contains(s.name, *only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "torture: %s...\n", s.name)
		start := time.Now()
		r := s.run(e)
		r.name, r.took = s.name, time.Since(start).Round(time.Second)
		rows = append(rows, r)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\ttried\tlost\texecuted twice\ttorn\tleft after doctor\ttime\t")
	failed := false
	for _, r := range rows {
		if r.skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\t\n", r.name, r.took)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.name, r.tried, r.lost, r.twice, r.torn, r.left, r.took)
		failed = failed || r.bad()
	}
	tw.Flush()
	for _, r := range rows {
		switch {
		case r.skipped != "":
			fmt.Printf("%s: skipped: %s\n", r.name, r.skipped)
		case r.note != "":
			fmt.Printf("%s: %s\n", r.name, r.note)
		}
	}
	if failed {
		fmt.Println("FAIL: something was lost, executed twice, torn or left after doctor")
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "torture:", err)
	os.Exit(2)
}

// moduleRoot is the directory of go.mod (the harness builds ./cmd/tavern
// from there).
func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		fatal(fmt.Errorf("cannot find the module root (run from the repository)"))
	}
	return filepath.Dir(string(bytes.TrimSpace(out)))
}

// result of one tavern command.
type result struct {
	out, err string
	code     int
}

// tavern runs the binary in project directory dir.
func (e *env) tavern(dir string, args ...string) result {
	return e.tavernEnv(dir, nil, args...)
}

func (e *env) tavernEnv(dir string, extra []string, args ...string) result {
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), extra...)
	return runCmd(cmd)
}

var execCommand = exec.Command

// runCmd runs cmd and collects its output and exit code.
func runCmd(cmd *exec.Cmd) result {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.err += err.Error()
	}
	return r
}

// cleanEnv is this environment without the TAVERN_* of a caller.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TAVERN_") {
			out = append(out, kv)
		}
	}
	return out
}

// project makes a fresh project directory with an initialised store.
func (e *env) project(name string) string {
	dir := filepath.Join(e.scratch, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(err)
	}
	if r := e.tavern(dir, "init"); r.code != 0 {
		fatal(fmt.Errorf("init %s: %s", dir, r.err))
	}
	return dir
}

// must runs a command that has to succeed.
func (e *env) must(dir string, args ...string) string {
	r := e.tavern(dir, args...)
	if r.code != 0 {
		fatal(fmt.Errorf("tavern %s: exit %d: %s", strings.Join(args, " "), r.code, r.err))
	}
	return r.out
}

// leftAfterDoctor runs `tavern doctor --fix`, then counts what `tavern
// doctor` still finds.
func (e *env) leftAfterDoctor(dir string) (int, string) {
	e.tavern(dir, "doctor", "--fix")
	r := e.tavern(dir, "doctor")
	if r.code == 0 {
		return 0, ""
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
		if l != "" {
			n++
		}
	}
	if n == 0 {
		n = 1 // doctor itself failed
	}
	return n, strings.TrimSpace(r.out + r.err)
}
