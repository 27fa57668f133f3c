package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

var (
	watchBinOnce sync.Once
	watchBin     string
	watchBinErr  error
)

// tavernBin builds the tavern binary once for the tests in this file.
func tavernBin(t *testing.T) string {
	t.Helper()
	watchBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tavern-bin-")
		if err != nil {
			watchBinErr = err
			return
		}
		watchBin = filepath.Join(dir, "tavern")
		out, err := exec.Command("go", "build", "-o", watchBin, ".").CombinedOutput()
		if err != nil {
			watchBinErr = err
			t.Logf("%s", out)
		}
	})
	if watchBinErr != nil {
		t.Fatalf("build: %v", watchBinErr)
	}
	return watchBin
}

func tavernRun(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	// --dir after the command name: each command has its own --dir flag.
	full := append([]string{args[0], "--dir", dir}, args[1:]...)
	cmd := exec.Command(tavernBin(t), full...)
	cmd.Dir = t.TempDir() // never find a store by searching upward from here
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func initStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".tavern")
	if out, code := tavernRun(t, dir, nil, "init"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, out)
	}
	return dir
}

func TestWatchCommand(t *testing.T) {
	dir := initStore(t)
	cmd := exec.Command(tavernBin(t), "watch", "--dir", dir, "--json", "--kind", "agents")
	cmd.Dir = t.TempDir()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "watching") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("watch never became ready")
	}
	lines := make(chan journal.Event, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e journal.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("bad JSON line %q: %v", sc.Text(), err)
				continue
			}
			lines <- e
		}
		close(lines)
	}()
	var history []string
	defer func() {
		if t.Failed() {
			t.Logf("events seen:\n%s", strings.Join(history, "\n"))
		}
	}()
	// waitFor skips unrelated events (an "external" record of the hand
	// edit may come in between) until one matching want arrives.
	waitFor := func(what string, want func(journal.Event) bool) journal.Event {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case e := <-lines:
				b, _ := json.Marshal(e)
				history = append(history, string(b))
				if want(e) {
					return e
				}
			case <-deadline:
				t.Fatalf("no %s event", what)
			}
		}
	}
	// Hand edits land atomically (temp file, rename), so no intermediate
	// state can be observed whatever the machine's load.
	handWrite := func(rel, text string) {
		t.Helper()
		tmp := filepath.Join(dir, ".tmp", "hand")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	handWrite("agents/hand.md", "---\nname: hand\n---\n")
	e := waitFor("doc.created", func(e journal.Event) bool { return e.Type == journal.TypeCreated })
	if e.Path != "agents/hand.md" || e.Kind != "agent" {
		t.Errorf("got %+v, want doc.created agents/hand.md", e)
	}
	if out, code := tavernRun(t, dir, nil, "set", "agents/hand", "state=working"); code != 0 {
		t.Fatalf("set: exit %d %s", code, out)
	}
	e = waitFor("doc.updated", func(e journal.Event) bool { return e.Type == journal.TypeUpdated })
	if e.Path != "agents/hand.md" || strings.Join(anyStrings(e.Data["changed"]), ",") != "state" {
		t.Errorf("got %+v, want doc.updated changed=[state]", e)
	}
	// Not an agent: filtered out; the next agent event proves it was seen.
	handWrite("tavern.md", "---\nname: x\n---\n")
	handWrite("agents/hand.md", "---\nname: [\n---\n")
	e = waitFor("doc.invalid", func(e journal.Event) bool { return e.Type != journal.TypeExternal })
	if e.Type != journal.TypeInvalid || e.Path != "agents/hand.md" {
		t.Errorf("got %+v, want doc.invalid agents/hand.md", e)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after SIGINT: %v", err)
	}
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestLogCommand(t *testing.T) {
	dir := initStore(t)
	if out, code := tavernRun(t, dir, nil, "new", "agent", "alice"); code != 0 {
		t.Fatalf("new: %d %s", code, out)
	}
	if out, code := tavernRun(t, dir, []string{"TAVERN_AGENT=boss"}, "set", "agents/alice", "state=working"); code != 0 {
		t.Fatalf("set: %d %s", code, out)
	}
	count := func(args ...string) int {
		t.Helper()
		out, code := tavernRun(t, dir, nil, append([]string{"log", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("log %v: exit %d", args, code)
		}
		n := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			if _, err := journal.ParseEventLine([]byte(l)); err != nil {
				t.Errorf("bad line %q: %v", l, err)
			}
			n++
		}
		return n
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		// init journals tavern.md, then alice is created and updated.
		{nil, 3},
		{[]string{"--agent", "boss"}, 1},
		{[]string{"--type", "doc.created"}, 2},
		{[]string{"--type", "doc."}, 3},
		{[]string{"--kind", "agents"}, 2},
		{[]string{"--since", "1h"}, 3},
		{[]string{"--until", "2000-01-01"}, 0},
		{[]string{"--path", "agents/alice.md"}, 2},
		{[]string{"--path", "agents/"}, 2},
		{[]string{"--where", "state=working"}, 2},
		{[]string{"--where", "state=idle"}, 0},
	} {
		if got := count(tc.args...); got != tc.want {
			t.Errorf("log %v: %d events, want %d", tc.args, got, tc.want)
		}
	}
	if _, code := tavernRun(t, dir, nil, "log", "--since", "yesterday-ish"); code != 2 {
		t.Errorf("bad --since: exit %d, want 2", code)
	}
}

func TestLsUsesIndexCache(t *testing.T) {
	dir := initStore(t)
	for _, n := range []string{"a", "b", "c"} {
		if _, code := tavernRun(t, dir, nil, "new", "agent", n); code != 0 {
			t.Fatal("new failed")
		}
	}
	out1, _ := tavernRun(t, dir, nil, "ls", "agents", "--where", "state=idle", "--json")
	if _, err := os.Stat(filepath.Join(dir, watcher.CacheFile)); err != nil {
		t.Fatalf("ls wrote no index cache: %v", err)
	}
	out2, _ := tavernRun(t, dir, nil, "ls", "agents", "--where", "state=idle", "--json")
	if out1 != out2 || strings.Count(out1, `"rel"`) != 3 {
		t.Errorf("warm ls differs from cold or wrong count:\n%s\n%s", out1, out2)
	}
	// A hand edit after the cache was written is seen.
	os.WriteFile(filepath.Join(dir, "agents", "b.md"), []byte("---\nname: b\nstate: working\n---\n"), 0o644)
	out3, _ := tavernRun(t, dir, nil, "ls", "agents", "--where", "state=idle", "--json")
	if strings.Count(out3, `"rel"`) != 2 || strings.Contains(out3, "agents/b.md") {
		t.Errorf("stale cache used:\n%s", out3)
	}
}
