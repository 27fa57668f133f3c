package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// badInput is the corpus in testdata/badinput/ (copied into agents/) and
// what each file must produce: the exit code of `tavern show` and the
// position its one-line error names ("" where the file has none).
var badInput = []struct {
	file string
	code int
	pos  string // line:col in the error
	msg  string
}{
	{"bad-indent.md", 5, "3:1", "mapping values are not allowed"},
	{"bare-cr.md", 5, "2:9", "carriage return"},
	{"binary.md", 5, "4:8", "binary content"},
	{"broken-yaml.md", 5, "3:1", "did not find expected"},
	{"conflict-markers.md", 5, "3:1", "could not find expected ':'"},
	{"duplicate-key.md", 0, "4:1", "state: duplicate field"}, // shown, with the problem as a warning
	{"empty.md", 5, "1:1", "missing frontmatter"},
	{"list-frontmatter.md", 5, "2:1", "must be a mapping"},
	{"newer-version.md", 0, "2:17", "newer than this tavern"},
	{"no-frontmatter.md", 5, "1:1", "missing frontmatter"},
	{"not-utf8.md", 5, "2:10", "invalid UTF-8"},
	{"tab-indent.md", 5, "4:1", "cannot start any token"},
	{"unclosed.md", 5, "1:1", "missing closing `---`"},
	{"wrong-types.md", 0, "4:9", "spawns: must be an integer"},
}

// snapshot records every file and symlink under root (bytes, mode and
// mtime; link targets), except the engine-private .locks/, .tmp/ and
// .index.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if e.IsDir() && (rel == ".locks" || rel == ".tmp") {
			return filepath.SkipDir
		}
		if rel == ".index" { // the projection's cache (engine-private)
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "link " + target
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			snap[rel] = fmt.Sprintf("%x %v %d %d", h.Sum(nil), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		case fi.IsDir():
			snap[rel] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func diffSnap(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if after[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, after[k]))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// TestBadInput: every kind of bad file gives a one-line error naming its
// path and line:col where it has one; reads, checks and refused writes
// modify, move or delete nothing; check lists every problem in one run
// and still validates the good documents.
func TestBadInput(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "good", "role=reviewer")
	for _, b := range badInput {
		data, err := os.ReadFile(filepath.Join("testdata", "badinput", b.file))
		if err != nil {
			t.Fatal(err)
		}
		p.write("agents/"+b.file, string(data))
	}
	p.write("widgets/gadget.md", "---\nname: gadget\n---\n") // unknown kind
	// A 100 MB file, sparse: refused by size before it is read.
	huge, err := os.Create(p.path("agents/huge.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := huge.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	// Symlinks leaving the store: a file to /etc/passwd, and a queue
	// directory to a directory outside holding a valid-looking queue.md.
	if err := os.Symlink("/etc/passwd", p.path("agents/passwd.md")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "queue.md"), []byte("---\nname: evil\n---\n"), 0o644)
	if err := os.Symlink(outside, p.path("queues/evil")); err != nil {
		t.Fatal(err)
	}
	outsideBefore := snapshot(t, outside)
	before := snapshot(t, p.path(""))

	oneLine := func(what string, r result) string {
		t.Helper()
		lines := strings.Split(strings.TrimRight(r.err, "\n"), "\n")
		if len(lines) != 1 || lines[0] == "" {
			t.Errorf("%s: want a one-line error, got:\n%s", what, r)
		}
		return lines[0]
	}
	for _, b := range badInput {
		ref := "agents/" + strings.TrimSuffix(b.file, ".md")
		r := p.run("show", ref)
		if r.code != b.code {
			t.Errorf("show %s: exit %d, want %d\n%s", ref, r.code, b.code, r)
			continue
		}
		first := strings.Split(r.err, "\n")[0]
		if b.code != 0 {
			first = oneLine("show "+ref, r)
		}
		if want := "agents/" + b.file + ":" + b.pos + ": "; !strings.Contains(first, want) || !strings.Contains(first, b.msg) {
			t.Errorf("show %s: error %q, want %q and %q", ref, first, want, b.msg)
		}
		if b.code != 0 {
			e := jsonErr(t, p.run("show", ref, "--json"))
			var line, col int
			fmt.Sscanf(b.pos, "%d:%d", &line, &col)
			if e["path"] != "agents/"+b.file || e["line"] != float64(line) || e["col"] != float64(col) {
				t.Errorf("show %s --json: %v, want line %d col %d", ref, e, line, col)
			}
			// A write to a broken document is refused and changes nothing.
			if r := p.run("set", ref, "state=idle"); r.code != 5 {
				t.Errorf("set on %s: exit %d, want 5\n%s", ref, r.code, r)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"show", "agents/huge"}, 5, "agents/huge.md: 104857600 bytes is larger than"},
		{[]string{"show", "agents/passwd"}, 2, "agents/passwd.md: path is outside the store"},
		{[]string{"show", "queues/evil"}, 2, "queues/evil/queue.md: path is outside the store"},
		{[]string{"show", "widgets/gadget.md"}, 2, "widgets"},
		{[]string{"show", "agents/../../etc/passwd"}, 2, "../../etc/passwd"},
		{[]string{"show", "../outside.md"}, 2, ".."},
		{[]string{"show", "/etc/passwd"}, 2, "/etc/passwd"},
		{[]string{"new", "agent", "../evil"}, 2, `invalid name "../evil"`},
		{[]string{"new", "agent", "a\x01b"}, 2, "control"},
		{[]string{"set", "agents/../../x", "a=1"}, 2, "../../x"},
		{[]string{"set", "agents/passwd", "a=1"}, 2, "outside the store"},
		{[]string{"set", "agents/huge", "a=1"}, 5, "larger than"},
		{[]string{"rm", "agents/passwd"}, 2, "outside the store"},
		{[]string{"rm", "queues/evil"}, 2, "outside the store"},
		{[]string{"edit", "agents/broken-yaml"}, 5, "agents/broken-yaml.md:3:1"},
	} {
		r := p.run(tc.args...)
		if r.code != tc.code {
			t.Errorf("tavern %q: exit %d, want %d\n%s", tc.args, r.code, tc.code, r)
			continue
		}
		if line := oneLine(fmt.Sprintf("%q", tc.args), r); !strings.Contains(line, tc.want) {
			t.Errorf("tavern %q: error %q lacks %q", tc.args, line, tc.want)
		}
	}

	// check: every problem in one run, the good document validated.
	r := p.run("check")
	if r.code != 5 {
		t.Fatalf("check: %s", r)
	}
	for _, b := range badInput {
		if !strings.Contains(r.err, "agents/"+b.file+":"+b.pos+": ") {
			t.Errorf("check does not report agents/%s at %s:\n%s", b.file, b.pos, r.err)
		}
	}
	for _, want := range []string{"agents/huge.md: 104857600 bytes", "agents/passwd.md: path is outside the store",
		"queues/evil: path is outside the store", "widgets/gadget.md:1:1: not a document of any known kind",
		"wrong-types.md:5:9: queues:", "wrong-types.md:6:8: state:", "wrong-types.md:7:10: created:"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.err)
		}
	}
	if strings.Contains(r.err, "agents/good.md") {
		t.Errorf("check reports the good document:\n%s", r.err)
	}
	// Every line is path:line:col: or path: message, one problem each.
	lineRE := regexp.MustCompile(`^[a-z]+/[^ :]+(:\d+:\d+)?: `)
	lines := strings.Split(strings.TrimRight(r.err, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		if !lineRE.MatchString(l) {
			t.Errorf("check line %q is not path[:line:col]: message", l)
		}
	}
	checked := len(badInput) + 5                                                                              // + good, tavern.md, gadget, huge, passwd
	if want := fmt.Sprintf("%d documents checked", checked+1); !strings.Contains(lines[len(lines)-1], want) { // + queues/evil
		t.Errorf("check summary %q, want %q", lines[len(lines)-1], want)
	}
	var rep struct{ Problems []map[string]any }
	if err := json.Unmarshal([]byte(p.run("check", "--json").out), &rep); err != nil || len(rep.Problems) < len(badInput)+4 {
		t.Errorf("check --json: %v, %d problems", err, len(rep.Problems))
	}
	// ls lists the good and the merely invalid, reports the rest, exit 0.
	r = p.run("ls", "agents", "--json")
	if r.code != 0 {
		t.Fatalf("ls: %s", r)
	}
	if got := len(objsOf(t, r.out)); got != 4 { // good, duplicate-key, newer-version, wrong-types
		t.Errorf("ls listed %d agents, want 4\n%s", got, r.out)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.err), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil || obj["path"] == nil || obj["error"] == nil {
			t.Errorf("ls --json problem line is not a JSON error object: %q", l)
		}
	}
	for _, b := range append(badInput, struct {
		file string
		code int
		pos  string
		msg  string
	}{file: "huge.md"}) {
		if !strings.Contains(r.err, `"path":"agents/`+b.file+`"`) {
			t.Errorf("ls does not report agents/%s:\n%s", b.file, r.err)
		}
	}
	p.run("migrate")
	p.run("ls", "queues")

	if d := diffSnap(before, snapshot(t, p.path(""))); len(d) > 0 {
		t.Errorf("bad input handling changed the store:\n%s", strings.Join(d, "\n"))
	}
	if d := diffSnap(outsideBefore, snapshot(t, outside)); len(d) > 0 {
		t.Errorf("the directory behind the symlink changed:\n%s", strings.Join(d, "\n"))
	}
}
