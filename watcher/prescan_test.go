package watcher

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadKnownChangesAfterPrescan: the first scan lists and stats the
// tree while the known states load, and compares them afterwards. Files
// changed, removed, created and a directory replaced after the prescan
// (while LoadKnown runs) must all be found, with kernel notifications
// and with polling.
func TestLoadKnownChangesAfterPrescan(t *testing.T) {
	for _, poll := range []time.Duration{0, time.Hour} {
		t.Run(map[time.Duration]string{0: "notify", time.Hour: "poll"}[poll], func(t *testing.T) {
			root := t.TempDir()
			write := func(rel, text string) {
				t.Helper()
				full := filepath.Join(root, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range []string{"a.md", "b.md", "c.md", "sub/d.md", "box/e.md"} {
				write(rel, rel)
			}
			w, err := WatchFS(root, FSOptions{Poll: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			known := w.State()
			w.Close()
			for p, st := range known { // read long ago: not racy
				st.Seen = max(st.MTime, st.CTime) + int64(time.Hour)
				known[p] = st
			}

			prescanned := make(chan struct{})
			testHookPrescanned = func() { close(prescanned) }
			defer func() { testHookPrescanned = nil }()
			rec := &recorder{}
			w, err = WatchFS(root, FSOptions{Poll: poll, OnChange: rec.onChange, LoadKnown: func() map[string]FileState {
				<-prescanned
				write("b.md", "b changed")
				os.Remove(filepath.Join(root, "c.md"))
				write("f.md", "new")
				write("sub/g.md", "new in sub")
				if err := os.Rename(filepath.Join(root, "box"), filepath.Join(root, "old")); err != nil {
					t.Error(err)
				}
				write("old/e.md", "moved away")
				write("box/e.md", "box replaced")
				return known
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			syncW(t, w)

			got := slices.Sorted(maps.Keys(w.State()))
			want := []string{"a.md", "b.md", "box/e.md", "f.md", "old/e.md", "sub/d.md", "sub/g.md"}
			if !slices.Equal(got, want) {
				t.Errorf("known files: got %v, want %v", got, want)
			}
			if st := w.State()["b.md"]; st.Size != int64(len("b changed")) {
				t.Errorf("b.md: size %d, want the changed file's %d", st.Size, len("b changed"))
			}
			lines := strings.Join(rec.lines(), ",")
			for _, c := range []string{"update b.md", "remove c.md", "create f.md", "create sub/g.md", "update box/e.md", "create old/e.md"} {
				if !strings.Contains(lines, c) {
					t.Errorf("changes %s: no %q", lines, c)
				}
			}
			if strings.Contains(lines, "a.md") || strings.Contains(lines, "sub/d.md") {
				t.Errorf("changes %s: unchanged files reported", lines)
			}
		})
	}
}
