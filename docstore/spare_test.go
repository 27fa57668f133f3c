package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func inodeOf(tb testing.TB, path string) uint64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A retired file is reused by a later create only after its old
// directory has been fsynced since it left; the new document is exactly
// the new bytes (a longer old content is truncated away), the old name is
// gone, and a create onto an existing name still fails with ErrExist
// without losing the spare.
func TestRetireReusesAfterDirSync(t *testing.T) {
	s, _, err := Init(filepath.Join(t.TempDir(), DirName), "t")
	if err != nil {
		t.Fatal(err)
	}
	s.spares.warmup = 0 // keep spares from the first retire
	long := []byte("---\nlong: " + string(bytes.Repeat([]byte("x"), 3000)) + "\n---\n")
	if err := s.createFile("notes/old.md", long, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.createFile("notes/exists.md", []byte("---\na: 1\n---\n"), 0); err != nil {
		t.Fatal(err)
	}
	oldIno := inodeOf(t, abs0(t, s, "notes/old.md"))
	if err := s.Retire("notes/old.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(abs0(t, s, "notes/old.md")); !os.IsNotExist(err) {
		t.Fatalf("old name after Retire: err = %v, want not exist", err)
	}
	// notes/ has not been fsynced since: the spare must not be used.
	if name := s.takeSpare(); name != "" {
		t.Fatalf("takeSpare before a directory fsync = %q, want none", name)
	}
	if err := s.syncDir(abs0(t, s, "notes")); err != nil {
		t.Fatal(err)
	}
	if err := s.createFile("notes/exists.md", []byte("---\na: 2\n---\n"), 0); !errors.Is(err, ErrExist) {
		t.Fatalf("create over an existing name: err = %v, want ErrExist", err)
	}
	short := []byte("---\nshort: 1\n---\n")
	if err := s.createFile("notes/new.md", short, 0); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(abs0(t, s, "notes/new.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, short) {
		t.Fatalf("new.md = %q, want %q", got, short)
	}
	if ino := inodeOf(t, abs0(t, s, "notes/new.md")); ino != oldIno {
		t.Fatalf("new.md inode = %d, want the retired file's %d", ino, oldIno)
	}
	if left, _ := os.ReadDir(filepath.Join(s.Root(), tmpDir)); len(left) != 0 {
		t.Fatalf(".tmp/ after reuse holds %d files, want 0", len(left))
	}
}

// Enough waiting spares start one background fsync of their
// directories, after which they are reused.
func TestRetireBatchSync(t *testing.T) {
	s, _, err := Init(filepath.Join(t.TempDir(), DirName), "t")
	if err != nil {
		t.Fatal(err)
	}
	s.spares.warmup = 0 // keep spares from the first retire
	for i := 0; i < spareKick; i++ {
		rel := fmt.Sprintf("notes/o%02d.md", i)
		if err := s.createFile(rel, []byte("---\na: 1\n---\n"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < spareKick; i++ {
		if err := s.Retire(fmt.Sprintf("notes/o%02d.md", i)); err != nil {
			t.Fatal(err)
		}
	}
	s.spares.waitSync()
	s.spares.mu.Lock()
	ready, waiting := len(s.spares.ready), len(s.spares.wait)
	s.spares.mu.Unlock()
	if ready != spareKick || waiting != 0 {
		t.Fatalf("after the background fsync: %d ready, %d waiting; want %d, 0", ready, waiting, spareKick)
	}
	if err := s.createFile("queues/x.md", []byte("---\nb: 1\n---\n"), 0); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(filepath.Join(s.Root(), tmpDir))
	if got, want := len(left), spareKick-1; got != want {
		t.Fatalf("spares left = %d, want %d (one reused)", got, want)
	}
}

func abs0(tb testing.TB, s *Store, rel string) string {
	tb.Helper()
	p, err := s.Abs(rel)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// A short-lived process (a CLI take or done retires one or two files)
// keeps no spares: they would stay in .tmp/ for nobody. A long-running
// one starts keeping them after spareWarmup retires.
func TestShortLivedKeepsNoSpares(t *testing.T) {
	s0 := mustInitStore(t)
	s, err := Open(s0.Root())
	if err != nil {
		t.Fatal(err)
	}
	tmpCount := func() int {
		t.Helper()
		es, err := os.ReadDir(filepath.Join(s.Root(), tmpDir))
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	for i := 0; i < spareWarmup+spareKick; i++ {
		rel := fmt.Sprintf("notes/c/o%02d.md", i)
		if err := s.createFile(rel, []byte("---\na: 1\n---\n"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Retire(rel); err != nil {
			t.Fatal(err)
		}
		if i < spareWarmup {
			if n := tmpCount(); n != 0 {
				t.Fatalf("after %d retires: %d files in .tmp/, want 0", i+1, n)
			}
		}
	}
	s.spares.waitSync()
	if n := tmpCount(); n == 0 {
		t.Errorf("after %d retires: no spare kept", spareWarmup+spareKick)
	}
}

// Open bounds .tmp/ by count as well as by age: past MaxTemps files, the
// oldest ones older than MinTempAge go, the young ones stay.
func TestOpenBoundsTempCount(t *testing.T) {
	s := mustInitStore(t)
	dir := filepath.Join(s.Root(), tmpDir)
	old := time.Now().Add(-time.Minute)
	for i := 0; i < MaxTemps+50; i++ {
		p := filepath.Join(dir, fmt.Sprintf("999-%d.tmp", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if i < MaxTemps+40 {
			os.Chtimes(p, old, old)
		}
	}
	if _, err := Open(s.Root()); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(dir)
	if got, want := len(es), MaxTemps; got != want {
		t.Errorf("%d files in .tmp/ after Open, want %d", got, want)
	}
	// The 10 young ones are among those kept.
	for i := MaxTemps + 40; i < MaxTemps+50; i++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("999-%d.tmp", i))); err != nil {
			t.Errorf("young temp file %d removed: %v", i, err)
		}
	}
}
