package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// encodingJSON is what printJSON writes for v.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// TestAppendDocsLikeEncodingJSON: appendDocs writes, byte for byte, what
// encoding/json writes for the same documents: random frontmatter of
// every type a document can hold, strings with every kind of character
// JSON escapes, and the values encoding/json refuses.
func TestAppendDocsLikeEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f", "<html>&amp;", "é ü 日本",
		"\u2028\u2029", "bad \xff utf8 \xc3", "emoji 😀", strings.Repeat("x", 300)}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := r.IntN(12); {
		case n == 0:
			return nil
		case n == 1:
			return r.IntN(2) == 0
		case n == 2:
			return r.IntN(2000) - 1000
		case n == 3:
			return int64(r.Uint64())
		case n == 4:
			return r.Uint64()
		case n == 5:
			return []float64{0, 1.5, -2.25, 1e21, 1e-7, 123456789.125, 1e20, 5e-324, math.MaxFloat64, 0.000001}[r.IntN(10)]
		case n == 6 && depth < 3:
			l := make([]any, r.IntN(4))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		case n == 7 && depth < 3:
			m := map[string]any{}
			for range r.IntN(4) {
				m[strs[r.IntN(len(strs))]] = value(depth + 1)
			}
			return m
		case n == 8:
			return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) // not a frontmatter type: the fallback
		default:
			return strs[r.IntN(len(strs))]
		}
	}
	for i := range 300 {
		var docs []*docObject
		for j := range i % 4 {
			d := &docObject{Path: "/p/" + strs[r.IntN(len(strs))], Rel: "agents/a.md", Kind: "agent", Name: strs[j%len(strs)], Rev: "0123456789abcdef", Valid: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				d.State = "pending"
			}
			if r.IntN(3) == 0 {
				d.Errors = []string{"x.md:1:2: bad", strs[r.IntN(len(strs))]}
			}
			if r.IntN(5) > 0 {
				d.Fields = map[string]any{}
				for range r.IntN(8) {
					d.Fields[strs[r.IntN(len(strs))]] = value(0)
				}
			}
			if r.IntN(2) == 0 {
				body := strs[r.IntN(len(strs))]
				d.Body = &body
			}
			docs = append(docs, d)
		}
		want, werr := encodingJSON(docs)
		if docs == nil {
			want, werr = encodingJSON([]*docObject{})
		}
		got, gerr := appendDocs(nil, docs)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("case %d: errors differ: encoding/json %v, appendDocs %v", i, werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// One document, as show --json prints it.
	for i := range 100 {
		d := &docObject{Path: "/x", Rel: strs[i%len(strs)], Valid: true, Fields: map[string]any{"a": value(0), "b": value(1)}, Errors: []string{strs[(i+1)%len(strs)]}}
		want, werr := encodingJSON(d)
		got, gerr := appendDoc(nil, d, "")
		if werr == nil && gerr == nil {
			got = append(got, '\n')
			if !bytes.Equal(got, want) {
				t.Fatalf("one document:\n got %s\nwant %s", got, want)
			}
		} else if (werr != nil) != (gerr != nil) {
			t.Fatalf("one document: errors differ: %v, %v", werr, gerr)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		docs := []*docObject{{Fields: map[string]any{"x": bad}}}
		if _, err := appendDocs(nil, docs); err == nil {
			t.Errorf("appendDocs with %v: no error (encoding/json refuses it)", bad)
		}
	}
}
