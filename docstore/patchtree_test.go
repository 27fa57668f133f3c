package docstore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/tavernhq/tavern/schema"
	"gopkg.in/yaml.v3"
)

// sameTree compares what the parser decides about two node trees.
func samePatched(a, b *yaml.Node, at string) error {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || a.Anchor != b.Anchor ||
		a.Line != b.Line || a.Column != b.Column || a.HeadComment != b.HeadComment ||
		a.LineComment != b.LineComment || a.FootComment != b.FootComment || len(a.Content) != len(b.Content) {
		return fmt.Errorf("%s: patched {kind %v tag %q value %q style %v line %d col %d n %d}, parsed {kind %v tag %q value %q style %v line %d col %d n %d}",
			at, a.Kind, a.Tag, a.Value, a.Style, a.Line, a.Column, len(a.Content), b.Kind, b.Tag, b.Value, b.Style, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		if err := samePatched(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", at, i)); err != nil {
			return err
		}
	}
	return nil
}

// The tree Edit patches in place of a re-parse must be the tree the
// parser gives for the edited text, line numbers included, so that later
// edits (which locate entries by line) stay right; chains of edits keep
// matching.
func TestEditPatchedTreeMatchesParse(t *testing.T) {
	docs := []string{
		"---\nschema_version: 1\nid: p05-x\ntitle: item\nattempts: 0\nnot_before: 2026-11-22T01:00:00.000Z\ntags:\n  - a\n  - b\nmeta:\n  k: v\n\nqueue: q\nhung_since: 2026-11-22T01:00:00.000Z\n---\nbody\n",
		"---\r\ntitle: a\r\nattempts: 1\r\nlease_until: 2026-11-22T01:00:00.000Z\r\nlist:\r\n  - 1\r\n---\r\n",
		"---\nfirst: gone\nsecond: 2\n---\n",
	}
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	type edit struct {
		set []Field
		del []string
	}
	chains := [][]edit{
		{ // claim, then complete
			{[]Field{{Key: "attempts", Value: 1}, {Key: "claimed_by", Value: "w1"}, {Key: "claim_attempt", Value: 1}, {Key: "lease_until", Value: when}, {Key: "started", Value: when}, {Key: "liveness_lock", Value: "holders/h-1-abcd"}}, []string{"not_before", "hung_since"}},
			{[]Field{{Key: "completed", Value: when}, {Key: "updated", Value: when}, {Key: "result", Value: "ok"}}, []string{"lease_until", "hung_since"}},
		},
		{
			{nil, []string{"tags", "first"}},
			{[]Field{{Key: "meta", Value: "flat"}, {Key: "second", Value: 3}, {Key: "flag", Value: true}}, nil},
			{nil, []string{"queue", "attempts", "title"}},
			{[]Field{{Key: "late", Value: -12}}, []string{"list"}},
		},
	}
	patched := 0
	for i, src := range docs {
		for j, chain := range chains {
			d, err := Parse("x.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for k, e := range chain {
				var keep *yaml.Node
				if len(d.root.Content) > 0 {
					keep = d.root.Content[0]
				}
				if err := d.Edit(e.set, e.del...); err != nil {
					t.Fatalf("doc %d chain %d step %d: %v", i, j, k, err)
				}
				if len(d.root.Content) > 0 && d.root.Content[0] == keep {
					patched++ // a re-parse makes new nodes
				}
				fresh, err := Parse("x.md", d.Bytes())
				if err != nil {
					t.Fatalf("doc %d chain %d step %d: edited text does not parse: %v", i, j, k, err)
				}
				if err := samePatched(d.root, fresh.root, "root"); err != nil {
					t.Fatalf("doc %d chain %d step %d: %v\n%s", i, j, k, err, d.Bytes())
				}
			}
		}
	}
	if patched == 0 {
		t.Fatal("no edit took the patch path")
	}
}

func TestPatchSafe(t *testing.T) {
	for _, tc := range []struct {
		n    yaml.Node
		want bool
	}{
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "w1"}, true},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "yes"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "1abc"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "-12"}, true},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "012"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0x1f"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: "2026-11-22T01:02:03.004Z"}, true},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: "2026-11-22"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "True"}, false},
		{yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "w1", Style: yaml.DoubleQuotedStyle}, false},
	} {
		if got := patchSafe(&tc.n, tc.n.Value); got != tc.want {
			t.Errorf("patchSafe(%s %q style %v) = %v, want %v", tc.n.Tag, tc.n.Value, tc.n.Style, got, tc.want)
		}
	}
}

// FuzzEditPatch: for any document that parses, a claim-like or
// completion-like Edit either fails and leaves the document as it was, or
// gives text that parses to the tree the edit left in memory (so later
// edits and line:col errors stay right), with the set fields as set, the
// deleted ones gone and every other field as it was.
func FuzzEditPatch(f *testing.F) {
	f.Add("---\nschema_version: 1\nid: x\ntitle: item\nattempts: 0\nnot_before: 2026-11-22T01:00:00.000Z\ntags:\n  - a\nqueue: q\n---\nbody\n", uint8(0))
	f.Add("---\r\ntitle: a\r\nattempts: 1\r\nlease_until: 2026-11-22T01:00:00.000Z\r\nlist:\r\n  - 1\r\n---\r\n", uint8(1))
	f.Add("---\nfirst: gone # c\nsecond: 2\nhung_since: x\n\n---\n", uint8(2))
	f.Add("---\n{a: 1, lease_until: 2}\n---\n", uint8(3))
	when := time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC)
	edits := []struct {
		set []Field
		del []string
	}{
		{[]Field{{Key: "attempts", Value: 1}, {Key: "claimed_by", Value: "w1"}, {Key: "claim_attempt", Value: 2}, {Key: "lease_until", Value: when}, {Key: "started", Value: when}}, []string{"not_before", "hung_since"}},
		{[]Field{{Key: "completed", Value: when}, {Key: "updated", Value: when}, {Key: "result", Value: "ok"}}, []string{"lease_until", "hung_since"}},
		{[]Field{{Key: "title", Value: "new title"}, {Key: "n", Value: int64(-3)}}, nil},
		{nil, []string{"first", "tags", "queue"}},
	}
	f.Fuzz(func(t *testing.T, src string, which uint8) {
		d, err := Parse("x.md", []byte(src))
		if err != nil || d.root == nil {
			return
		}
		e := edits[int(which)%len(edits)]
		before := string(d.Bytes())
		oldFields := d.Fields()
		if err := d.Edit(e.set, e.del...); err != nil {
			if got := string(d.Bytes()); got != before {
				t.Fatalf("failed Edit (%v) changed the document:\n%q\nto\n%q", err, before, got)
			}
			return
		}
		fresh, err := Parse("x.md", d.Bytes())
		if err != nil {
			t.Fatalf("edited text does not parse: %v\n%q", err, d.Bytes())
		}
		if err := samePatched(d.root, fresh.root, "root"); err != nil {
			t.Fatalf("%v\nbefore %q\nafter  %q", err, before, d.Bytes())
		}
		got := fresh.Fields()
		for _, kv := range e.set {
			k := kv.Key
			want := kv.Value
			if tm, ok := want.(time.Time); ok {
				want = schema.FormatTime(tm) // Fields gives timestamps as written
			}
			if fmt.Sprint(got[k]) != fmt.Sprint(want) {
				t.Fatalf("%s = %#v, want %#v\n%q", k, got[k], want, d.Bytes())
			}
		}
		for _, k := range e.del {
			if _, ok := got[k]; ok && !setsKey(e.set, k) {
				t.Fatalf("%s still present after delete\n%q", k, d.Bytes())
			}
		}
		for k, v := range oldFields {
			if setsKey(e.set, k) || slices.Contains(e.del, k) {
				continue
			}
			if !reflect.DeepEqual(got[k], v) {
				t.Fatalf("untouched field %s changed: %#v -> %#v\n%q", k, v, got[k], d.Bytes())
			}
		}
	})
}

func setsKey(set []Field, k string) bool {
	for _, kv := range set {
		if kv.Key == k {
			return true
		}
	}
	return false
}
