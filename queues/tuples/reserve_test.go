package tuples

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

func TestReserveConflictsBothWays(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.Reserve("alice", []string{"src/a/b.go"}, ReserveOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// Broad glob against a narrow reservation.
	_, err := sp.Reserve("bob", []string{"docs/**", "src/**/*.go"}, ReserveOptions{})
	var re *ReservedError
	if !errors.As(err, &re) || len(re.Conflicts) != 1 || re.Conflicts[0].Want != "src/**/*.go" || re.Conflicts[0].Held.Agent != "alice" {
		t.Fatalf("bob src/**/*.go over alice's src/a/b.go: %v", err)
	}
	// All or nothing: docs/** was not reserved either.
	if rs, _ := sp.Reservations(); len(rs) != 1 {
		t.Fatalf("%d reservations after a refused reserve, want 1", len(rs))
	}
	if _, err := sp.Reserve("bob", []string{"src/c/*"}, ReserveOptions{}); err != nil {
		t.Fatalf("disjoint reserve: %v", err)
	}
	// Narrow glob against a broad reservation.
	mustReserve(t, sp, "carol", "lib/**")
	_, err = sp.Reserve("dave", []string{"lib/z/q.go"}, ReserveOptions{})
	if !errors.As(err, &re) || len(re.Conflicts) != 1 || re.Conflicts[0].Held.Agent != "carol" {
		t.Fatalf("dave lib/z/q.go under carol's lib/**: %v", err)
	}
	// Glob against glob: neither contains the other, but they share paths.
	mustReserve(t, sp, "erin", "web/*/index.html")
	if _, err := sp.Reserve("frank", []string{"web/app/*"}, ReserveOptions{}); !errors.Is(err, ErrReserved) {
		t.Fatalf("frank web/app/* against erin's web/*/index.html: %v", err)
	}
	mustReserve(t, sp, "frank", "web/app/*.css")
}

func TestReserveRefusesBroadOverNarrow(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	mustReserve(t, sp, "alice", "src/a/b.go")
	mustReserve(t, sp, "bob", "src/c/*")
	_, err := sp.Reserve("carol", []string{"src/**"}, ReserveOptions{})
	var re *ReservedError
	if !errors.As(err, &re) || len(re.Conflicts) != 2 {
		t.Fatalf("carol src/** over alice and bob: %v", err)
	}
	if ev := tupleEvents(t, sp, "reservation.conflict"); len(ev) != 2 || ev[0].Agent != "carol" {
		t.Fatalf("journal reservation.conflict = %+v", ev)
	}
	// The same agent may overlap itself; re-reserving renews.
	mustReserve(t, sp, "alice", "src/a/*")
	before, _ := sp.Reservations()
	mustReserve(t, sp, "alice", "src/a/*")
	after, _ := sp.Reservations()
	if len(before) != len(after) || len(after) != 3 {
		t.Fatalf("re-reserve changed the count: %d then %d", len(before), len(after))
	}
	// Unreserve one glob, then all.
	if n, err := sp.Unreserve("alice", []string{"src/a/b.go"}, UnreserveOptions{}); err != nil || n != 1 {
		t.Fatalf("unreserve one = %d, %v", n, err)
	}
	if n, err := sp.Unreserve("alice", nil, UnreserveOptions{}); err != nil || n != 1 {
		t.Fatalf("unreserve all = %d, %v", n, err)
	}
	if n, err := sp.Unreserve("bob", nil, UnreserveOptions{}); err != nil || n != 1 {
		t.Fatalf("unreserve bob = %d, %v", n, err)
	}
	mustReserve(t, sp, "carol", "src/**")
	if ev := tupleEvents(t, sp, "reservation.released"); len(ev) != 3 {
		t.Fatalf("journal reservation.released = %d events, want 3", len(ev))
	}
}

func mustReserve(tb testing.TB, sp *Space, agent string, globs ...string) {
	tb.Helper()
	if _, err := sp.Reserve(agent, globs, ReserveOptions{TTL: time.Hour}); err != nil {
		tb.Fatalf("%s reserves %v: %v", agent, globs, err)
	}
}

func TestReserveTTL(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := newSpace(t, SpaceOptions{Now: clock})
	if _, err := sp.Reserve("alice", []string{"a/**"}, ReserveOptions{TTL: time.Minute, Reason: "refactor"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Reserve("bob", []string{"a/x"}, ReserveOptions{}); !errors.Is(err, ErrReserved) {
		t.Fatalf("within the TTL: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := sp.Reserve("bob", []string{"a/x"}, ReserveOptions{}); err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	// Issue 15: the expired file was collected on the way, not left for
	// `tuple gc`.
	if ev := tupleEvents(t, sp, "reservation.expired"); len(ev) != 1 || ev[0].Agent != "alice" {
		t.Fatalf("journal reservation.expired = %+v, want alice's", ev)
	}
	if st, _ := sp.GC(ReservationType); st.Expired != 0 {
		t.Fatalf("gc = %+v, want nothing left to collect", st)
	}
	trash, _ := filepath.Glob(filepath.Join(sp.Store().Root(), ".trash", "*-tuples__reservation__*.md"))
	if len(trash) != 1 {
		t.Fatalf("%d reservations archived, want alice's", len(trash))
	}
}

// TestReserveRace: agents reserving overlapping globs at once: exactly
// one wins.
func TestReserveRace(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for _, a := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sp.Reserve(a, []string{"src/**/*.go"}, ReserveOptions{}); err == nil {
				wins <- a
			} else if !errors.Is(err, ErrReserved) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Fatalf("%d agents won the same glob", n)
	}
}

func TestCheckPaths(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	mustReserve(t, sp, "alice", "src/**/*.go")
	got, err := sp.CheckPaths("bob", []string{"src/a/b.go", "README.md", "src/x.txt"})
	if err != nil || len(got) != 1 || got[0].Want != "src/a/b.go" {
		t.Fatalf("bob's check = %v, %v", got, err)
	}
	if got, _ := sp.CheckPaths("alice", []string{"src/a/b.go"}); len(got) != 0 {
		t.Fatalf("alice's own paths conflict: %v", got)
	}
	if got, _ := sp.CheckPaths("", []string{"src/a/b.go"}); len(got) != 1 {
		t.Fatalf("anonymous check = %v, want a conflict", got)
	}
}

// A reservation file the checks cannot use is left out and named, with
// its line and column, beside the conflicts found among the others.
func TestCheckPathsSkipsNamed(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	mustReserve(t, sp, "alice", "src/**")
	bad := "tuples/reservation/01a2144f-2132-7670-9356-3679ae0f7576.md"
	abs := filepath.Join(sp.Store().Root(), filepath.FromSlash(bad))
	data := "---\nschema_version: 1\nagent: alice\nglob: [docs/**\n---\n"
	if err := os.WriteFile(abs, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, check := range []func() ([]Conflict, error){
		func() ([]Conflict, error) { return sp.CheckPaths("bob", []string{"src/a.go", "docs/a.md"}) },
		func() ([]Conflict, error) { return sp.CheckTrees("bob", []string{"src", "docs"}) },
	} {
		got, err := check()
		var se *SkippedError
		if !errors.As(err, &se) || !errors.Is(err, ErrSkipped) || len(se.Errs) != 1 {
			t.Fatalf("got error %v, want a *SkippedError naming one file", err)
		}
		if path, line, col := docstore.Position(err); path != bad || line != 4 || col == 0 {
			t.Errorf("position %s:%d:%d, want %s:4:N", path, line, col, bad)
		}
		if len(got) != 1 || got[0].Held.Agent != "alice" {
			t.Errorf("conflicts %v, want alice's src/**", got)
		}
	}
}

// gitRepo makes a git work tree holding a tavern store and returns the
// space and the tree's directory.
func gitRepo(tb testing.TB) (*Space, string) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git not installed")
	}
	sp := newSpace(tb, SpaceOptions{})
	dir := filepath.Dir(sp.Store().Root())
	for _, args := range [][]string{
		{"init", "-q"},
		{"config", "user.email", "t@example.com"},
		{"config", "user.name", "t"},
		{"config", "commit.gpgsign", "false"},
	} {
		runGit(tb, dir, args...)
	}
	return sp, dir
}

func runGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeFile(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func TestGuardStaged(t *testing.T) {
	sp, dir := gitRepo(t)
	mustReserve(t, sp, "alice", "src/**/*.go")
	writeFile(t, filepath.Join(dir, "src", "a", "b.go"), "package a\n")
	writeFile(t, filepath.Join(dir, "README.md"), "hi\n")
	runGit(t, dir, "add", "README.md")
	ctx := context.Background()
	if c, err := sp.Guard(ctx, dir, "bob", ""); err != nil || len(c) != 0 {
		t.Fatalf("guard with README staged = %v, %v", c, err)
	}
	runGit(t, dir, "add", "src/a/b.go")
	c, err := sp.Guard(ctx, filepath.Join(dir, "src"), "bob", "") // from a subdirectory
	if !errors.Is(err, ErrReserved) || len(c) != 1 || c[0].Want != "src/a/b.go" {
		t.Fatalf("bob's guard = %v, %v", c, err)
	}
	if c, err := sp.Guard(ctx, dir, "alice", ""); err != nil || len(c) != 0 {
		t.Fatalf("alice's guard = %v, %v", c, err)
	}
}
