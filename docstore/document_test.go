package docstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func readRoundtrip(tb testing.TB) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob("testdata/roundtrip/*.md")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no golden documents: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for name, data := range readRoundtrip(t) {
		t.Run(name, func(t *testing.T) {
			d, err := Parse(name, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := d.Bytes(); !bytes.Equal(got, data) {
				t.Fatalf("render(parse(x)) != x\ngot:\n%q\nwant:\n%q", got, data)
			}
		})
	}
}

// diffLines returns the lines of a that differ from b, when both have the
// same number of lines; ok is false otherwise.
func diffLines(a, b []byte) (changed []string, ok bool) {
	la, lb := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	if len(la) != len(lb) {
		return nil, false
	}
	for i := range la {
		if la[i] != lb[i] {
			changed = append(changed, lb[i])
		}
	}
	return changed, true
}

// Setting any scalar field changes exactly its own lines: one line when
// the value sits on the key's line, else the entry's lines become one.
// Every other line, comments included, is untouched, and every other
// field keeps its value.
func TestSetOneLineDiff(t *testing.T) {
	for name, data := range readRoundtrip(t) {
		d, err := Parse(name, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range d.Keys() {
			v := d.Get(key)
			if v.Kind != yaml.ScalarNode || strings.Contains(v.Value, "\n") || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				continue
			}
			t.Run(name+"/"+key, func(t *testing.T) {
				c, _ := Parse(name, data)
				if err := c.SetYAML(key, "changed-value"); err != nil {
					t.Fatal(err)
				}
				got := c.Bytes()
				if v.Line == keyNode(d, key).Line {
					changed, ok := diffLines(data, got)
					if !ok || len(changed) != 1 || !strings.Contains(changed[0], "changed-value") {
						t.Fatalf("set %s: want exactly one changed line, got %q (same line count: %v)\n%s", key, changed, ok, got)
					}
				} else {
					// queue: # comment
					//   build
					lines := strings.SplitAfter(string(data), "\n")
					first := keyNode(d, key).Line // 1-based line of the key in the file (after the opening fence)
					before := strings.Join(lines[:first], "")
					after := strings.Join(lines[v.Line+1:], "")
					if !strings.HasPrefix(string(got), before) || !strings.HasSuffix(string(got), after) ||
						strings.Count(string(got), "\n") != strings.Count(string(data), "\n")-(v.Line-first+1)+1 {
						t.Fatalf("set %s: lines outside the entry changed:\n%s", key, got)
					}
				}
				if err := checkOtherFields(d, c, key); err != "" {
					t.Fatal(err)
				}
				r, err := Parse(name, got)
				if err != nil {
					t.Fatalf("result does not parse: %v", err)
				}
				if r.String(key) != "changed-value" {
					t.Fatalf("after set, %s = %q, want changed-value", key, r.String(key))
				}
			})
		}
	}
}

func keyNode(d *Doc, key string) *yaml.Node {
	return d.Front().Content[d.index(key)]
}

// checkOtherFields reports fields other than key whose value changed
// between a and b, unless key's value is anchored (aliases follow it).
func checkOtherFields(a, b *Doc, key string) string {
	if a.Get(key).Anchor != "" {
		return ""
	}
	fa, fb := a.Fields(), b.Fields()
	delete(fa, key)
	delete(fb, key)
	if !reflect.DeepEqual(fa, fb) {
		return fmt.Sprintf("other fields changed:\n%v\n%v", fa, fb)
	}
	if !slices.Equal(a.Keys(), b.Keys()) {
		return fmt.Sprintf("key order changed: %q, want %q", b.Keys(), a.Keys())
	}
	return ""
}

func TestSetGolden(t *testing.T) {
	tests := []struct {
		file, key, value, want string
	}{
		{"comments.md", "name", "bob", "name: bob   # the unique name\n"},
		{"quoting.md", "title", `"new: title"`, "title: 'new: title'\n"},
		{"quoting.md", "desc", "plain", "desc: \"plain\"\n"},
		{"quoting.md", "priority", "7", "priority: 7\n"},
		{"crlf.md", "spawns", "2", "spawns: 2\r\n"},
		{"unicode.md", "title", "ascii", "title: \"ascii\"   # comment after unicode\n"},
	}
	docs := readRoundtrip(t)
	for _, tt := range tests {
		d, err := Parse(tt.file, docs[tt.file])
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetYAML(tt.key, tt.value); err != nil {
			t.Fatal(err)
		}
		changed, ok := diffLines(docs[tt.file], d.Bytes())
		if !ok || len(changed) != 1 || changed[0] != tt.want {
			t.Errorf("%s: set %s=%s: got changed lines %q, want [%q]", tt.file, tt.key, tt.value, changed, tt.want)
		}
	}
}

func TestSetMultiLineAndNew(t *testing.T) {
	docs := readRoundtrip(t)
	d, _ := Parse("quoting.md", docs["quoting.md"])
	if err := d.SetYAML("tags", "[one, two]"); err != nil {
		t.Fatal(err)
	}
	if err := d.SetYAML("multi", "single"); err != nil {
		t.Fatal(err)
	}
	if err := d.SetYAML("added", "3"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete("nested"); err != nil {
		t.Fatal(err)
	}
	got := string(d.Bytes())
	want := `---
title: 'single quoted: with colon'
desc: "double \"quoted\" text"
plain: just words here
number_as_string: "42"
tags: [one, two]
multi: single
folded: >
  folded text
  continues
priority: 2
added: 3
---
Body without blank line.
`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if n, ok := d.Int("added"); !ok || n != 3 {
		t.Fatalf("Int(added) = %d, %v; want 3, true", n, ok)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, data string
		line       int
		msg        string
	}{
		{"nofront", "just text\n", 1, "missing frontmatter"},
		{"unclosed", "---\nname: x\nbody\n", 1, "missing closing"},
		{"badyaml", "---\nname: x\nrole: [unclosed\n---\n", -1, "frontmatter"}, // yaml.v3 reports a nearby line
		{"list", "---\n- a\n- b\n---\n", 2, "must be a mapping"},
		{"nul", "---\nname: \x00\n---\n", 2, "binary"},
		{"badutf8", "---\nname: \xff\xfe\n---\n", 2, "UTF-8"},
		{"tab", "---\nname: x\n\tbad: y\n---\n", 3, "frontmatter"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.name, []byte(tt.data))
		var pe *ParseError
		if !errorsAs(err, &pe) {
			t.Errorf("%s: got %v, want *ParseError", tt.name, err)
			continue
		}
		if (tt.line > 0 && pe.Line != tt.line) || pe.Line == 0 || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("%s: got %s, want line %d containing %q", tt.name, pe, tt.line, tt.msg)
		}
	}
}

// EqualBytes agrees with comparing Bytes, for the document itself and for
// data that differs anywhere (head, frontmatter, fence, body, length).
func TestEqualBytes(t *testing.T) {
	src := "---\ntitle: a\nn: 1\n---\nbody\n"
	d, err := Parse("notes/x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{
		src, "", "---\n", src[:len(src)-1], src + "x",
		"--- \ntitle: a\nn: 1\n---\nbody\n", "---\ntitle: b\nn: 1\n---\nbody\n",
		"---\ntitle: a\nn: 1\n...\nbody\n", "---\ntitle: a\nn: 1\n---\nbodY\n",
	} {
		if got, want := d.EqualBytes([]byte(data)), string(d.Bytes()) == data; got != want {
			t.Errorf("EqualBytes(%q) = %v, want %v", data, got, want)
		}
	}
}

// Text leaves out the one blank line the store writes after the
// frontmatter (either line ending), and nothing of a body without it.
func TestDocText(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"---\nid: a\n---\n\nhello\n", "hello\n"},
		{"---\r\nid: a\r\n---\r\n\r\nhello\r\n", "hello\r\n"},
		{"---\nid: a\n---\nhello\n", "hello\n"},
		{"---\nid: a\n---\n\n\nhello\n", "\nhello\n"},
		{"---\nid: a\n---\n\n", ""},
	} {
		d, err := Parse("x.md", []byte(c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(d.Text()); got != c.want {
			t.Errorf("Text of %q: got %q, want %q", c.file, got, c.want)
		}
	}
}
