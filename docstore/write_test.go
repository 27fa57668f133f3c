package docstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Creates must be complete, exclusive and leave no temp names, both by
// O_TMPFILE+link and by the .tmp/+rename fallback; concurrent durable
// creates in one directory share directory fsyncs and all succeed.
func TestCreateFilePaths(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			if fallback {
				noTmpfile.Store(true)
				t.Cleanup(func() { noTmpfile.Store(false) })
			}
			s, _, err := Init(filepath.Join(t.TempDir(), DirName), "t")
			if err != nil {
				t.Fatal(err)
			}
			if !s.Durable() {
				t.Fatal("new store is not durable")
			}
			const n = 24
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.createFile(fmt.Sprintf("notes/n%02d.md", i), []byte(fmt.Sprintf("---\ni: %d\n---\n", i)), 0)
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("create %d: %v", i, err)
				}
			}
			for i := 0; i < n; i++ {
				got, err := os.ReadFile(filepath.Join(s.Root(), fmt.Sprintf("notes/n%02d.md", i)))
				if want := fmt.Sprintf("---\ni: %d\n---\n", i); err != nil || string(got) != want {
					t.Errorf("n%02d.md = %q, %v; want %q", i, got, err, want)
				}
			}
			if err := s.createFile("notes/n00.md", []byte("other"), 0); !errors.Is(err, ErrExist) {
				t.Errorf("create over an existing name: %v, want ErrExist", err)
			}
			if got, _ := os.ReadFile(filepath.Join(s.Root(), "notes/n00.md")); string(got) != "---\ni: 0\n---\n" {
				t.Errorf("a refused create changed the file: %q", got)
			}
			if left, _ := os.ReadDir(filepath.Join(s.Root(), tmpDir)); len(left) != 0 {
				t.Errorf("%d temp files left in .tmp/", len(left))
			}
		})
	}
}

// A temp file left in .tmp/ by a killed process whose pid this process
// now has (pids are reused) must not make writes fail: the next name is
// taken. (It did: `tavern sync` exited 4 with "file exists".)
func TestWriteFileSkipsLeftoverTempName(t *testing.T) {
	s := newTestStore(t)
	for i := uint64(1); i <= 3; i++ { // the next names this process would use
		name := filepath.Join(s.Root(), tmpDir, pid+"-"+strconv.FormatUint(tmpSeq.Load()+i, 10)+".tmp")
		if err := os.WriteFile(name, []byte("left by a dead process"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteFile("events/x.jsonl", []byte("{}\n")); err != nil {
		t.Fatalf("write with leftover temp names: %v", err)
	}
}
