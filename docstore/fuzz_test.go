package docstore

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// FuzzParse feeds arbitrary bytes to the splitter and parser. Seeds: the
// golden documents (added here) and testdata/fuzz/FuzzParse (committed,
// including every crasher found so far). Properties:
//   - no panic, and an error is always a *ParseError naming the path;
//   - render(parse(x)) == x, and parse(render(d)) gives the same fields;
//   - Fields, Validate and View terminate (aliases, cycles);
//   - setting, adding and deleting a field yields a document that parses,
//     holds the new value, and keeps the other keys in order.
func FuzzParse(f *testing.F) {
	for _, data := range readRoundtrip(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.md", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Path != "f.md" || !errors.Is(err, ErrParse) {
				t.Fatalf("error %v (%T) is not a *ParseError for f.md", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		out := d.Bytes()
		if !bytes.Equal(out, data) {
			t.Fatalf("render(parse(x)) != x\n got %q\nwant %q", out, data)
		}
		r, err := Parse("f.md", out)
		if err != nil {
			t.Fatalf("re-parse of rendered document: %v", err)
		}
		if !slices.Equal(r.Keys(), d.Keys()) {
			t.Fatalf("keys after re-parse %q, want %q", r.Keys(), d.Keys())
		}
		_ = d.Fields()
		d.Kind = schema.Agent
		_ = d.Validate(true)
		_ = d.View()

		keys := d.Keys()
		if len(keys) > 4 {
			keys = keys[:4]
		}
		for _, key := range keys {
			if !validSetKey(key) {
				continue
			}
			c := d.Clone()
			if err := c.SetYAML(key, "fuzz value"); err != nil {
				if errors.Is(err, ErrUneditable) && exotic(d) {
					continue
				}
				t.Fatalf("SetYAML(%q): %v\n%q", key, err, data)
			}
			checkEdit(t, c, key, "fuzz value", d.Keys())
			c = d.Clone()
			if err := c.Set(key, 42); err != nil {
				if errors.Is(err, ErrUneditable) && exotic(d) {
					continue
				}
				t.Fatalf("Set(%q, 42): %v\n%q", key, err, data)
			}
			if n, ok := reparse(t, c).Int(key); !ok || n != 42 {
				t.Fatalf("after Set(%q, 42): Int = %d, %v\n%q", key, n, ok, c.Bytes())
			}
			c = d.Clone()
			if err := c.Delete(key); err != nil {
				if strings.Contains(err.Error(), "used by an alias") || errors.Is(err, ErrUneditable) && exotic(d) {
					continue
				}
				t.Fatalf("Delete(%q): %v\n%q", key, err, data)
			}
			if r := reparse(t, c); r.index(key) >= 0 && countKey(d.Keys(), key) == 1 {
				t.Fatalf("Delete(%q): key still there\n%q", key, c.Bytes())
			}
		}
		if d.index("fuzz_new") < 0 {
			c := d.Clone()
			if err := c.SetYAML("fuzz_new", "[a, b]"); err != nil {
				if errors.Is(err, ErrUneditable) && exotic(d) {
					return
				}
				t.Fatalf("SetYAML(new key): %v\n%q", err, data)
			}
			r := reparse(t, c)
			if got := r.Strings("fuzz_new"); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("new key = %q, want [a b]\n%q", got, c.Bytes())
			}
			if want := append(d.Keys(), "fuzz_new"); !slices.Equal(r.Keys(), want) {
				t.Fatalf("keys %q, want %q\n%q", r.Keys(), want, c.Bytes())
			}
		}
	})
}

// exotic reports YAML that yaml.v3 may not write back faithfully, where
// ErrUneditable is an acceptable answer: duplicate keys or custom tags.
func exotic(d *Doc) bool {
	var custom func(n *yaml.Node) bool
	custom = func(n *yaml.Node) bool {
		if n.Style&yaml.TaggedStyle != 0 && !strings.HasPrefix(n.Tag, "!!") {
			return true
		}
		for _, c := range n.Content {
			if custom(c) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, k := range d.Keys() {
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return custom(d.Front())
}

// validSetKey: keys that Set accepts (one line) and that Keys reports
// unambiguously (a duplicate key is reported by Validate instead).
func validSetKey(key string) bool {
	return key != "" && !strings.ContainsAny(key, "\r\n") && utf8.ValidString(key)
}

func countKey(keys []string, key string) int {
	n := 0
	for _, k := range keys {
		if k == key {
			n++
		}
	}
	return n
}

func reparse(t *testing.T, d *Doc) *Doc {
	t.Helper()
	r, err := Parse(d.Path, d.Bytes())
	if err != nil {
		t.Fatalf("edited document does not parse: %v\n%q", err, d.Bytes())
	}
	return r
}

func checkEdit(t *testing.T, d *Doc, key, want string, keys []string) {
	t.Helper()
	r := reparse(t, d)
	if got := r.String(key); got != want {
		t.Fatalf("after set, %q = %q, want %q\n%q", key, got, want, d.Bytes())
	}
	if !slices.Equal(r.Keys(), keys) {
		t.Fatalf("keys after set %q, want %q\n%q", r.Keys(), keys, d.Bytes())
	}
}

// FuzzParseWhere: no panic; a parsed condition prints (String) to an
// expression that parses to the same condition; bad input is ErrBadExpr.
func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{"state=idle", "state!=done", "priority<2", "priority<=2", "attempts>1", "attempts>=3",
		"title~parser", "lease_until?", "bookmarks.general=01J", "a=b=c", "a<=>b", " a = b ", "a=", "=b", "?", "a??", "a.=b", "a!b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := ParseWhere(expr)
		if err != nil {
			if !errors.Is(err, ErrBadExpr) {
				t.Fatalf("ParseWhere(%q): error %v is not ErrBadExpr", expr, err)
			}
			return
		}
		c2, err := ParseWhere(c.String())
		if err != nil {
			t.Fatalf("ParseWhere(%q) = %#v, but its String %q does not parse: %v", expr, c, c.String(), err)
		}
		if c2 != c {
			t.Fatalf("ParseWhere(%q) = %#v; String %q parses to %#v", expr, c, c.String(), c2)
		}
		fields := map[string]any{"a": "x", "n": 3, "l": []any{"x", 1}, "m": map[string]any{"k": "v"}}
		fields[c.Field] = c.Value
		if !strings.Contains(c.Field, ".") && (c.Op == OpEq || c.Op == OpHas || c.Op == OpExists || c.Op == OpLe || c.Op == OpGe) {
			if !c.Match(fields) {
				t.Fatalf("%#v does not match its own value", c)
			}
		}
	})
}

// FuzzPlainScalar holds plainScalar, Fields' fast path for booleans and
// integers, to yaml's own decoder: wherever it answers, Node.Decode gives
// the same value of the same type. Both the nodes yaml's parser makes of
// `k: <text>` and bare nodes carrying the text under each tag are tried.
func FuzzPlainScalar(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "-12", "007", "010", "-010", "0x1f", "0o17", "1_000", "+3",
		"9223372036854775807", "-9223372036854775808", "99999999999999999999",
		"true", "True", "TRUE", "tRUE", "yes", "on", "false", "no", "1.5", ".inf", "!!int 3", "'3'", "\"true\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		check := func(n *yaml.Node) {
			got, ok := plainScalar(n)
			if !ok {
				return
			}
			var want any
			if err := n.Decode(&want); err != nil {
				t.Fatalf("plainScalar(%s %q, style %v) = %#v, Decode fails: %v", n.Tag, n.Value, n.Style, got, err)
			}
			if got != want {
				t.Fatalf("plainScalar(%s %q, style %v) = %#v (%T), Decode gives %#v (%T)", n.Tag, n.Value, n.Style, got, got, want, want)
			}
		}
		var doc yaml.Node
		if yaml.Unmarshal([]byte("k: "+text), &doc) == nil {
			var walk func(*yaml.Node)
			walk = func(n *yaml.Node) {
				if n.Kind == yaml.ScalarNode {
					check(n)
				}
				for _, c := range n.Content {
					walk(c)
				}
			}
			walk(&doc)
		}
		for _, tag := range []string{"!!int", "!!bool", "!!float"} {
			check(&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: text})
		}
	})
}
