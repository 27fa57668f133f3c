package soak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var tavernBin string

// TestMain builds the tavern binary the scenario drives, unless make
// test built it once for every package that runs it (TAVERN_TEST_BINDIR;
// cmd/tavern's main_test.go says why).
func TestMain(m *testing.M) {
	if dir := os.Getenv("TAVERN_TEST_BINDIR"); dir != "" {
		tavernBin = filepath.Join(dir, "tavern")
		if _, err := os.Stat(tavernBin); err != nil {
			fmt.Fprintf(os.Stderr, "$TAVERN_TEST_BINDIR: %v\n", err)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "tavern-soak-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tavernBin = filepath.Join(dir, "tavern")
	build := exec.Command("go", "build", "-o", tavernBin, "github.com/tavernhq/tavern/cmd/tavern")
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

// TestSoak runs soak.sh (a small size; soakSize under -tags long is
// larger) and checks that every commit was made under a live reservation
// and a held merge slot, no two commits overlapped, every item is done,
// and drones were really killed along the way.
func TestSoak(t *testing.T) {
	for _, tool := range []string{"git", "ps", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the soak scenario needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "soak.sh", dir)
	cmd.Env = append(os.Environ(), "TAVERN="+tavernBin, "CHECK=skip",
		fmt.Sprintf("DRONES=%d", soakSize.drones), fmt.Sprintf("ITEMS=%d", soakSize.items), fmt.Sprintf("KILLS=%d", soakSize.kills))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("soak.sh: %v\n%s", err, out)
	}
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s%s", out, r)
	if len(r.Violations) > 0 {
		pool, _ := os.ReadFile(filepath.Join(dir, ".soak", "pool.log"))
		t.Fatalf("%s\npool:\n%s", r, pool)
	}
	if r.Kills == 0 || r.Done != soakSize.items || len(r.Commits) < soakSize.items {
		t.Fatalf("%d kills, %d items done of %d, %d commits: the scenario did not run as meant\n%s", r.Kills, r.Done, soakSize.items, len(r.Commits), out)
	}
	if !strings.Contains(string(out), "pool exit 0") {
		t.Fatalf("the pool failed:\n%s", out)
	}
}

// TestCheckCatches: the checker is not vacuous. A commit made after its
// reservation was released, naming a merge slot never acquired, and an
// item left pending are each reported.
func TestCheckCatches(t *testing.T) {
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "TAVERN_AGENT=", "TAVERN_INSTANCE=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("git", "init", "-q", ".")
	run("git", "config", "user.email", "t@example.invalid")
	run("git", "config", "user.name", "t")
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".tavern/\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	run("git", "add", "-A")
	run("git", "commit", "-qm", "initial")
	run(tavernBin, "init")
	run(tavernBin, "queue", "create", "code")
	item := run(tavernBin, "queue", "add", "code", "--title", "edit a")
	run(tavernBin, "agent", "new", "bob")
	rid, _, _ := strings.Cut(run(tavernBin, "reserve", "a.txt", "--as", "bob"), "\t")
	run(tavernBin, "unreserve", "--id", rid)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("b\n"), 0o644)
	start := run("date", "+%s%N")
	run("git", "commit", "-q", "-m", "edit", "-m", "Tavern-Item: "+item+"\nTavern-Agent: bob\nTavern-Reservation: "+rid+
		"\nTavern-Token: 01a20000-0000-7000-8000-000000000000:1\nTavern-Start: "+start, "--", "a.txt")
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"not under its reservation " + rid + ": reservation.released", "merge slot 01a20000-0000-7000-8000-000000000000:1 was never acquired", "is pending"}
	got := strings.Join(r.Violations, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("violations do not report %q:\n%s", w, got)
		}
	}
}
