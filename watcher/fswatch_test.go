package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHelperProcess is not a test: the test binary re-executes itself with
// TAVERN_WATCHER_HELPER set to act as another process touching the store.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv("TAVERN_WATCHER_HELPER")
	if role == "" {
		t.Skip("helper process only")
	}
	args := strings.Split(os.Getenv("TAVERN_WATCHER_ARGS"), ",")
	var err error
	switch role {
	case "burst":
		n, _ := strconv.Atoi(args[1])
		err = burst(args[0], n)
	default:
		err = fmt.Errorf("unknown helper role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helper(tb testing.TB, role string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "TAVERN_WATCHER_HELPER="+role, "TAVERN_WATCHER_ARGS="+strings.Join(args, ","))
	cmd.Stderr = os.Stderr
	return cmd
}

// burst creates n files in 100 new directories as fast as it can.
func burst(dir string, n int) error {
	const dirs = 100
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("d%02d", d)), 0o755); err != nil {
			return err
		}
	}
	body := []byte("---\nstate: pending\n---\n" + strings.Repeat("x", 1000) + "\n")
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%dirs), fmt.Sprintf("f%06d.md", i))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func syncW(tb testing.TB, w *FSWatcher) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
}

func TestBurstFromAnotherProcess(t *testing.T) {
	n := 50000
	if testing.Short() {
		n = 5000
	}
	for _, tc := range []struct {
		name     string
		overflow bool
	}{{"events", false}, {"forced-overflow", true}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var mu sync.Mutex
			creates := map[string]int{}
			started := make(chan struct{})
			var once sync.Once
			w, err := WatchFS(root, FSOptions{Reconcile: -1, Poll: -1, OnChange: func(cs []Change) {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range cs {
					if c.Op == OpCreate {
						creates[c.Path]++
					}
					if c.Op == OpError {
						t.Errorf("unexpected error change: %v", c.Err)
					}
				}
				if len(creates) > 0 {
					once.Do(func() { close(started) })
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd := helper(t, "burst", filepath.Join(root, "burst"), strconv.Itoa(n))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.overflow {
				// Lose every event after the first files were seen, then
				// report an overflow, as the kernel would.
				select {
				case <-started:
				case <-time.After(30 * time.Second):
					t.Fatal("no create seen")
				}
				w.dropEvents.Store(true)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("helper: %v", err)
			}
			if tc.overflow {
				w.dropEvents.Store(false)
				w.watchError(ErrOverflow)
			}
			syncW(t, w)
			mu.Lock()
			if len(creates) != n {
				t.Errorf("distinct files created: got %d, want %d", len(creates), n)
			}
			for p, k := range creates {
				if k != 1 {
					t.Errorf("%s created %d times", p, k)
					break
				}
			}
			mu.Unlock()
			assertStateMatchesDisk(t, w)
		})
	}
}

func TestPermissionDeniedThenRecovered(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	w, err := WatchFS(root, FSOptions{OnChange: rec.onChange, Reconcile: -1, Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	target := filepath.Join(root, "a.md")
	var mu sync.Mutex
	deny := true
	w.smu.Lock() // openHook is read by the processing goroutine
	w.openHook = func(p string) (*os.File, error) {
		mu.Lock()
		defer mu.Unlock()
		if deny && p == target {
			return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}
		}
		return os.OpenFile(p, openFlags, 0)
	}
	w.smu.Unlock()
	if err := os.WriteFile(target, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b.md"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	syncW(t, w)
	// Same error again: reported once.
	if err := os.WriteFile(target, []byte("a2"), 0o644); err != nil {
		t.Fatal(err)
	}
	syncW(t, w)
	mu.Lock()
	deny = false
	mu.Unlock()
	if err := w.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.lines(), "\n")
	want := strings.Join([]string{"error a.md permission", "create b.md", "create a.md"}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestErrorUnwraps(t *testing.T) {
	err := error(&WatchError{Op: "read", Path: "a.md", Err: &fs.PathError{Op: "open", Path: "/x/a.md", Err: syscall.EACCES}})
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("errors.Is(%v, fs.ErrPermission) = false", err)
	}
	var we *WatchError
	if !errors.As(err, &we) || we.Path != "a.md" || we.Op != "read" {
		t.Errorf("errors.As: got %+v", we)
	}
}

func TestIgnored(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"agents/a.md", false},
		{"tavern.md", false},
		{"queues/q/pending/0001-x.md", false},
		{".tmp/x", true},
		{".locks/a.lock", true},
		{".trash/a.md", true},
		{".index", true},
		{"agents/.a.md.swp", true},
		{"agents/a.md~", true},
		{"agents/4913", true},
		{"agents/.#a.md", true},
		{"agents/#a.md#", true},
		{"agents/a.md.swp", true},
		{"a/b/.git/c", true},
		{"agents/a___jb_tmp___", true},
		{"agents/5036", true},
		{"agents/4914", false},
		{"agents/007", false},
		{"queues/42/pending/p00-x.md", false},
		{"messages/2024/01a2.md", false},
		{"agents/9a", false},
		{"agents/a9", false},
		{"agents/a.mdx", false},
		{"agents/a.md_", false},
	} {
		if got := Ignored(tc.rel); got != tc.want {
			t.Errorf("Ignored(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
	for _, suffix := range ignoredSuffixes {
		for _, rel := range []string{"agents/a.md" + suffix, "queues/build" + suffix + "/pending/x.md"} {
			if !Ignored(rel) {
				t.Errorf("Ignored(%q) = false, want true", rel)
			}
		}
	}
}

func TestSyncAndRescanAfterClose(t *testing.T) {
	w, err := WatchFS(t.TempDir(), FSOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: got %v, want ErrClosed", err)
	}
	if err := w.Rescan(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Rescan after Close: got %v, want ErrClosed", err)
	}
}

func TestKnownSeedSkipsUnchanged(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a.md", "b.md", "c.md"} {
		if err := os.WriteFile(filepath.Join(root, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := WatchFS(root, FSOptions{Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	known := w.State()
	w.Close()
	// Pretend the states were read long ago so they are not racy.
	for p, st := range known {
		st.Seen = max(st.MTime, st.CTime) + int64(time.Hour)
		known[p] = st
	}
	// b changes, c goes, d appears; a is untouched and must not be read.
	if err := os.WriteFile(filepath.Join(root, "b.md"), []byte("bb"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "c.md"))
	os.WriteFile(filepath.Join(root, "d.md"), []byte("d"), 0o644)
	var reads []string
	var mu sync.Mutex
	rec := &recorder{}
	hook := func(p string) (*os.File, error) {
		mu.Lock()
		reads = append(reads, filepath.Base(p))
		mu.Unlock()
		return os.OpenFile(p, openFlags, 0)
	}
	testOpenHook = hook
	defer func() { testOpenHook = nil }()
	w, err = WatchFS(root, FSOptions{Poll: time.Hour, Known: known, OnChange: rec.onChange})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got := strings.Join(rec.lines(), ",")
	if want := "update b.md,remove c.md,create d.md"; got != want {
		t.Errorf("changes: got %s, want %s", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reads {
		if r == "a.md" {
			t.Errorf("unchanged a.md was read: reads %v", reads)
		}
	}
}

func TestRemoteFilesystemIsPolled(t *testing.T) {
	if got := remoteFS(t.TempDir()); got != "" {
		t.Skipf("test directory is on %s", got)
	}
	detectRemote = func(string) string { return "nfs" }
	defer func() { detectRemote = remoteFS }()
	root := t.TempDir()
	rec := &recorder{}
	w, err := WatchFS(root, FSOptions{OnChange: rec.onChange})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Mode() != "poll (nfs)" || !w.Polling() {
		t.Fatalf("Mode() = %q, want poll (nfs) without inotify", w.Mode())
	}
	os.WriteFile(filepath.Join(root, "a.md"), []byte("a"), 0o644)
	syncW(t, w)
	if got := strings.Join(rec.lines(), ","); got != "create a.md" {
		t.Errorf("got %s, want create a.md", got)
	}
	// An explicit negative Poll forces inotify even there.
	w2, err := WatchFS(root, FSOptions{Poll: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if w2.Mode() != "fsnotify" {
		t.Errorf("Poll -1: Mode() = %q, want fsnotify", w2.Mode())
	}
}
