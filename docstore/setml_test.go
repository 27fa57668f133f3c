package docstore

import (
	"reflect"
	"testing"
)

// A list of strings, one of them a multi-line script starting with a
// newline (a pool's command), can be set and reads back exactly: yaml.v3
// alone fails to encode it, or drops the leading newline.
func TestSetMultilineStrings(t *testing.T) {
	script := "\nexec 8>x\n  echo $A\n"
	for _, v := range []any{[]string{"sh", "-c", script}, script, " indented\nsecond"} {
		d, err := Parse("x.md", []byte("---\na: 1\n---\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Set("v", v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
		if err := d.SetMany([]Field{{Key: "w", Value: v}, {Key: "b", Value: 2}}); err != nil {
			t.Fatalf("SetMany(%q): %v", v, err)
		}
		r, err := Parse("x.md", d.Bytes())
		if err != nil {
			t.Fatalf("%q: unparsable result: %v\n%s", v, err, d.Bytes())
		}
		want := v
		if l, ok := v.([]string); ok {
			want = []any{l[0], l[1], l[2]}
		}
		for _, k := range []string{"v", "w"} {
			if got := r.Fields()[k]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s = %#v, want %#v\n%s", k, got, want, d.Bytes())
			}
		}
	}
}
