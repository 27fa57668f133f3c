package docstore

import (
	"context"
	"errors"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func initStore(tb testing.TB) *Store {
	tb.Helper()
	s, _, err := Init(filepath.Join(tb.TempDir(), ".tavern"), "t")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Locks taken through the cached descriptor exclude other goroutines,
// uncached acquisitions (their own open file description) and other
// Stores; a removed lock file is reopened, not locked as an orphan.
func TestLockCacheExclusion(t *testing.T) {
	s := initStore(t)
	other, err := Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	const key = "items/q/ab"
	l, err := s.Lock(key)
	if err != nil {
		t.Fatal(err)
	}
	if l.slot == nil {
		t.Fatal("Lock did not use the descriptor cache")
	}
	if _, ok, err := s.TryLock(key); ok || err != nil {
		t.Fatalf("TryLock while held in this Store: ok=%v err=%v, want busy", ok, err)
	}
	if _, ok, err := other.TryLock(key); ok || err != nil {
		t.Fatalf("TryLock while held by another Store: ok=%v err=%v, want busy", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.LockContext(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("uncached LockContext while held: err=%v, want DeadlineExceeded", err)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if l.Held() {
		t.Fatal("Held after Remove")
	}
	path, _ := s.lockPath(key)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after Remove: %v", err)
	}
	// Another Store takes the key (creating a new file); ours must see the
	// new inode as busy instead of flocking a stale descriptor.
	o, ok, err := other.TryLock(key)
	if !ok || err != nil {
		t.Fatalf("TryLock after Remove: ok=%v err=%v", ok, err)
	}
	if _, ok, err := s.TryLock(key); ok || err != nil {
		t.Fatalf("TryLock on the re-created lock file: ok=%v err=%v, want busy", ok, err)
	}
	o.Unlock()
	// Stale descriptor: s keeps the file open after Unlock; another Store
	// removes the file under its lock and takes the new one. s must not
	// lock the orphan it still has open.
	l1, ok, err := s.TryLock(key)
	if !ok || err != nil {
		t.Fatalf("TryLock once free: ok=%v err=%v", ok, err)
	}
	l1.Unlock()
	if o, ok, _ = other.TryLock(key); !ok {
		t.Fatal("other Store could not take the free lock")
	}
	o.Remove()
	if o, ok, _ = other.TryLock(key); !ok {
		t.Fatal("other Store could not take the re-created lock")
	}
	if _, ok, err := s.TryLock(key); ok || err != nil {
		t.Fatalf("TryLock with a descriptor on the removed file: ok=%v err=%v, want busy", ok, err)
	}
	o.Unlock()
	l2, ok, err := s.TryLock(key)
	if !ok || err != nil {
		t.Fatalf("TryLock once free: ok=%v err=%v", ok, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(l2.slot.fd, &st); err != nil {
		t.Fatal(err)
	}
	if got, want := inodeOf(t, path), st.Ino; got != want {
		t.Fatalf("held inode %d, lock file inode %d", want, got)
	}
	if err := l2.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l2.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
}

// Probes (LockFree) share the lock: a probe under way is not a holder to
// another probe, nor to TryLock once it is over; a holder is seen by
// every probe. Before, a probe took the lock exclusively for its instant,
// and a concurrent probe saw a live holder where there was none.
func TestLockFreeProbesShare(t *testing.T) {
	s := initStore(t)
	const key = "agents/root"
	// Another process's probe in progress: a shared flock on the file.
	l, err := s.Lock(key)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	path, _ := s.lockPath(key)
	probe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := unix.Flock(int(probe.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if free, err := s.LockFree(key); !free || err != nil {
		t.Fatalf("LockFree during another probe = %v, %v; want free", free, err)
	}
	// A taker finds only a probe on it and tries again once it is gone.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if free, _ := s.LockFree(key); free {
				unix.Flock(int(probe.Fd()), unix.LOCK_UN)
				return
			}
		}
	}()
	<-done
	held, ok, err := s.TryLock(key)
	if !ok || err != nil {
		t.Fatalf("TryLock after the probe = %v, %v; want it", ok, err)
	}
	other, err := Open(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, other} {
		if free, err := st.LockFree(key); free || err != nil {
			t.Fatalf("LockFree while held = %v, %v; want held", free, err)
		}
	}
	held.Unlock()
	if free, err := other.LockFree(key); !free || err != nil {
		t.Fatalf("LockFree after Unlock = %v, %v; want free", free, err)
	}
}
