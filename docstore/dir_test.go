package docstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/schema"
)

func mustInitStore(tb testing.TB) *Store {
	tb.Helper()
	s, _, err := Init(filepath.Join(tb.(interface{ TempDir() string }).TempDir(), DirName), "t")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func noteDoc(tb testing.TB, title string) *Doc {
	tb.Helper()
	d, err := New(schema.Note, []Field{{Key: schema.VersionField, Value: schema.Note.Version}, {Key: "title", Value: title}, {Key: "created", Value: time.Now()}}, []byte("body\n"))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// A Dir creates, reads, checks and retires documents by name, with the
// same results on disk as the path-based Store methods.
func TestDirRoundTrip(t *testing.T) {
	s := mustInitStore(t)
	if err := s.MkdirAll("notes/sub"); err != nil {
		t.Fatal(err)
	}
	var seen []Mutation
	s.Observe(func(m Mutation) { seen = append(seen, m) })
	d, err := s.OpenDir("notes/sub")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, want := d.Rel("a.md"), "notes/sub/a.md"; got != want {
		t.Fatalf("Rel = %q, want %q", got, want)
	}
	doc := noteDoc(t, "first")
	if err := d.Create("a.md", doc); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Op != "create" || seen[0].Path != "notes/sub/a.md" {
		t.Fatalf("observers saw %+v, want one create of notes/sub/a.md", seen)
	}
	if doc.Kind != schema.Note || doc.Rev == "" {
		t.Fatalf("after Create: kind %v rev %q, want note and a revision", doc.Kind, doc.Rev)
	}
	onDisk, err := os.ReadFile(filepath.Join(s.Root(), "notes/sub/a.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != string(doc.Bytes()) {
		t.Fatalf("file = %q, want %q", onDisk, doc.Bytes())
	}
	if !d.Exists("a.md") || d.Exists("b.md") {
		t.Fatalf("Exists(a.md), Exists(b.md) = %v, %v; want true, false", d.Exists("a.md"), d.Exists("b.md"))
	}
	got, err := d.Get("a.md")
	if err != nil {
		t.Fatal(err)
	}
	if got.String("title") != "first" || got.Path != "notes/sub/a.md" || got.Kind != schema.Note {
		t.Fatalf("Get = title %q path %q kind %v", got.String("title"), got.Path, got.Kind)
	}
	if err := d.Create("a.md", noteDoc(t, "second")); !errors.Is(err, ErrExist) {
		t.Fatalf("Create over an existing name: err = %v, want ErrExist", err)
	}
	if again, _ := os.ReadFile(filepath.Join(s.Root(), "notes/sub/a.md")); string(again) != string(onDisk) {
		t.Fatalf("a failed Create changed the file: %q", again)
	}
	fi, err := d.Lstat("a.md")
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(onDisk)) {
		t.Fatalf("Lstat = %v, %v; want a regular file of %d bytes", fi, err, len(onDisk))
	}
	if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != inodeOf(t, filepath.Join(s.Root(), "notes/sub/a.md")) {
		t.Fatalf("Lstat inode %d differs from os.Stat's", ino)
	}
	if err := d.Retire("a.md"); err != nil {
		t.Fatal(err)
	}
	if d.Exists("a.md") {
		t.Fatal("a.md still exists after Retire")
	}
	if _, err := d.Get("a.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Get after Retire: err = %v, want not exist", err)
	}
	if err := d.Retire("a.md"); err != nil {
		t.Fatalf("Retire of a missing name: %v, want nil", err)
	}
	// Invalid documents are refused before anything is written.
	bad := noteDoc(t, "x")
	if err := bad.Set("created", "yesterday"); err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	if err := d.Create("bad.md", bad); !errors.As(err, &ve) || d.Exists("bad.md") {
		t.Fatalf("Create of an invalid note: err = %v, exists %v; want *ValidationError and no file", err, d.Exists("bad.md"))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A spare retired through a Dir is reused by a later Dir create once its
// directory was fsynced: the new file is the old inode with exactly the
// new bytes.
func TestDirSpareReuse(t *testing.T) {
	s := mustInitStore(t)
	s.spares.warmup = 0 // keep spares from the first retire
	if err := s.MkdirAll("notes"); err != nil {
		t.Fatal(err)
	}
	d, err := s.OpenDir("notes")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Create("old.md", noteDoc(t, "old and rather longer than the next one")); err != nil {
		t.Fatal(err)
	}
	oldIno := inodeOf(t, filepath.Join(s.Root(), "notes/old.md"))
	if err := d.Retire("old.md"); err != nil {
		t.Fatal(err)
	}
	if err := s.syncDir(filepath.Join(s.Root(), "notes")); err != nil {
		t.Fatal(err)
	}
	nd := noteDoc(t, "new")
	if err := d.Create("new.md", nd); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(s.Root(), "notes/new.md")
	if got := inodeOf(t, full); got != oldIno {
		t.Errorf("new.md inode = %d, want the retired file's %d", got, oldIno)
	}
	if got, _ := os.ReadFile(full); string(got) != string(nd.Bytes()) {
		t.Errorf("new.md = %q, want %q", got, nd.Bytes())
	}
}

// Symlinks never let a Dir reach outside the store: not as a component of
// the directory opened, not as the file read; bad names are refused.
func TestDirRefusesLinksAndBadNames(t *testing.T) {
	s := mustInitStore(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), []byte("---\ntitle: secret\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Root(), "notes", "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenDir("notes/out"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("OpenDir through a symlink leaving the store: err = %v, want ErrUnsafePath", err)
	}
	// A link that stays inside is refused too: a Dir is reached without
	// following any.
	if err := os.Symlink(filepath.Join(s.Root(), "notes"), filepath.Join(s.Root(), "tuples", "in")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenDir("tuples/in"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("OpenDir through an inside symlink: err = %v, want ErrUnsafePath", err)
	}
	if _, err := s.OpenDir("notes/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenDir of a missing directory: err = %v, want not exist", err)
	}
	d, err := s.OpenDir("notes")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(s.Root(), "notes", "link.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get("link.md"); !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("Get of a symlink: err = %v, want ErrUnsafePath", err)
	}
	if !d.Exists("link.md") {
		t.Fatal("Exists(link.md) = false; a symlink is an existing name")
	}
	if err := syscall.Mkfifo(filepath.Join(s.Root(), "notes", "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile("fifo.md"); !errors.Is(err, ErrOddFile) {
		t.Fatalf("ReadFile of a FIFO: err = %v, want ErrOddFile", err)
	}
	for _, name := range []string{"", ".", "..", "../notes/x.md", "a/b.md", "x\x00.md"} {
		if err := d.Create(name, noteDoc(t, "x")); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("Create(%q): err = %v, want ErrUnsafePath", name, err)
		}
		if _, err := d.ReadFile(name); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("ReadFile(%q): err = %v, want ErrUnsafePath", name, err)
		}
		if d.Exists(name) {
			t.Errorf("Exists(%q) = true", name)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "notes")); len(entries) != 3 {
		t.Errorf("notes/ has %d entries after refused creates, want 3 (out, link.md, fifo.md)", len(entries))
	}
}

// Stale tells when the path no longer leads to the open directory.
func TestDirStale(t *testing.T) {
	s := mustInitStore(t)
	if err := s.MkdirAll("notes/a"); err != nil {
		t.Fatal(err)
	}
	d, err := s.OpenDir("notes/a")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Stale() {
		t.Fatal("fresh Dir is stale")
	}
	full := filepath.Join(s.Root(), "notes", "a")
	if err := os.Rename(full, full+".old"); err != nil {
		t.Fatal(err)
	}
	if !d.Stale() {
		t.Fatal("Dir not stale after its directory was renamed away")
	}
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if !d.Stale() {
		t.Fatal("Dir not stale after its path was given to a new directory")
	}
	// Operations still act on the directory it opened.
	if err := d.Create("x.md", noteDoc(t, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(full+".old", "x.md")); err != nil {
		t.Fatalf("create through a stale Dir did not land in the directory it opened: %v", err)
	}
	if err := os.RemoveAll(full + ".old"); err != nil {
		t.Fatal(err)
	}
	if err := d.Create("y.md", noteDoc(t, "y")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in a removed directory: err = %v, want not exist", err)
	}
}

// Grep parses only the documents that contain the needle, as Get would,
// skips the rest unread (a broken one too), and reports a broken one that
// contains it.
func TestGrep(t *testing.T) {
	s := mustInitStore(t)
	for _, title := range []string{"alpha", "beta", "gamma alpha"} {
		if err := s.Create("notes/"+strings.ReplaceAll(title, " ", "-")+".md", noteDoc(t, title)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Root(), "notes", "broken.md"), []byte("---\ntitle: [beta\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		needle string
		want   []string
		errs   int
	}{
		{"alpha", []string{"notes/alpha.md", "notes/gamma-alpha.md"}, 0},
		{"gamma", []string{"notes/gamma-alpha.md"}, 0},
		{"beta", []string{"notes/beta.md"}, 1},
		{"nowhere", nil, 0},
	}
	for _, tc := range tests {
		docs, errs := s.Grep("notes", tc.needle)
		var got []string
		for _, d := range docs {
			want, err := s.Get(d.Path)
			if err != nil || want.Rev != d.Rev || want.Kind != d.Kind {
				t.Errorf("%s: %s read as rev %s kind %v, Get gives %v %v", tc.needle, d.Path, d.Rev, d.Kind, want, err)
			}
			got = append(got, d.Path)
		}
		if !slices.Equal(got, tc.want) || len(errs) != tc.errs {
			t.Errorf("Grep(notes, %q) = %v, %v; want %v and %d errors", tc.needle, got, errs, tc.want, tc.errs)
		}
	}
	if docs, errs := s.Grep("nothing/here", "x"); docs != nil || errs != nil {
		t.Errorf("a missing directory: %v %v", docs, errs)
	}
}
