//go:build linux

package watcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/watcher/journal"
)

// limitWatches makes inotify_add_watch fail with ENOSPC, as the kernel
// does once fs.inotify.max_user_watches is reached, after n watches:
// the failure injected at the system call boundary, without lowering a
// limit the whole machine shares.
func limitWatches(t *testing.T, n int) {
	t.Helper()
	var used atomic.Int64
	inotifyAddWatch = func(fd int, path string, mask uint32) (int, error) {
		if used.Add(1) > int64(n) {
			return -1, unix.ENOSPC
		}
		return unix.InotifyAddWatch(fd, path, mask)
	}
	t.Cleanup(func() { inotifyAddWatch = unix.InotifyAddWatch })
}

// degradeRecorder is a process degrade handler for tests.
type degradeRecorder struct {
	mu   sync.Mutex
	errs []error
}

func recordDegrades(t *testing.T) *degradeRecorder {
	r := &degradeRecorder{}
	SetDegradeHandler(func(err error) {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	})
	t.Cleanup(func() { SetDegradeHandler(nil) })
	return r
}

func (r *degradeRecorder) list() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func degradedEvents(t *testing.T, root string) []journal.Event {
	t.Helper()
	var out []journal.Event
	if _, err := journal.Read(root, journal.Filter{Types: []string{journal.TypeDegraded}}, func(e journal.Event, err error) bool {
		if err == nil {
			out = append(out, e)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWatchLimitFallsBackToPolling: a store with more directories than
// watches left is polled, not half watched: the projection says so (its
// mode, the journal, the process's degrade handler, once), and changes
// in the directories it could not watch are still seen.
func TestWatchLimitFallsBackToPolling(t *testing.T) {
	s := newStore(t)
	for _, d := range []string{"agents/x", "queues/a/pending", "queues/b/pending"} {
		if err := os.MkdirAll(filepath.Join(s.Root(), d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	limitWatches(t, 3)
	rec := recordDegrades(t)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var told atomic.Int64
	p := openProj(t, s, Options{Watch: true, Journal: j, Poll: 0, Reconcile: -1, OnDegrade: func(err error) { told.Add(1) }})
	if !p.fw.Polling() || p.Mode()[:5] != "poll " {
		t.Fatalf("mode %q: want polling", p.Mode())
	}
	if got := told.Load(); got != 1 {
		t.Errorf("OnDegrade called %d times, want 1", got)
	}
	errs := rec.list()
	if len(errs) != 1 || !errors.Is(errs[0], ErrWatchLimit) || !errors.Is(errs[0], unix.ENOSPC) {
		t.Errorf("degrade handler got %v, want one ErrWatchLimit wrapping ENOSPC", errs)
	}
	if evs := degradedEvents(t, s.Root()); len(evs) != 1 || evs[0].Data["mode"] != "poll" {
		t.Errorf("journal: %+v, want one %s event", evs, journal.TypeDegraded)
	}
	// Changes anywhere are still seen: polling reconciles the whole tree.
	sub := p.Subscribe(journal.Filter{Types: []string{journal.TypeCreated}}, 16)
	writeDoc(t, s, "queues/b/pending/p1.md", "---\nqueue: b\n---\n")
	select {
	case e := <-sub.C:
		if e.Path != "queues/b/pending/p1.md" {
			t.Errorf("got %+v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a document in an unwatched directory never seen")
	}
}

// TestWatchLimitLater: a directory created later that no watch is left
// for turns the running watcher to polling (once), and nothing is lost.
func TestWatchLimitLater(t *testing.T) {
	root := t.TempDir()
	rec := &recorder{}
	var degrades []error
	var mu sync.Mutex
	limitWatches(t, 2)
	w, err := WatchFS(root, FSOptions{OnChange: rec.onChange, Reconcile: -1, Poll: -1, Debounce: time.Millisecond,
		OnDegrade: func(err error) { mu.Lock(); degrades = append(degrades, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Polling() {
		t.Fatal("polling from the start: the limit leaves room for the root")
	}
	for _, d := range []string{"a", "b", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "x.md"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	syncW(t, w)
	if !w.Polling() {
		t.Fatalf("mode %q after the limit was reached: want polling", w.Mode())
	}
	syncW(t, w)
	mu.Lock()
	n := len(degrades)
	mu.Unlock()
	if n != 1 || !errors.Is(degrades[0], ErrWatchLimit) {
		t.Errorf("OnDegrade: %v, want one ErrWatchLimit", degrades)
	}
	assertStateMatchesDisk(t, w)
}

// TestWaitDirFallsBack: a wait that cannot have its watch (out of
// watches) polls, still sees the change, and says so in the journal and
// to the degrade handler.
func TestWaitDirFallsBack(t *testing.T) {
	s := newStore(t)
	limitWatches(t, 0)
	rec := recordDegrades(t)
	dir := filepath.Join(s.Root(), "agents")
	target := filepath.Join(dir, "x.md")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var told atomic.Int32
	opt := WaitDirOptions{Recheck: time.Hour, Poll: 10 * time.Millisecond, Root: s.Root(),
		Degraded: func(string, error) { told.Add(1) }}
	blocked, done, _ := waitDirAsync(t, ctx, []string{dir}, opt, func() bool { return exists(target) })
	<-blocked
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitDir = %v", err)
	}
	if told.Load() != 1 {
		t.Errorf("Degraded called %d times, want 1", told.Load())
	}
	if errs := rec.list(); len(errs) != 1 || !errors.Is(errs[0], ErrWatchLimit) {
		t.Errorf("degrade handler got %v", errs)
	}
	if evs := degradedEvents(t, s.Root()); len(evs) != 1 {
		t.Errorf("journal: %+v, want one %s event", evs, journal.TypeDegraded)
	}
}
