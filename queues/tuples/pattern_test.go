package tuples

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

func TestParseTerm(t *testing.T) {
	tests := []struct {
		in     string
		field  string
		op     docstore.Op
		value  string
		formal bool
	}{
		{"status=pending", "status", docstore.OpEq, "pending", false},
		{"id=?", "id", docstore.OpExists, "", true},
		{`q=\?`, "q", docstore.OpEq, "?", false},
		{"n>3", "n", docstore.OpGt, "3", false},
		{"n<=3", "n", docstore.OpLe, "3", false},
		{"title~parser", "title", docstore.OpHas, "parser", false},
		{"owner?", "owner", docstore.OpExists, "", false},
		{"a!=b", "a", docstore.OpNe, "b", false},
		{"url=http://x?y=1", "url", docstore.OpEq, "http://x?y=1", false},
	}
	for _, tt := range tests {
		got, err := ParseTerm(tt.in)
		if err != nil {
			t.Errorf("ParseTerm(%q): %v", tt.in, err)
			continue
		}
		if got.Field != tt.field || got.Op != tt.op || got.Value != tt.value || got.Formal != tt.formal {
			t.Errorf("ParseTerm(%q) = %+v, want field %q op %q value %q formal %v", tt.in, got, tt.field, tt.op, tt.value, tt.formal)
		}
	}
	for _, bad := range []string{"", "=x", "noop", "a b=c", "?"} {
		if _, err := ParseTerm(bad); !errors.Is(err, ErrBadPattern) || !errors.Is(err, docstore.ErrBadExpr) {
			t.Errorf("ParseTerm(%q) error = %v, want ErrBadPattern and ErrBadExpr", bad, err)
		}
	}
}

// A term ordering a field every tuple has as a time (created, expires)
// by a bound that is no time is a *PatternError of the bound; values of
// the tuple's own declare no type and are not checked.
func TestParseTermTimeBound(t *testing.T) {
	for _, bad := range []string{"created>yesterday", "expires<soon", "updated>=", "created<2021-13"} {
		_, err := ParseTerm(bad)
		var pe *PatternError
		if !errors.As(err, &pe) || pe.Term != bad || pe.Op != "parse" || pe.Path != "tuples" {
			t.Errorf("ParseTerm(%q) = %#v, want a *PatternError of it", bad, err)
		}
		if !errors.Is(err, ErrBadPattern) || !errors.Is(err, docstore.ErrBadBound) {
			t.Errorf("ParseTerm(%q) = %v, want ErrBadPattern and docstore.ErrBadBound", bad, err)
		}
	}
	for _, good := range []string{"created>2026-11-26", "expires<2026-11-26T10:00:00Z", "created=yesterday", "created=?", "n<abc", "status>x"} {
		if _, err := ParseTerm(good); err != nil {
			t.Errorf("ParseTerm(%q): %v", good, err)
		}
	}
}

func TestPatternMatch(t *testing.T) {
	fields := map[string]any{"status": "pending", "n": 5, "title": "Rewrite the Parser", "tags": []any{"a", "b"}, "none": nil}
	tests := []struct {
		pattern []string
		ok      bool
		caps    map[string]any
	}{
		{nil, true, nil},
		{[]string{"status=pending"}, true, nil},
		{[]string{"status=done"}, false, nil},
		{[]string{"status=?", "n=?"}, true, map[string]any{"status": "pending", "n": 5}},
		{[]string{"missing=?"}, false, nil},
		{[]string{"none=?"}, false, nil}, // a formal needs a value
		{[]string{"n>4", "n<6"}, true, nil},
		{[]string{"n>5"}, false, nil},
		{[]string{"title~parser"}, true, nil},
		{[]string{"tags=b"}, true, nil},
		{[]string{"status?", "missing?"}, false, nil},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		caps, ok := p.Match(fields)
		if ok != tt.ok || !reflect.DeepEqual(caps, tt.caps) {
			t.Errorf("%v.Match = %v, %v; want %v, %v", tt.pattern, caps, ok, tt.caps, tt.ok)
		}
	}
}

// FuzzParsePattern: the parser never panics, and a parsed term prints to
// text that parses back to the same term.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"a=b", "a=?", `a=\?`, "n>3", "n>=-1.5", "t~x", "x?", "a.b=c", "a=b=c", "a<", "=", "?", "a!=?", "é=ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		term, err := ParseTerm(s)
		if err != nil {
			if !errors.Is(err, ErrBadPattern) {
				t.Fatalf("ParseTerm(%q) error %v is not ErrBadPattern", s, err)
			}
			return
		}
		again, err := ParseTerm(term.String())
		if err != nil {
			t.Fatalf("ParseTerm(%q) = %+v prints as %q, which does not parse: %v", s, term, term.String(), err)
		}
		if again != term {
			t.Fatalf("round trip of %q: %+v then %+v", s, term, again)
		}
		Pattern{term}.Match(map[string]any{"a": "b", "n": 3})
	})
}
