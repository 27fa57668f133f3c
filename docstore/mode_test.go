package docstore

import (
	"os"
	"path/filepath"
	"testing"
)

func permAt(tb testing.TB, s *Store, rel string) os.FileMode {
	tb.Helper()
	fi, err := os.Lstat(filepath.Join(s.Root(), filepath.FromSlash(rel)))
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Every rewrite keeps the mode of the file it replaces: an update, a
// move to another directory (a claim), and a create through a Dir of a
// document read from a 0600 file, whichever way the new file is made (a
// reused spare, an unnamed temp file, a named one).
func TestRewriteKeepsMode(t *testing.T) {
	s := mustInitStore(t)
	if err := s.Create("notes/ch/a.md", noteDoc(t, "a")); err != nil {
		t.Fatal(err)
	}
	if got, want := permAt(t, s, "notes/ch/a.md"), os.FileMode(newFilePerm()); got != want {
		t.Fatalf("new file mode = %v, want %v (0666 minus umask)", got, want)
	}
	full := filepath.Join(s.Root(), "notes", "ch", "a.md")
	if err := os.Chmod(full, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("notes/ch/a.md", func(d *Doc) error { return d.Set("title", "b") }); err != nil {
		t.Fatal(err)
	}
	if got := permAt(t, s, "notes/ch/a.md"); got != 0o600 {
		t.Errorf("after Update: mode %v, want 0600", got)
	}
	l, err := s.Lock(DocLockKey("notes/ch/a.md"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(l, "notes/ch/a.md", "notes/ch/b.md", nil); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if got := permAt(t, s, "notes/ch/b.md"); got != 0o600 {
		t.Errorf("after Move: mode %v, want 0600", got)
	}
	// Dir: read, create elsewhere, retire the old (the queue's move);
	// repeated so that retired spares are reused too.
	if err := s.MkdirAll("notes/ch"); err != nil {
		t.Fatal(err)
	}
	src, err := s.OpenDir("notes/ch")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for i := 0; i < spareKick*3; i++ {
		name := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".md"
		if err := src.Create(name, noteDoc(t, "c")); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			os.Chmod(filepath.Join(s.Root(), "notes", "ch", name), 0o640)
		}
		d, err := src.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(newFilePerm())
		if i%2 == 0 {
			want = 0o640
		}
		if err := src.Create("moved-"+name, d); err != nil {
			t.Fatal(err)
		}
		if got := permAt(t, s, "notes/ch/moved-"+name); got != want {
			t.Fatalf("create %d from a %v file: mode %v", i, want, got)
		}
		if err := src.Retire(name); err != nil {
			t.Fatal(err)
		}
		// A new document made from a spare gets the new-file mode, not
		// the retired file's.
		if err := src.Create("new-"+name, noteDoc(t, "n")); err != nil {
			t.Fatal(err)
		}
		if got, want := permAt(t, s, "notes/ch/new-"+name), os.FileMode(newFilePerm()); got != want {
			t.Fatalf("new document %d: mode %v, want %v", i, got, want)
		}
	}
	s.spares.waitSync()
}

// Lock files are created like any file: 0666 minus the umask, so that a
// store shared by a group can be locked by every member.
func TestLockFileModeFollowsUmask(t *testing.T) {
	s := mustInitStore(t)
	want := os.FileMode(newFilePerm())
	for _, key := range []string{"a/b", "c"} {
		l, err := s.Lock(key)
		if err != nil {
			t.Fatal(err)
		}
		l.Unlock()
		fi, err := os.Stat(filepath.Join(s.Root(), locksDir, filepath.FromSlash(key)+".lock"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("lock file %s: mode %v, want %v", key, got, want)
		}
	}
}
