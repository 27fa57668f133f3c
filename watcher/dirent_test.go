package watcher

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadDir: readDir lists what os.ReadDir lists, names and types,
// in a directory bigger than one getdents buffer and with every type
// of entry a user can make.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 200)
	for i := range 1500 { // ~1500 * 224 bytes of dirents: several buffers
		name := fmt.Sprintf("%s-%04d.md", long, i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"é ü.md", "new\nline.md", " lead", ".hidden.md", "-dash"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		defer l.Close()
	}

	got, err := readDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]dirent, len(des))
	for i, e := range des {
		want[i] = dirent{name: e.Name(), typ: e.Type()}
	}
	byName := func(a, b dirent) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(got, byName)
	if !slices.Equal(got, want) {
		t.Errorf("readDir: %d entries, os.ReadDir: %d", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("first difference: got %q %v, want %q %v", got[i].name, got[i].typ, want[i].name, want[i].typ)
				break
			}
		}
	}

	if _, err := readDir(filepath.Join(dir, "missing"), 0); !isGone(err) {
		t.Errorf("readDir of a missing directory: %v, want a not-exist error", err)
	}
	if _, err := readDir(filepath.Join(dir, " lead"), 0); err == nil {
		t.Errorf("readDir of a file: no error")
	}
	var _ fs.FileMode = got[0].Type()
}

// TestRescanFindsRemovals: a full rescan of a polled tree reports the
// files and directories gone since the last one, also when as many
// names appeared as went (the walk counts known names before it builds
// any set of them), and keeps the ones still there.
func TestRescanFindsRemovals(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		write(fmt.Sprintf("d/f%03d.md", i))
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("d/sub/s.md")
	rec := &recorder{}
	w, err := WatchFS(root, FSOptions{Poll: time.Hour, Reconcile: -1, OnChange: rec.onChange})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rescan := func() []string {
		t.Helper()
		rec.mu.Lock()
		rec.got = nil
		rec.mu.Unlock()
		if err := w.Rescan(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := rec.lines()
		slices.Sort(got)
		return got
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"nothing changed", func() {}, nil},
		{"one gone, one new: same count", func() {
			os.Remove(filepath.Join(dir, "f100.md"))
			write("d/new.md")
		}, []string{"create d/new.md", "remove d/f100.md"}},
		{"several gone", func() {
			for _, n := range []string{"f000.md", "f150.md", "f299.md"} {
				os.Remove(filepath.Join(dir, n))
			}
		}, []string{"remove d/f000.md", "remove d/f150.md", "remove d/f299.md"}},
		{"a directory gone, a file of its name", func() {
			os.RemoveAll(filepath.Join(dir, "sub"))
			write("d/sub")
		}, []string{"create d/sub", "remove d/sub/s.md"}},
		{"a file replaced by a link", func() {
			os.Remove(filepath.Join(dir, "f001.md"))
			os.Symlink("f002.md", filepath.Join(dir, "f001.md"))
		}, []string{"error d/f001.md symlink", "remove d/f001.md"}},
		{"nothing changed again", func() {}, nil},
	}
	for _, st := range steps {
		st.do()
		if got := rescan(); !slices.Equal(got, st.want) {
			t.Errorf("%s: got %q, want %q", st.name, got, st.want)
		}
	}
	if n := len(w.State()); n != 300-4+1 {
		t.Errorf("known files after the steps: %d, want %d", n, 300-4+1)
	}
}
