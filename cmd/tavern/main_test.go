package main

// CLI tests drive the built binary (built once in TestMain) against a
// store in t.TempDir(), as a user or a script would.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var builtBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tavern-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builtBin = filepath.Join(dir, "tavern")
	build := exec.Command("go", "build", "-o", builtBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tavern:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// runIn runs tavern in dir with stdin and extra environment. The test's
// own TAVERN_DIR/EDITOR/VISUAL never leak in.
func runIn(t testing.TB, dir, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(builtBin, args...)
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "TAVERN_DIR" && k != "EDITOR" && k != "VISUAL" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{out: out.String(), err: errb.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("tavern %q: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	return r
}

// project is a directory holding an initialised .tavern store.
type project struct {
	t   testing.TB
	dir string
}

func newProject(t testing.TB) *project {
	t.Helper()
	p := &project{t: t, dir: t.TempDir()}
	p.ok("init")
	return p
}

func (p *project) run(args ...string) result {
	p.t.Helper()
	return runIn(p.t, p.dir, "", nil, args...)
}

func (p *project) runStdin(stdin string, args ...string) result {
	p.t.Helper()
	return runIn(p.t, p.dir, stdin, nil, args...)
}

// ok runs a command that must succeed and returns its stdout.
func (p *project) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != 0 {
		p.t.Fatalf("tavern %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

// fails runs a command that must exit with code and returns the result.
func (p *project) fails(code int, args ...string) result {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code {
		p.t.Fatalf("tavern %s: got exit %d, want %d\n%s", strings.Join(args, " "), r.code, code, r)
	}
	return r
}

func (p *project) path(rel string) string {
	return filepath.Join(p.dir, ".tavern", filepath.FromSlash(rel))
}

func (p *project) read(rel string) string {
	p.t.Helper()
	b, err := os.ReadFile(p.path(rel))
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

func (p *project) write(rel, data string) {
	p.t.Helper()
	full := p.path(rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) exists(rel string) bool {
	_, err := os.Lstat(p.path(rel))
	return err == nil
}

// showJSON returns the decoded `show --json` object of ref.
func (p *project) showJSON(ref string) map[string]any {
	p.t.Helper()
	var obj map[string]any
	out := p.ok("show", ref, "--json")
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		p.t.Fatalf("show --json: %v\n%s", err, out)
	}
	return obj
}

func (p *project) fields(ref string) map[string]any {
	p.t.Helper()
	f, ok := p.showJSON(ref)["fields"].(map[string]any)
	if !ok {
		p.t.Fatalf("show --json %s: no fields object", ref)
	}
	return f
}

// jsonErr decodes the one-line JSON error object a --json command prints
// on stderr and checks it has every key of the contract.
func jsonErr(t testing.TB, r result) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.err), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one JSON error line on stderr, got %d\n%s", len(lines), r)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &obj); err != nil {
		t.Fatalf("stderr is not a JSON object: %v\n%s", err, r)
	}
	for _, k := range []string{"error", "path", "line", "col"} {
		if _, ok := obj[k]; !ok {
			t.Fatalf("JSON error lacks %q: %s", k, lines[0])
		}
	}
	if s, _ := obj["error"].(string); s == "" {
		t.Fatalf("JSON error has an empty message: %s", lines[0])
	}
	return obj
}

// changedLines compares two texts with the same number of lines and
// returns the lines of b that differ; ok is false if the counts differ.
func changedLines(a, b string) (changed []string, ok bool) {
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(la) != len(lb) {
		return nil, false
	}
	for i := range la {
		if la[i] != lb[i] {
			changed = append(changed, lb[i])
		}
	}
	return changed, true
}
