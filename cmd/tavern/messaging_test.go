package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tavernIn runs the built binary with stdin.
func tavernIn(t *testing.T, dir, stdin string, args ...string) (string, int) {
	t.Helper()
	// --dir last: a subcommand's own (unset) --dir would hide a parent's.
	full := append(append([]string{}, args...), "--dir", dir)
	cmd := exec.Command(tavernBin(t), full...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TAVERN_AGENT=")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := tavernIn(t, dir, "", args...)
	if code != 0 {
		t.Fatalf("tavern %s: exit %d: %s", strings.Join(args, " "), code, out)
	}
	return out
}

func TestMessagingCommands(t *testing.T) {
	dir := initStore(t)
	mustRun(t, dir, "channel", "create", "general", "--topic", "chat")
	if _, code := tavernIn(t, dir, "", "channel", "create", "general"); code == 0 {
		t.Error("second channel create: exit 0")
	}
	if _, code := tavernIn(t, dir, "piped text\n", "send", "general", "--as", "alice"); code != 0 {
		t.Fatalf("send from stdin: exit %d", code)
	}
	mustRun(t, dir, "send", "general", "hello", "bob", "--as", "bob")
	mustRun(t, dir, "send", "@carol", "psst", "--as", "bob")
	if _, code := tavernIn(t, dir, "", "send", "general", "x"); code != 2 {
		t.Errorf("send without --as: exit %d, want 2", code)
	}
	if _, code := tavernIn(t, dir, "", "send", "../x", "x", "--as", "bob"); code != 2 {
		t.Errorf("send to an unsafe channel: exit %d, want 2", code)
	}

	var inbox []struct {
		Channel string `json:"channel"`
		Unread  int    `json:"unread"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "inbox", "--as", "carol", "--json")), &inbox); err != nil {
		t.Fatal(err)
	}
	if len(inbox) != 2 || inbox[0].Channel != "general" || inbox[0].Unread != 2 || inbox[1].Unread != 1 {
		t.Errorf("inbox: %+v", inbox)
	}
	var msgs []struct{ Sender, Text string }
	if err := json.Unmarshal([]byte(mustRun(t, dir, "recv", "general", "--as", "carol", "--json")), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "piped text" || msgs[1].Text != "hello bob" {
		t.Errorf("recv: %+v", msgs)
	}
	if _, code := tavernIn(t, dir, "", "recv", "general", "--as", "carol"); code != 3 {
		t.Errorf("recv with nothing unread: exit %d, want 3", code)
	}
	if _, code := tavernIn(t, dir, "", "recv", "general", "--as", "carol", "--wait", "50ms"); code != 3 {
		t.Errorf("recv --wait timing out: exit %d, want 3", code)
	}
	if out := mustRun(t, dir, "recv", "general", "--as", "carol", "--all"); strings.Count(out, "\n") != 2 {
		t.Errorf("recv --all: %q", out)
	}

	mustRun(t, dir, "note", "general", "a", "thought", "--as", "carol")
	if out := mustRun(t, dir, "notes", "general"); !strings.Contains(out, "carol: a thought") {
		t.Errorf("notes: %q", out)
	}

	id := strings.TrimSpace(mustRun(t, dir, "memory", "add", "--as", "carol", "--topic", "parser", "--core", "goldmark", "parser", "plan"))
	mustRun(t, dir, "memory", "add", "--as", "dave", "dave's", "parser", "secret")
	if out := mustRun(t, dir, "memory", "search", "--as", "carol", "parser"); !strings.Contains(out, id) || strings.Contains(out, "secret") {
		t.Errorf("memory search: %q", out)
	}
	if _, code := tavernIn(t, dir, "", "memory", "inspect", "--as", "dave", id); code != 3 {
		t.Errorf("dave inspects carol's memory: exit %d, want 3", code)
	}
	mustRun(t, dir, "memory", "archive", "--as", "carol", id[:28])
	if out := mustRun(t, dir, "memory", "ls", "--as", "carol"); strings.Contains(out, id) {
		t.Errorf("archived memory listed: %q", out)
	}
	if out := mustRun(t, dir, "memory", "ls", "--as", "carol", "--archived"); !strings.Contains(out, id) {
		t.Errorf("archived memory not kept: %q", out)
	}
	kid := strings.TrimSpace(mustRun(t, dir, "knowledge", "add", "--domain", "architecture", "--as", "carol", "one package per concern"))
	if out := mustRun(t, dir, "knowledge", "search", "package", "concern"); !strings.Contains(out, kid) || !strings.Contains(out, "(carol)") {
		t.Errorf("knowledge search: %q", out)
	}

	mustRun(t, dir, "new", "agent", "carol")
	if out := mustRun(t, dir, "wake", "--as", "carol"); !strings.Contains(out, "# carol (wake 1)") || !strings.Contains(out, "@carol 1") {
		t.Errorf("wake: %q", out)
	}
	mustRun(t, dir, "sleep", "--as", "carol", "--summary", "parser half done")
	var b struct {
		Spawns int `json:"spawns"`
		Core   []struct{ Topic, Text string }
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "wake", "--as", "carol", "--json")), &b); err != nil {
		t.Fatal(err)
	}
	if b.Spawns != 2 || len(b.Core) != 1 || b.Core[0].Topic != "summary" {
		t.Errorf("wake after sleep: %+v", b)
	}
	if out := mustRun(t, dir, "context", "parser", "--as", "carol"); !strings.Contains(out, "memory summary carol: parser half done") {
		t.Errorf("context: %q", out)
	}

	mustRun(t, dir, "channel", "archive", "general")
	if out := mustRun(t, dir, "channel", "ls"); strings.Contains(out, "general") {
		t.Errorf("archived channel listed: %q", out)
	}
	if _, code := tavernIn(t, dir, "", "send", "general", "late", "--as", "bob"); code != 4 {
		t.Errorf("send to archived: exit %d, want 4", code)
	}

	// Backup, restore refusal, restore into a fresh store, check.
	dest := t.TempDir()
	bdir := strings.TrimSpace(mustRun(t, dir, "backup", dest))
	if filepath.Dir(bdir) != dest {
		t.Errorf("backup dir %s not under %s", bdir, dest)
	}
	if _, code := tavernIn(t, dir, "", "restore", bdir); code != 4 {
		t.Errorf("restore over a non-empty store: exit %d, want 4", code)
	}
	fresh := filepath.Join(t.TempDir(), ".tavern")
	mustRun(t, fresh, "restore", bdir)
	mustRun(t, fresh, "check")
	if out := mustRun(t, fresh, "recv", "general", "--as", "zed", "--all"); !strings.Contains(out, "hello bob") {
		t.Errorf("restored messages: %q", out)
	}
}
