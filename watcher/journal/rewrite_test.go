package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// appendEvents appends one event per path to the journal of root, each a
// doc.updated of revision rev, and returns their ids.
func appendEvents(t *testing.T, root, rev string, paths ...string) []string {
	t.Helper()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var ids []string
	for _, p := range paths {
		e, err := j.Append(Event{Type: TypeUpdated, Path: p, Rev: rev})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

// dayFile returns the journal's only day file.
func dayFile(t *testing.T, root string) string {
	t.Helper()
	days, err := filepath.Glob(filepath.Join(root, Dir, "*.jsonl"))
	if err != nil || len(days) != 1 {
		t.Fatalf("day files: %v %v", days, err)
	}
	return days[0]
}

// replaceFile writes data to path by rename, as a sync rewriting a day
// file does.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnAfterRewrite: a reader following the journal from a cursor
// whose day file was rewritten (not appended to) under it reads the new
// content whole, from its start, once it is told so, or on after its
// last line when the new content still holds it. It read on from its old
// offset: entries before it were skipped and a line was read from its
// middle.
func TestReadOnAfterRewrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rewrite func(t *testing.T, root, day string, old []byte)
		told    bool // the reader is told of the rewrite
		old     int  // entries of the new content before the appends the reader must see
	}{
		{"removed", func(t *testing.T, root, day string, old []byte) {
			if err := os.Remove(day); err != nil {
				t.Fatal(err)
			}
		}, true, 0},
		{"other-content", func(t *testing.T, root, day string, old []byte) {
			other := t.TempDir()
			appendEvents(t, other, "r9", "a.md", "b.md")
			data, err := os.ReadFile(dayFile(t, other))
			if err != nil {
				t.Fatal(err)
			}
			replaceFile(t, day, data)
		}, true, 2},
		{"same-content", func(t *testing.T, root, day string, old []byte) {
			replaceFile(t, day, old)
		}, false, 0},
		{"prefix-dropped", func(t *testing.T, root, day string, old []byte) {
			lines := strings.SplitAfter(string(old), "\n")
			replaceFile(t, day, []byte(strings.Join(lines[len(lines)-3:], "")))
		}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			appendEvents(t, root, "r1", "x1.md", "x2.md", "x3.md", "x4.md", "x5.md", "x6.md")
			cur, err := Read(root, Filter{}, func(Event, error) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			day := dayFile(t, root)
			old, err := os.ReadFile(day)
			if err != nil {
				t.Fatal(err)
			}
			tc.rewrite(t, root, day, old)
			want := appendEvents(t, root, "r2", "y1.md", "y2.md")

			var got []string
			told := 0
			if _, err := readFrom(filepath.Join(root, Dir), cur, Filter{}, func(e Event, err error) bool {
				switch {
				case errors.Is(err, ErrRewritten):
					told++
				case err != nil:
					t.Errorf("read: %v", err)
				default:
					got = append(got, e.ID)
				}
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1}[tc.told]; told != want {
				t.Errorf("told of the rewrite %d times, want %d", told, want)
			}
			if len(got) != tc.old+len(want) || !slicesEqual(got[tc.old:], want) {
				t.Errorf("read %d entries %v, want %d then %v", len(got), got, tc.old, want)
			}
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestHeadsAfterRewrite: heads caught up with a journal whose day file
// was then replaced by another's (a sync adopting the remote's store)
// are those of the new journal, not the old one's with the new one's
// entries read from the middle of a line.
func TestHeadsAfterRewrite(t *testing.T) {
	root := t.TempDir()
	appendEvents(t, root, "r1", "x1.md", "x2.md", "x3.md", "x4.md", "x5.md", "x6.md")
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	appendEvents(t, other, "r9", "a.md")
	data, err := os.ReadFile(dayFile(t, other))
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, dayFile(t, root), data)
	appendEvents(t, root, "r2", "b.md")
	if err := h.CatchUp(); err != nil {
		t.Fatal(err)
	}
	for path, rev := range map[string]string{"a.md": "r9", "b.md": "r2", "x1.md": ""} {
		hd, ok := h.Get(path)
		if ok != (rev != "") || hd.Rev != rev {
			t.Errorf("%s: head %+v %v, want revision %q", path, hd, ok, rev)
		}
	}
}

// TestHeadsStale: heads loaded without a checkpoint read the whole
// journal and say so (a one-shot ls then saves them, or every ls after
// an engine write would read it all again); loaded from a fresh one,
// they do not.
func TestHeadsStale(t *testing.T) {
	root := t.TempDir()
	appendEvents(t, root, "r1", "x1.md", "x2.md")
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Stale() {
		t.Errorf("no checkpoint: not stale")
	}
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, root, "r2", "x1.md")
	if h, err = LoadHeads(root); err != nil {
		t.Fatal(err)
	} else if h.Stale() {
		t.Errorf("a line past the checkpoint: stale")
	}
}
