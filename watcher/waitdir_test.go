package watcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// waitDirAsync runs WaitDir in a goroutine until want exists in dir; the
// returned channel is signalled once it is blocked (after its first
// check) and gets its result.
func waitDirAsync(t *testing.T, ctx context.Context, dirs []string, opt WaitDirOptions, cond func() bool) (blocked chan struct{}, done chan error, checks *atomic.Int32) {
	t.Helper()
	blocked, done, checks = make(chan struct{}), make(chan error, 1), &atomic.Int32{}
	opt.Waiting = func() { close(blocked) }
	go func() {
		done <- WaitDir(ctx, dirs, opt, func() (bool, error) { checks.Add(1); return cond(), nil })
	}()
	return blocked, done, checks
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestWaitDirWakesOnEvent: a file created in the second of two watched
// directories wakes the wait at once; the safety net (an hour) is not
// what woke it.
func TestWaitDirWakesOnEvent(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := filepath.Join(b, "x.md")
	blocked, done, _ := waitDirAsync(t, ctx, []string{a, b}, WaitDirOptions{Recheck: time.Hour}, func() bool { return exists(target) })
	<-blocked
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitDir = %v, want nil", err)
	}
}

// TestWaitDirRelevant: events the filter rejects do not run the check;
// the one it accepts does.
func TestWaitDirRelevant(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ignored atomic.Int32
	opt := WaitDirOptions{Recheck: time.Hour, Relevant: func(ev fsnotify.Event) bool {
		if strings.HasPrefix(filepath.Base(ev.Name), ".") {
			ignored.Add(1)
			return false
		}
		return true
	}}
	target := filepath.Join(dir, "x.md")
	blocked, done, checks := waitDirAsync(t, ctx, []string{dir}, opt, func() bool { return exists(target) })
	<-blocked
	for i := range 20 {
		os.WriteFile(filepath.Join(dir, ".tmp"+string(rune('a'+i))), nil, 0o644)
	}
	deadline := time.Now().Add(20 * time.Second)
	for ignored.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := ignored.Load(); n < 20 {
		t.Fatalf("saw %d of 20 ignored events", n)
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("%d checks after ignored events, want 1 (the first)", n)
	}
	os.WriteFile(target, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWaitDirWake: without any event, the check runs again at the time
// Wake asks for (a lease running out), long before the safety net.
func TestWaitDirWake(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Now().Add(100 * time.Millisecond)
	err := WaitDir(ctx, []string{dir}, WaitDirOptions{Recheck: time.Hour, Wake: func() time.Time { return at }},
		func() (bool, error) { return !time.Now().Before(at), nil })
	if err != nil {
		t.Fatal(err)
	}
}

// TestWaitDirPollsUnwatchable: a directory that cannot be watched (here:
// missing) is reported through Degraded and polled at Poll.
func TestWaitDirPollsUnwatchable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var degraded atomic.Int32
	opt := WaitDirOptions{Recheck: time.Hour, Poll: 20 * time.Millisecond, Degraded: func(string, error) { degraded.Add(1) }}
	target := filepath.Join(dir, "x.md")
	blocked, done, _ := waitDirAsync(t, ctx, []string{dir}, opt, func() bool { return exists(target) })
	<-blocked
	os.MkdirAll(dir, 0o755)
	os.WriteFile(target, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if degraded.Load() != 1 {
		t.Fatalf("Degraded called %d times, want 1", degraded.Load())
	}
}

// TestWaitDirEnds: ctx's end and check's error end the wait with that
// error.
func TestWaitDirEnds(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := WaitDir(ctx, []string{dir}, WaitDirOptions{}, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the deadline: %v", err)
	}
	boom := errors.New("boom")
	if err := WaitDir(context.Background(), []string{dir}, WaitDirOptions{}, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("check error: %v", err)
	}
}
