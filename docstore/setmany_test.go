package docstore

import (
	"fmt"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// SetMany must give exactly what successive Set calls give.
func TestSetManyMatchesSet(t *testing.T) {
	docs := []string{
		"---\ntitle: a\nattempts: 1 # counted\nqueue: 'q'\n---\nbody\n",
		"---\r\ntitle: a\r\nattempts: 1\r\n---\r\n",
		"---\n# head comment\ntitle: \"quoted\"\ntags:\n  - x\n  - y\n\nattempts: 2\n---\n",
		"---\n{title: a, attempts: 1}\n---\n",
		"---\n---\nempty front\n",
		"---\ntitle: |\n  multi\n  line\nattempts: 0\n---\n",
	}
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	sets := [][]Field{
		{{"attempts", 2}, {"title", "b"}, {"claimed_by", "w1"}, {"lease_until", when}},
		{{"title", "two\nlines"}, {"attempts", 3}, {"new", []string{"a", "b"}}},
		{{"tags", "now scalar"}, {"queue", "q2"}, {"queue", "q3"}, {"x", 1}, {"x", 2}},
		{{"title", "it's: tricky # not a comment"}, {"attempts", -1}},
	}
	for i, src := range docs {
		for j, fields := range sets {
			want, err := Parse("x.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			got := want.Clone()
			for _, kv := range fields {
				if err := want.Set(kv.Key, kv.Value); err != nil {
					t.Fatal(err)
				}
			}
			if err := got.SetMany(fields); err != nil {
				t.Fatalf("doc %d set %d: %v", i, j, err)
			}
			if string(got.Bytes()) != string(want.Bytes()) {
				t.Errorf("doc %d set %d:\ngot:\n%q\nwant:\n%q", i, j, got.Bytes(), want.Bytes())
			}
		}
	}
}

// Edit must give exactly what SetMany then Delete give.
func TestEditMatchesSetManyDelete(t *testing.T) {
	docs := []string{
		"---\ntitle: a\nattempts: 1 # counted\nlease_until: 2026-01-01T00:00:00.000Z\nqueue: 'q'\nhung_since: x\n---\nbody\n",
		"---\r\ntitle: a\r\nlease_until: 1\r\nattempts: 1\r\n---\r\n",
		"---\n# head comment\ntitle: \"quoted\"\ntags:\n  - x\n  - y\n\nattempts: 2\nlease_until: z # c\n\n# tail\n---\n",
		"---\n{title: a, attempts: 1, lease_until: 3}\n---\n",
		"---\n---\nempty front\n",
		"---\ntitle: |\n  multi\n  line\nlease_until: 0\nhung_since: |\n  a\n  b\n---\n",
	}
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	sets := [][]Field{
		{{"completed", when}, {"updated", when}, {"result", "ok"}},
		{{"title", "two\nlines"}, {"attempts", 3}},
		{{"tags", "now scalar"}, {"lease_until", 5}},
		{},
	}
	dels := [][]string{{"lease_until", "hung_since"}, {"tags", "title"}, {"absent"}, {"lease_until"}, nil}
	for i, src := range docs {
		for j, fields := range sets {
			for k, del := range dels {
				want, err := Parse("x.md", []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				got := want.Clone()
				if err := want.SetMany(fields); err != nil {
					t.Fatal(err)
				}
				for _, key := range del {
					if err := want.Delete(key); err != nil {
						t.Fatal(err)
					}
				}
				if err := got.Edit(fields, del...); err != nil {
					t.Fatalf("doc %d set %d del %d: %v", i, j, k, err)
				}
				if string(got.Bytes()) != string(want.Bytes()) {
					t.Errorf("doc %d set %d del %d:\ngot:\n%q\nwant:\n%q", i, j, k, got.Bytes(), want.Bytes())
				}
			}
		}
	}
}

// sameTree compares two node trees field by field, positions included.
func sameTree(a, b *yaml.Node, path string) string {
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment ||
		a.Line != b.Line || a.Column != b.Column || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: got %+v, want %+v", path, *a, *b)
	}
	for i := range a.Content {
		if d := sameTree(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", path, i)); d != "" {
			return d
		}
	}
	return ""
}

// An Edit must leave exactly the tree a parse of the new text gives (and
// the same text as SetMany + Delete, checked above), so later edits and
// reads see the right positions and values.
func TestEditPatchMatchesParse(t *testing.T) {
	docs := []string{
		"---\nschema: 1\nid: p00-x\nqueue: q\ntitle: item\npriority: 0\nattempts: 0\ncreated: 2026-11-22T00:49:03.123Z\nupdated: 2026-11-22T00:49:03.123Z\n---\nbody\n",
		"---\nid: a\ndepends_on:\n  - b\n  - c\nattempts: 2\nlease_until: 2026-11-22T00:49:03.123Z\n\nhung_since: 2026-11-22T00:49:03.123Z\nclaimed_by: w1\n---\n",
		"---\ntitle: \"quoted: yes\"\nlease_until: 3\ntags: [a, b]\nclaimed_by: 'w2'\n---\n",
		"---\n---\nempty front\n",
		"---\nonly: 1\n---\n",
	}
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	sets := [][]Field{
		{{"attempts", 1}, {"claimed_by", "vm/123"}, {"claim_attempt", 1}, {"claim_kind", "liveness"}, {"lease_until", when}, {"started", when}, {"updated", when}, {"liveness_lock", "holders/vm-1-abcd"}},
		{{"completed", when}, {"updated", when}, {"result", "ok"}},
		{{"title", "renamed"}, {"claimed_by", "w9"}},
		{{"title", "needs: quotes"}, {"attempts", 7}},
		{},
	}
	dels := [][]string{{"lease_until", "hung_since"}, {"id"}, {"depends_on"}, {"claimed_by", "only"}, {"not_there"}, nil}
	for i, src := range docs {
		for j, fields := range sets {
			for k, del := range dels {
				d, err := Parse("x.md", []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Edit(fields, del...); err != nil {
					t.Fatalf("doc %d set %d del %d: %v", i, j, k, err)
				}
				want, err := Parse("x.md", d.Bytes())
				if err != nil {
					t.Fatalf("doc %d set %d del %d: edited text does not parse: %v", i, j, k, err)
				}
				if diff := sameTree(d.root, want.root, "root"); diff != "" {
					t.Errorf("doc %d set %d del %d: tree differs from a parse of %q:\n%s", i, j, k, d.front, diff)
				}
			}
		}
	}
}

// valueNode's shortcut for plain-safe strings must give the node the
// encoder gives.
func TestValueNodeStringMatchesEncoder(t *testing.T) {
	for _, v := range []string{"ok", "w0", "vm/123", "holders/vm-1-abcd", "lease", "liveness", "a.b@c", "_x", "Nan", "Inf"} {
		got, err := valueNode("k", v)
		if err != nil {
			t.Fatal(err)
		}
		var want yaml.Node
		if err := want.Encode(v); err != nil {
			t.Fatal(err)
		}
		if d := sameTree(got, &want, v); d != "" {
			t.Errorf("valueNode(%q): %s", v, d)
		}
	}
}
