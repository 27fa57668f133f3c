package docstore

import (
	"errors"
	"testing"
)

// A field's lines move between two copies of a document byte for byte,
// and lines that would say something else are refused with nothing
// changed (the caller renders the value instead).
func TestSetFieldText(t *testing.T) {
	src, err := Parse("a.md", []byte("---\nname: a\ntags: [a:1, b:2]  # why\nmeta:\n  k: [a:1]\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := Parse("a.md", []byte("---\nname: a\ntags: [a:1]\nx: 1\n---\nbody\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tags", "meta"} {
		text, _, ok := src.FieldText(k)
		if !ok {
			t.Fatalf("FieldText(%s): not found", k)
		}
		if err := dst.SetFieldText(k, text, src.Get(k)); err != nil {
			t.Fatalf("SetFieldText(%s): %v", k, err)
		}
	}
	want := "---\nname: a\ntags: [a:1, b:2]  # why\nx: 1\nmeta:\n  k: [a:1]\n---\nbody\n"
	if got := string(dst.Bytes()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Lines that do not hold the value given, or that would change
	// another field, change nothing.
	before := string(dst.Bytes())
	for _, bad := range []string{"tags: [c]\n", "tags: [a:1, b:2]\nx: 2\n", "other: [a:1, b:2]\n"} {
		if err := dst.SetFieldText("tags", []byte(bad), src.Get("tags")); !errors.Is(err, ErrUneditable) {
			t.Errorf("SetFieldText(%q): %v, want ErrUneditable", bad, err)
		}
		if got := string(dst.Bytes()); got != before {
			t.Errorf("after a refused SetFieldText(%q):\n%s", bad, got)
		}
	}
}
