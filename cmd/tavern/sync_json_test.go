package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// `sync --every --json` streams one JSON object per line on stdout, one
// per round (as `watch --json` does), and nothing for people on stderr:
// it printed "tavern: syncing ..." there, and each round as an indented
// object of many lines.
func TestSyncEveryJSONStream(t *testing.T) {
	t.Parallel()
	remote := bareRemote(t)
	p := newProject(t)
	cmd, sc, errb := startSyncEvery(t, p, remote)
	for i := 0; i < 2; i++ {
		if !sc.Scan() {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: no line (%v); stderr:\n%s", i, sc.Err(), errb.String())
		}
		var rep map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil || rep["head"] == nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: line %q is not a round's JSON object: %v", i, sc.Text(), err)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
	}
	cmd.Wait()
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var obj map[string]any
		if line != "" && json.Unmarshal([]byte(line), &obj) != nil {
			t.Errorf("stderr line under --json is not a JSON object: %q", line)
		}
	}
}

// An offline round of `sync --every --json` is an error object on
// stderr, as README says of a failed round (it was only the report's
// offline field on stdout; the text form says "offline: ..." on stderr).
func TestSyncEveryJSONOffline(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	p := newProject(t)
	cmd, sc, errb := startSyncEvery(t, p, filepath.Join(t.TempDir(), "nowhere.git"))
	if !sc.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no round (%v); stderr:\n%s", sc.Err(), errb.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(sc.Bytes(), &rep); err != nil || rep["offline"] == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("line %q: not an offline round's JSON object (%v)", sc.Text(), err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
	}
	cmd.Wait()
	found := false
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Errorf("stderr line under --json is not a JSON object: %q", line)
			continue
		}
		if msg, _ := obj["error"].(string); strings.Contains(msg, "sync remote unreachable") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error object for the offline round on stderr:\n%s", errb.String())
	}
}

// startSyncEvery starts `sync --every 100ms --json` of p as machine alpha
// against remote: its stdout to scan line by line, its stderr gathered.
func startSyncEvery(t *testing.T, p *project, remote string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	t.Helper()
	p.env = append(p.env, "TAVERN_SYNC_REMOTE="+remote, "TAVERN_MACHINE=alpha")
	cmd := p.tavern("sync", "--every", "100ms", "--json")
	errb := &bytes.Buffer{}
	cmd.Stderr = errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stdout), errb
}
