package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func TestInit(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, "", nil, "init")
	if r.code != 0 || !strings.Contains(r.out, "Initialized") {
		t.Fatalf("first init: %s", r)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, ".tavern", "tavern.md"))
	if err != nil {
		t.Fatal(err)
	}
	cd, err := docstore.Parse("tavern.md", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := cd.Int("schema_version"); v != 1 || cd.String("name") != filepath.Base(dir) || cd.String("durability") != "durable" {
		t.Errorf("tavern.md:\n%s", cfg)
	}
	for _, d := range docstore.InitDirs {
		if fi, err := os.Stat(filepath.Join(dir, ".tavern", d)); err != nil || !fi.IsDir() {
			t.Errorf("init did not create %s/", d)
		}
	}
	// Idempotent: a second init keeps tavern.md byte for byte and restores
	// a missing directory.
	os.Remove(filepath.Join(dir, ".tavern", "agents"))
	r = runIn(t, dir, "", nil, "init")
	if r.code != 0 || !strings.Contains(r.out, "already exists") {
		t.Fatalf("second init: %s", r)
	}
	again, _ := os.ReadFile(filepath.Join(dir, ".tavern", "tavern.md"))
	if string(again) != string(cfg) {
		t.Fatalf("second init rewrote tavern.md")
	}
	if _, err := os.Stat(filepath.Join(dir, ".tavern", "agents")); err != nil {
		t.Fatalf("second init did not restore agents/: %v", err)
	}
	// --dir names the store; --name sets the project name; commands in a
	// subdirectory find the store upward.
	other := t.TempDir()
	r = runIn(t, dir, "", nil, "--dir", filepath.Join(other, ".tavern"), "init", "--name", "proj")
	if r.code != 0 {
		t.Fatalf("init --dir: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(other, ".tavern", "tavern.md")); !strings.Contains(string(b), "name: proj\n") {
		t.Fatalf("init --name: tavern.md is\n%s", b)
	}
	sub := filepath.Join(dir, "src", "deep")
	os.MkdirAll(sub, 0o755)
	if r := runIn(t, sub, "", nil, "ls", "agents"); r.code != 0 {
		t.Fatalf("ls from a subdirectory: %s", r)
	}
	if r := runIn(t, sub, "", []string{"TAVERN_DIR=" + filepath.Join(other, ".tavern")}, "show", "config/tavern"); r.code != 0 || !strings.Contains(r.out, "name: proj") {
		t.Fatalf("TAVERN_DIR: %s", r)
	}
	// No store anywhere: exit 3 with a hint.
	if r := runIn(t, t.TempDir(), "", nil, "ls", "agents"); r.code != 3 || !strings.Contains(r.err, "tavern init") {
		t.Fatalf("ls without a store: %s", r)
	}
}

func TestNew(t *testing.T) {
	p := newProject(t)
	out := p.ok("new", "agent", "alice", "role=reviewer", "spawns=3", "queues=[build, test]", `note="007"`, "title=Fix #12")
	if strings.TrimSpace(out) != "agents/alice.md" {
		t.Fatalf("new printed %q, want the path", out)
	}
	f := p.fields("agents/alice")
	want := map[string]any{"schema_version": 1.0, "name": "alice", "role": "reviewer", "state": "idle", "spawns": 3.0,
		"queues": []any{"build", "test"}, "note": "007", "title": "Fix #12"}
	for k, v := range want {
		if !jsonEqual(f[k], v) {
			t.Errorf("field %s = %#v, want %#v", k, f[k], v)
		}
	}
	if id, _ := f["id"].(string); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-`).MatchString(id) {
		t.Errorf("id %q is not a UUIDv7", id)
	}
	for _, k := range []string{"created", "updated"} {
		if _, err := time.Parse(time.RFC3339, f[k].(string)); err != nil {
			t.Errorf("%s = %v: %v", k, f[k], err)
		}
	}
	before := p.read("agents/alice.md")

	// Exists: exit 4 (conflict), nothing written.
	r := p.fails(4, "new", "agent", "alice", "role=other")
	if !strings.Contains(r.err, "agents/alice.md") {
		t.Errorf("exists error does not name the path: %s", r.err)
	}
	if p.read("agents/alice.md") != before {
		t.Fatal("new over an existing document changed it")
	}
	// Invalid: exit 5, nothing written, error names field and position.
	r = p.fails(5, "new", "agent", "bob", "state=bogus")
	if !strings.Contains(r.err, "state") || !regexp.MustCompile(`agents/bob\.md:\d+:\d+`).MatchString(r.err) || p.exists("agents/bob.md") {
		t.Fatalf("invalid new: %s (file exists: %v)", r, p.exists("agents/bob.md"))
	}
	p.fails(5, "new", "commitment", "alice/c1") // required description/assertion missing
	// Usage errors: exit 2.
	p.fails(2, "new", "agent", "../evil")
	p.fails(2, "new", "agent", ".hidden")
	p.fails(2, "new", "agent", "a/b")
	p.fails(2, "new", "bogus", "x")
	p.fails(2, "new", "agent")
	p.fails(2, "new", "agent", "carol", "notanassignment")
	// Singular and plural kinds; --body FILE and -.
	os.WriteFile(filepath.Join(p.dir, "body.md"), []byte("# Reviewer\n\nReview carefully.\n"), 0o644)
	p.ok("new", "constitutions", "reviewer", "--body", "body.md")
	if got := p.read("constitutions/reviewer.md"); !strings.HasSuffix(got, "---\n\n# Reviewer\n\nReview carefully.\n") {
		t.Fatalf("--body FILE: got\n%s", got)
	}
	r = p.runStdin("from stdin\n", "new", "memory", "alice/note-1", "topic=parser", "--body", "-", "--json")
	if r.code != 0 {
		t.Fatal(r)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.out), &obj); err != nil || obj["body"] != "\nfrom stdin\n" || obj["kind"] != "memory" || obj["name"] != "alice/note-1" {
		t.Fatalf("new --json --body -: %v\n%s", err, r.out)
	}
	p.fails(3, "new", "agent", "dave", "--body", "no-such-file.md")
	// An item goes to pending/ by default.
	p.ok("new", "item", "build/t1", "title=first")
	if !p.exists("queues/build/pending/t1.md") {
		t.Fatal("new item did not land in pending/")
	}
}

// jsonEqual compares decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestShow(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice", "role=reviewer")
	file := p.read("agents/alice.md")
	abs := p.path("agents/alice.md")
	for _, ref := range []string{"agents/alice", "agent/alice", "agents/alice.md", "AGENTS/alice", ".tavern/agents/alice.md", abs} {
		if got := p.ok("show", ref); got != file {
			t.Errorf("show %s printed\n%s\nwant the file\n%s", ref, got, file)
		}
	}
	obj := p.showJSON("agents/alice")
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range []string{"path", "kind", "name", "rev", "fields", "body"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("show --json lacks %q (has %q)", k, keys)
		}
	}
	if obj["path"] != abs || obj["kind"] != "agent" || obj["name"] != "alice" || obj["rev"] != docstore.Revision([]byte(file)) || obj["body"] != "\n" {
		t.Errorf("show --json: %v", obj)
	}
	// Not found: 3, and the --json error object on stderr.
	r := p.fails(3, "show", "agents/nobody")
	if strings.Count(strings.TrimSpace(r.err), "\n") != 0 || !strings.Contains(r.err, "agents/nobody.md") {
		t.Errorf("not found error: %q", r.err)
	}
	e := jsonErr(t, p.fails(3, "show", "agents/nobody", "--json"))
	if e["path"] != "agents/nobody.md" || e["line"] != nil {
		t.Errorf("JSON error %v", e)
	}
	// A broken document: 5, with line and column.
	p.write("agents/broken.md", "---\nname: broken\nrole: [unclosed\n---\n")
	e = jsonErr(t, p.fails(5, "show", "agents/broken", "--json"))
	if e["path"] != "agents/broken.md" || e["line"] == nil || e["col"] == nil {
		t.Errorf("parse error as JSON: %v", e)
	}
	// An invalid (but parsable) document is shown, with a warning.
	p.write("agents/odd.md", "---\nname: odd\nstate: bogus\n---\n")
	r = p.run("show", "agents/odd")
	if r.code != 0 || !strings.Contains(r.out, "state: bogus") || !strings.Contains(r.err, "agents/odd.md:3:8: state") {
		t.Errorf("show of an invalid document: %s", r)
	}
	if obj := p.showJSON("agents/odd"); obj["valid"] != false {
		t.Errorf("show --json of an invalid document: valid = %v", obj["valid"])
	}
	p.fails(2, "show", "bogus/x")
	p.fails(2, "show")
	// A glob character is a name, not a pattern.
	p.fails(3, "show", "agents/*")
}

func TestLs(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice", "role=reviewer", "spawns=3", "queues=[go, docs]", "title=Parser Work")
	p.ok("new", "agent", "bob", "state=working", "role=builder", "spawns=10")
	p.ok("new", "agent", "carol", "state=done", "spawns=0", "updated=2020-01-01T00:00:00Z")
	names := func(args ...string) []string {
		t.Helper()
		var objs []map[string]any
		out := p.ok(append([]string{"ls", "agents", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &objs); err != nil {
			t.Fatalf("ls %q --json: %v\n%s", args, err, out)
		}
		var ns []string
		for _, o := range objs {
			ns = append(ns, o["name"].(string))
		}
		return ns
	}
	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{"alice", "bob", "carol"}},
		{[]string{"--where", "state=idle"}, []string{"alice"}},
		{[]string{"--where", "state!=idle"}, []string{"bob", "carol"}},
		{[]string{"--where", "spawns<5"}, []string{"alice", "carol"}},
		{[]string{"--where", "spawns<=3"}, []string{"alice", "carol"}},
		{[]string{"--where", "spawns>3"}, []string{"bob"}},
		{[]string{"--where", "spawns>=3"}, []string{"alice", "bob"}},
		{[]string{"--where", "spawns>=10"}, []string{"bob"}},
		{[]string{"--where", "role~BUILD"}, []string{"bob"}},
		{[]string{"--where", "title?"}, []string{"alice"}},
		{[]string{"--where", "queues=go"}, []string{"alice"}},
		{[]string{"--where", "queues~doc"}, []string{"alice"}},
		{[]string{"--where", "updated<2021-01-01T00:00:00Z"}, []string{"carol"}},
		{[]string{"-w", "spawns>=0", "-w", "state!=done"}, []string{"alice", "bob"}},
		{[]string{"--where", "state=nobody"}, nil},
		{[]string{"--sort", "spawns"}, []string{"carol", "alice", "bob"}},
		{[]string{"--sort", "-spawns"}, []string{"bob", "alice", "carol"}},
		{[]string{"--sort", "title"}, []string{"alice", "bob", "carol"}}, // missing values last, stable
		{[]string{"--sort", "-spawns", "--limit", "2"}, []string{"bob", "alice"}},
		{[]string{"--where", "spawns<100", "--sort", "name", "--limit", "1"}, []string{"alice"}},
	}
	for _, tt := range tests {
		if got := names(tt.args...); !slices.Equal(got, tt.want) {
			t.Errorf("ls agents %q = %q, want %q", tt.args, got, tt.want)
		}
	}
	// JSON shape: no body unless --body; singular kind works too.
	var objs []map[string]any
	json.Unmarshal([]byte(p.ok("ls", "agent", "--json")), &objs)
	if len(objs) != 3 {
		t.Fatalf("ls agent --json: %d objects", len(objs))
	}
	for _, k := range []string{"path", "kind", "name", "rev", "fields"} {
		if _, ok := objs[0][k]; !ok {
			t.Errorf("ls --json object lacks %q", k)
		}
	}
	if _, ok := objs[0]["body"]; ok {
		t.Error("ls --json includes body without --body")
	}
	json.Unmarshal([]byte(p.ok("ls", "agents", "--json", "--body")), &objs)
	if objs[0]["body"] != "\n" {
		t.Errorf("ls --json --body: body = %#v", objs[0]["body"])
	}
	if out := p.ok("ls", "agents", "--where", "state=nobody", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("empty ls --json printed %q, want []", out)
	}
	// Text table.
	out := p.ok("ls", "agents", "--sort", "name")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "alice") {
		t.Errorf("ls table:\n%s", out)
	}
	// Errors.
	p.fails(2, "ls", "agents", "--where", "nooperator")
	p.fails(2, "ls", "agents", "--where", "=x")
	p.fails(2, "ls", "bogus")
	p.fails(2, "ls", "agents", "--limit", "many")
	p.fails(2, "ls")
	// A broken file: listed on stderr (JSON object under --json), the rest
	// still listed, exit 0.
	p.write("agents/zed.md", "---\nname: [\n---\n")
	r := p.run("ls", "agents", "--json")
	if r.code != 0 || len(objsOf(t, r.out)) != 3 {
		t.Fatalf("ls with a broken file: %s", r)
	}
	if e := jsonErr(t, r); e["path"] != "agents/zed.md" || e["line"] == nil {
		t.Errorf("ls --json warning: %v", e)
	}
}

func objsOf(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	if err := json.Unmarshal([]byte(out), &objs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return objs
}

func TestSet(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice", "role=reviewer")
	p.write("agents/alice.md", strings.Replace(p.read("agents/alice.md"), "role: reviewer\n", "role: reviewer   # who reviews\nnote: 'quoted'\n", 1))
	before := p.read("agents/alice.md")
	p.ok("set", "agents/alice", "spawns=4")
	after := p.read("agents/alice.md")
	if ch, ok := changedLines(before, after); !ok || len(ch) != 1 || ch[0] != "spawns: 4\n" {
		t.Fatalf("set spawns=4 changed %q (same line count %v)", ch, ok)
	}
	p.ok("set", "agents/alice", "role=builder")
	if ch, _ := changedLines(after, p.read("agents/alice.md")); len(ch) != 1 || ch[0] != "role: builder   # who reviews\n" {
		t.Fatalf("set role kept the comment? changed %q", ch)
	}
	// Typing.
	p.ok("set", "agents/alice", "n=3", "tags=[a, b]", `s="3"`, "note=plain", "title=Fix #12", "m={k: v}", "empty=")
	f := p.fields("agents/alice")
	for k, v := range map[string]any{"n": 3.0, "tags": []any{"a", "b"}, "s": "3", "note": "plain", "title": "Fix #12", "m": map[string]any{"k": "v"}, "empty": ""} {
		if !jsonEqual(f[k], v) {
			t.Errorf("set %s: got %#v, want %#v", k, f[k], v)
		}
	}
	if !strings.Contains(p.read("agents/alice.md"), "note: 'plain'\n") {
		t.Errorf("set note dropped the file's quoting style:\n%s", p.read("agents/alice.md"))
	}
	// --if-rev: stale → 4 and unchanged; current → ok.
	rev := p.showJSON("agents/alice")["rev"].(string)
	p.ok("set", "agents/alice", "spawns=5", "--if-rev", rev)
	cur := p.read("agents/alice.md")
	r := p.fails(4, "set", "agents/alice", "spawns=6", "--if-rev", rev)
	if !strings.Contains(r.err, "agents/alice.md") || p.read("agents/alice.md") != cur {
		t.Fatalf("stale --if-rev: %s", r)
	}
	if e := jsonErr(t, p.fails(4, "set", "agents/alice", "spawns=6", "--if-rev", rev, "--json")); e["path"] != "agents/alice.md" {
		t.Errorf("conflict JSON error: %v", e)
	}
	// Invalid → 5 and unchanged; missing → 3; usage → 2.
	p.fails(5, "set", "agents/alice", "state=bogus")
	p.fails(5, "set", "agents/alice", "spawns=-1")
	p.fails(5, "set", "agents/alice", "spawns=many")
	if p.read("agents/alice.md") != cur {
		t.Fatal("an invalid set changed the file")
	}
	p.fails(3, "set", "agents/nobody", "x=1")
	p.fails(2, "set", "agents/alice")
	p.fails(2, "set", "agents/alice", "novalue")
	// --unset removes the field's lines only.
	p.ok("set", "agents/alice", "--unset", "tags")
	if strings.Contains(p.read("agents/alice.md"), "tags:") {
		t.Fatal("--unset left the field")
	}
	// --json prints the document without body.
	var obj map[string]any
	if err := json.Unmarshal([]byte(p.ok("set", "agents/alice", "spawns=7", "--json")), &obj); err != nil || obj["rev"] == rev || obj["body"] != nil {
		t.Fatalf("set --json: %v %v", err, obj)
	}
}

// `tavern set` of one field on each golden document changes one line.
func TestSetGoldenOneLineDiff(t *testing.T) {
	p := newProject(t)
	files, _ := filepath.Glob("../../docstore/testdata/roundtrip/*.md")
	if len(files) < 10 {
		t.Fatalf("found %d golden documents", len(files))
	}
	tested := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := docstore.Parse(f, data)
		if err != nil {
			t.Fatal(err)
		}
		// Notes have almost no schema, so any golden document is valid as one.
		id := strings.TrimSuffix(filepath.Base(f), ".md")
		rel := "notes/golden/" + id + ".md"
		p.write(rel, string(data))
		for _, key := range d.Keys() {
			v, k := d.Get(key), d.Front().Content[slices.Index(d.Keys(), key)*2]
			// (field=value arguments cannot name a key with a space or "=".)
			if v.Kind != 8 || v.Line != k.Line || strings.Contains(v.Value, "\n") || key == "schema_version" || strings.ContainsAny(key, " \t=") ||
				v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				continue
			}
			before := p.read(rel)
			p.ok("set", "notes/golden/"+id, key+"=changed")
			after := p.read(rel)
			ch, ok := changedLines(before, after)
			if !ok || len(ch) != 1 || !strings.Contains(ch[0], "changed") {
				t.Errorf("%s: set %s changed %q (same line count %v)", id, key, ch, ok)
			}
			tested++
		}
	}
	if tested < 30 {
		t.Fatalf("only %d one-line sets tested", tested)
	}
}

func TestEdit(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice", "role=reviewer")
	editor := func(script string) []string {
		path := filepath.Join(t.TempDir(), "editor.sh")
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return []string{"EDITOR=" + path}
	}
	before := p.read("agents/alice.md")
	// A valid edit is saved, only the edited line changes.
	r := runIn(t, p.dir, "", editor(`sed -i 's/^role: reviewer$/role: editor/' "$1"`), "edit", "agents/alice")
	if r.code != 0 || !strings.Contains(r.out, "saved agents/alice.md") {
		t.Fatalf("valid edit: %s", r)
	}
	if ch, ok := changedLines(before, p.read("agents/alice.md")); !ok || len(ch) != 1 || ch[0] != "role: editor\n" {
		t.Fatalf("valid edit changed %q", ch)
	}
	// VISUAL wins over EDITOR.
	visual := "VISUAL=" + strings.TrimPrefix(editor(`sed -i 's/^role: editor$/role: visual/' "$1"`)[0], "EDITOR=")
	if r := runIn(t, p.dir, "", append(editor("exit 1"), visual), "edit", "agents/alice"); r.code != 0 || !strings.Contains(p.read("agents/alice.md"), "role: visual\n") {
		t.Fatalf("VISUAL: %s", r)
	}
	saved := p.read("agents/alice.md")
	// An invalid edit: errors shown, re-edit offered; "n" → exit 5, nothing saved.
	r = runIn(t, p.dir, "n\n", editor(`sed -i 's/^state: idle$/state: bogus/' "$1"`), "edit", "agents/alice")
	if r.code != 5 || !strings.Contains(r.err, "state") || !regexp.MustCompile(`agents/alice\.md:\d+:\d+`).MatchString(r.err) ||
		!strings.Contains(r.err, "Edit again?") || !strings.Contains(r.err, "nothing saved") {
		t.Fatalf("invalid edit answered n: %s", r)
	}
	if p.read("agents/alice.md") != saved {
		t.Fatal("invalid edit was saved")
	}
	// Broken YAML, no answer (EOF) → exit 5, nothing saved.
	r = runIn(t, p.dir, "", editor(`printf -- '---\nname: [\n---\n' > "$1"`), "edit", "agents/alice")
	if r.code != 5 || p.read("agents/alice.md") != saved {
		t.Fatalf("broken edit at EOF: %s", r)
	}
	// Invalid, re-edit accepted, then valid: saved.
	counter := filepath.Join(t.TempDir(), "n")
	script := `if [ -f ` + counter + ` ]; then sed -i 's/^state: bogus$/state: working/' "$1"; else touch ` + counter + `; sed -i 's/^state: idle$/state: bogus/' "$1"; fi`
	r = runIn(t, p.dir, "y\n", editor(script), "edit", "agents/alice")
	if r.code != 0 || !strings.Contains(r.err, "Edit again?") || !strings.Contains(p.read("agents/alice.md"), "state: working\n") {
		t.Fatalf("re-edit: %s\n%s", r, p.read("agents/alice.md"))
	}
	// No change: exit 0, nothing written.
	saved = p.read("agents/alice.md")
	if r := runIn(t, p.dir, "", editor("true"), "edit", "agents/alice"); r.code != 0 || !strings.Contains(r.out, "no changes") || p.read("agents/alice.md") != saved {
		t.Fatalf("unchanged edit: %s", r)
	}
	// A failing editor: exit 1.
	if r := runIn(t, p.dir, "", editor("exit 3"), "edit", "agents/alice"); r.code != 1 {
		t.Fatalf("failing editor: %s", r)
	}
	// Someone else writes while the editor runs: exit 4, copy kept.
	r = runIn(t, p.dir, "", editor(`sed -i 's/^role: visual$/role: mine/' "$1"; `+builtBin+` set agents/alice spawns=9`), "edit", "agents/alice")
	if r.code != 4 || !strings.Contains(r.err, "your edit is kept in") {
		t.Fatalf("concurrent edit: %s", r)
	}
	if r := runIn(t, p.dir, "", editor("true"), "edit", "agents/nobody"); r.code != 3 {
		t.Fatalf("edit of a missing document: %s", r)
	}
}

func TestRm(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice")
	p.ok("new", "agent", "bob")
	data := p.read("agents/alice.md")
	if out := p.ok("rm", "agents/alice"); !strings.Contains(out, "agents/alice.md") {
		t.Errorf("rm printed %q", out)
	}
	if p.exists("agents/alice.md") {
		t.Fatal("rm left the file")
	}
	trash, _ := filepath.Glob(p.path(".trash/*agents__alice.md"))
	if len(trash) != 1 {
		t.Fatalf("trash holds %q", trash)
	}
	if b, _ := os.ReadFile(trash[0]); string(b) != data {
		t.Fatal("trashed copy differs")
	}
	p.fails(3, "rm", "agents/alice")
	// A glob is not a pattern: with one agent left, rm agents/* must not
	// remove it.
	p.fails(3, "rm", "agents/*")
	if !p.exists("agents/bob.md") {
		t.Fatal("rm agents/* removed bob")
	}
	p.fails(2, "rm")
	p.fails(2, "rm", "agents/../tavern")
}

func TestCheck(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice", "custom=1")
	p.ok("new", "agent", "bob")
	// Engine-private leftovers (a killed writer's temp file, trashed or
	// lock files) are not documents: never listed, never checked.
	p.write(".tmp/4242-7.tmp", "---\nname: torn")
	p.write(".trash/20260101T000000.000000000-agents__x.md", "---\nbroken: [\n---\n")
	p.write(".locks/docs/agents/alice.md.lock", "")
	if out := p.ok("ls", "agents"); strings.Contains(out, "4242") || strings.Count(out, "\n") != 3 {
		t.Fatalf("ls lists engine-private files:\n%s", out)
	}
	if out := p.ok("check"); !strings.Contains(out, "all valid") {
		t.Fatalf("check of a valid store printed %q", out)
	}
	r := p.fails(5, "check", "--strict")
	if !strings.Contains(r.err, "agents/alice.md:") || !strings.Contains(r.err, "custom: unknown field") {
		t.Fatalf("check --strict: %s", r)
	}
	p.write("agents/carol.md", "---\nname: carol\nstate: bogus\nspawns: many\n---\n")
	p.write("agents/dave.md", "---\nname: dave\nrole: [x\n---\n")
	p.write("widgets/w.md", "---\na: 1\n---\n")
	r = p.fails(5, "check")
	for _, want := range []string{"agents/carol.md:3:8: state:", "agents/carol.md:4:9: spawns:", "agents/dave.md:", "widgets/w.md:1:1: not a document of any known kind"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.err)
		}
	}
	if strings.Contains(r.err, "alice") || strings.Contains(r.err, "bob") {
		t.Errorf("check reported a valid document:\n%s", r.err)
	}
	if !strings.Contains(r.err, "documents checked, 4 problem(s)") {
		t.Errorf("check summary:\n%s", r.err)
	}
	// --json: all problems with positions.
	r = p.fails(5, "check", "--json")
	var rep struct {
		Checked  int
		Problems []struct {
			Path, Error, Field string
			Line, Col          int
		}
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, r.out)
	}
	if rep.Checked < 6 || len(rep.Problems) != 4 {
		t.Fatalf("check --json: %+v", rep)
	}
	for _, pr := range rep.Problems {
		if pr.Path == "" || pr.Line == 0 || pr.Error == "" {
			t.Errorf("problem without path/line: %+v", pr)
		}
	}
	// Paths: one file, one directory.
	if r := p.run("check", ".tavern/agents/bob.md"); r.code != 0 || !strings.Contains(r.out, "1 documents checked") {
		t.Errorf("check FILE: %s", r)
	}
	if r := p.run("check", ".tavern/agents"); r.code != 5 || strings.Contains(r.err, "widgets") {
		t.Errorf("check DIR: %s", r)
	}
	p.fails(3, "check", "no-such-file.md")
}

func TestSchema(t *testing.T) {
	p := newProject(t)
	out := p.ok("schema")
	for _, k := range schema.Kinds() {
		if !strings.Contains(out, k.Name) || !strings.Contains(out, ".tavern/"+k.Pattern) {
			t.Errorf("schema list lacks %s", k.Name)
		}
	}
	out = p.ok("schema", "agents")
	for _, want := range []string{"agent (agents)", "state", "idle|working|waiting|verifying|done|failed", "spawns"} {
		if !strings.Contains(out, want) {
			t.Errorf("schema agents lacks %q:\n%s", want, out)
		}
	}
	var kinds []map[string]any
	if err := json.Unmarshal([]byte(p.ok("schema", "--json")), &kinds); err != nil || len(kinds) != len(schema.Kinds()) {
		t.Fatalf("schema --json: %v, %d kinds", err, len(kinds))
	}
	p.fails(2, "schema", "bogus")
	p.fails(2, "schema", "--json-schema")
	p.fails(2, "schema", "a", "b")

	// Every kind's --json-schema is a valid draft 2020-12 JSON Schema.
	compiled := map[string]*jsonschema.Schema{}
	for _, k := range schema.Kinds() {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(p.ok("schema", "--json-schema", k.Name)))
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		url := "mem://" + k.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url) // validates against the 2020-12 metaschema
		if err != nil {
			t.Fatalf("--json-schema %s is not a valid JSON Schema: %v", k.Name, err)
		}
		compiled[k.Name] = s
	}
	// And it agrees with tavern: a document tavern made validates, one
	// tavern rejects does not.
	p.ok("new", "agent", "alice", "role=reviewer", "queues=[a, b]", "spawns=2")
	if err := compiled["agent"].Validate(jsonRoundTrip(t, p.fields("agents/alice"))); err != nil {
		t.Errorf("a valid agent fails its JSON Schema: %v", err)
	}
	p.write("agents/bad.md", "---\nschema_version: 1\nstate: bogus\nspawns: -1\n---\n")
	if err := compiled["agent"].Validate(jsonRoundTrip(t, p.fields("agents/bad"))); err == nil {
		t.Error("an invalid agent passes its JSON Schema")
	}
}

func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, _ := json.Marshal(v)
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrate(t *testing.T) {
	p := newProject(t)
	v0 := "---\n# written before schema_version existed\nname: old\nrole: reviewer\nstatus: working   # the old name\n---\n\nBody stays.\n"
	p.write("agents/old.md", v0)
	p.ok("new", "agent", "current")
	current := p.read("agents/current.md")
	st, _ := os.Stat(p.path("agents/old.md"))

	// Read paths see the migrated view.
	if got := objsOf(t, p.ok("ls", "agents", "--where", "state=working", "--json")); len(got) != 1 || got[0]["name"] != "old" {
		t.Fatalf("ls --where on a v0 document: %v", got)
	}
	// --dry-run: a diff, nothing written.
	out := p.ok("migrate", "--dry-run")
	for _, want := range []string{"--- a/agents/old.md", "+++ b/agents/old.md", "-status: working   # the old name", "+state: working   # the old name", "+schema_version: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "current") {
		t.Errorf("dry-run lists a current document:\n%s", out)
	}
	st2, _ := os.Stat(p.path("agents/old.md"))
	if p.read("agents/old.md") != v0 || !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("migrate --dry-run wrote")
	}
	// Real run: only the changed lines.
	out = p.ok("migrate")
	if !strings.Contains(out, "migrated agents/old.md") {
		t.Errorf("migrate printed %q", out)
	}
	want := "---\n# written before schema_version existed\nname: old\nrole: reviewer\nstate: working   # the old name\nschema_version: 1\n---\n\nBody stays.\n"
	if got := p.read("agents/old.md"); got != want {
		t.Fatalf("migrated file:\n%s\nwant:\n%s", got, want)
	}
	if p.read("agents/current.md") != current {
		t.Fatal("migrate rewrote a current document")
	}
	if out := p.ok("migrate"); !strings.Contains(out, "all documents are at the current schema version") {
		t.Errorf("second migrate: %q", out)
	}
	// One document invalid after migration: left as is, reported, the
	// others migrated, exit 5.
	bad := "---\nname: bad\nstatus: sleeping\n---\n"
	p.write("agents/bad.md", bad)
	p.write("agents/zoe.md", "---\nname: zoe\nstatus: idle\n---\n")
	r := p.fails(5, "migrate")
	if !strings.Contains(r.err, "agents/bad.md") || p.read("agents/bad.md") != bad || !strings.Contains(p.read("agents/zoe.md"), "state: idle\nschema_version: 1\n") {
		t.Fatalf("migrate with an invalid document: %s\n%s", r, p.read("agents/zoe.md"))
	}
	var changed []map[string]string
	json.Unmarshal([]byte(p.run("migrate", "--dry-run", "--json").out), &changed)
	if len(changed) != 1 || changed[0]["path"] != "agents/bad.md" || !strings.Contains(changed[0]["diff"], "+state: sleeping") {
		t.Errorf("migrate --dry-run --json: %v", changed)
	}
}

func TestExitCodes(t *testing.T) {
	p := newProject(t)
	p.ok("new", "agent", "alice")
	tests := []struct {
		code int
		args []string
	}{
		{0, []string{"show", "agents/alice"}},
		{1, []string{"edit", "agents/alice"}}, // EDITOR=false below
		{2, []string{"bogus"}},
		{2, []string{"ls", "agents", "--nosuchflag"}},
		{2, []string{"show", "agents/../../etc/passwd"}},
		{3, []string{"show", "agents/nobody"}},
		{3, []string{"ls", "agents", "--dir", t.TempDir()}},
		{4, []string{"set", "agents/alice", "x=1", "--if-rev", "0000000000000000"}},
		{4, []string{"new", "agent", "alice"}},
		{5, []string{"set", "agents/alice", "state=bogus"}},
	}
	for _, tt := range tests {
		r := runIn(t, p.dir, "", []string{"EDITOR=false"}, tt.args...)
		if r.code != tt.code {
			t.Errorf("tavern %s: exit %d, want %d\n%s", strings.Join(tt.args, " "), r.code, tt.code, r)
			continue
		}
		if tt.code == 0 {
			continue
		}
		if lines := strings.Split(strings.TrimSpace(r.err), "\n"); lines[0] == "" || !strings.HasPrefix(lines[0], "tavern: ") && !strings.Contains(lines[0], "Incorrect Usage") {
			t.Errorf("tavern %s: stderr does not start with an error line: %q", strings.Join(tt.args, " "), r.err)
		}
		if tt.args[0] == "edit" || tt.args[0] == "bogus" {
			continue // edit has no --json; an unknown command is reported by the CLI library
		}
		// Under --json the error is one JSON object on stderr.
		jr := runIn(t, p.dir, "", []string{"EDITOR=false"}, append(tt.args, "--json")...)
		if jr.code != tt.code {
			t.Errorf("tavern %s --json: exit %d, want %d", strings.Join(tt.args, " "), jr.code, tt.code)
			continue
		}
		if e := jsonErr(t, jr); e["code"] != float64(tt.code) {
			t.Errorf("tavern %s --json: code %v, want %d", strings.Join(tt.args, " "), e["code"], tt.code)
		}
	}
}
