package docstore

import (
	"bytes"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// encoderText is what scalarText and renderEntry produced before the fast
// path: the yaml encoder's output.
func encoderText(t *testing.T, key string, n *yaml.Node) (value, entry string) {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(clean(n)); err != nil {
		t.Fatal(err)
	}
	value = string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, clean(n)}}
	buf.Reset()
	enc = yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return value, buf.String()
}

// The fast paths must give byte for byte what the encoder gives, and a
// value they take must read back as itself.
func TestFastScalarMatchesEncoder(t *testing.T) {
	vals := []any{0, 1, -1, 42, int64(1) << 40, "w1", "vm/12345", "holders/vm-12-ab3d", "lease", "liveness", "ok",
		"a.b_c-d", "yes", "No", "ON", "off", "true", "False", "null", "y", "n", "Y", "1abc", "", "a b", "a:b",
		"a#b", "-a", ".a", "~", "NaN", "inf", "e5", "x1e5", "0x1F", "abc\n", "é", "a'b",
		time.Date(2026, 11, 22, 1, 2, 3, 4e6, time.UTC), time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, v := range vals {
		var want yaml.Node
		if tm, ok := v.(time.Time); ok {
			want = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: schema.FormatTime(tm)}
		} else if err := want.Encode(v); err != nil {
			t.Fatal(err)
		}
		got, err := valueNode("k", v)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != want.Kind || got.Tag != want.Tag || got.Value != want.Value || got.Style != want.Style {
			t.Errorf("valueNode(%#v) = %+v, want %+v", v, *got, want)
		}
		wantVal, wantEntry := encoderText(t, "claimed_by", &want)
		if text, ok := fastScalarText(&want); ok {
			if text != wantVal {
				t.Errorf("fastScalarText(%#v) = %q, want %q", v, text, wantVal)
			}
			var back any
			if err := yaml.Unmarshal([]byte("k: "+text), &back); err != nil {
				t.Errorf("%q does not read back: %v", text, err)
			}
		}
		entry, err := renderEntry("claimed_by", &want, "\n")
		if err != nil {
			t.Fatal(err)
		}
		if string(entry) != wantEntry {
			t.Errorf("renderEntry(%#v) = %q, want %q", v, entry, wantEntry)
		}
	}
}
