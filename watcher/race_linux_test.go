//go:build linux

package watcher

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestReadRacingCreateInPlace: a file re-created in place (git's unlink
// and create) while the watcher reads it for an earlier event, before
// the watcher has taken the create's event from the kernel, is never
// reported half written: the read that raced the writer is dropped and
// the file is read when its writer closes it. (Under load the event
// reader lags behind the kernel; the hook makes that lag certain.)
func TestReadRacingCreateInPlace(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "a.md")
	if err := os.WriteFile(target, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string // content of every create and update, in order
	w, err := WatchFS(root, FSOptions{Reconcile: -1, Poll: -1, OnChange: func(cs []Change) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if c.Op == OpCreate || c.Op == OpUpdate {
				seen = append(seen, string(c.Data))
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Polling() {
		t.Skip("no inotify here: close events are what this tests")
	}
	var (
		once    sync.Once
		writer  *os.File
		hookErr error
		fired   = make(chan struct{})
	)
	w.smu.Lock() // openHook is read by the processing goroutine
	w.openHook = func(p string) (*os.File, error) {
		if p == target {
			once.Do(func() {
				// Between the watcher's decision to read a.md and its
				// read, a writer replaces it and is half way through.
				defer close(fired)
				if hookErr = os.Remove(target); hookErr != nil {
					return
				}
				writer, hookErr = os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if hookErr == nil {
					_, hookErr = writer.WriteString("v3 first half,")
				}
			})
		}
		return os.OpenFile(p, openFlags, 0)
	}
	w.smu.Unlock()
	// A complete in-place write: its close makes the watcher read a.md.
	if err := os.WriteFile(target, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-fired
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	syncW(t, w)
	if _, err := writer.WriteString(" second half\n"); err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	syncW(t, w)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if s == "v3 first half," {
			t.Errorf("a half-written file was reported: %q", seen)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1] != "v3 first half, second half\n" {
		t.Errorf("got %q, want the complete file last", seen)
	}
}
