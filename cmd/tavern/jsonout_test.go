package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore/storetest"
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
	strs := storetest.HardStrings
	// A time is not a frontmatter type: the fallback through encoding/json.
	value := func(depth int) any {
		return storetest.FrontmatterValue(r, depth, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	}
	for i := range 300 {
		var docs []*docObject
		for j := range i % 4 {
			d := &docObject{Path: "/p/" + strs[r.IntN(len(strs))], Rel: "agents/a.md", Kind: "agent", Name: strs[j%len(strs)], Rev: "0123456789abcdef", Valid: r.IntN(2) == 0, Errors: []string{}}
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
	// JSON has no NaN or infinities: their YAML spellings, quoted, where
	// encoding/json fails.
	for bad, want := range map[float64]string{math.NaN(): `".nan"`, math.Inf(1): `".inf"`, math.Inf(-1): `"-.inf"`} {
		docs := []*docObject{{Fields: map[string]any{"x": []any{bad}}}}
		got, err := appendDocs(nil, docs)
		if err != nil || !bytes.Contains(got, []byte("\n        "+want+"\n")) {
			t.Errorf("appendDocs with %v: %s, %v; want %s", bad, got, err, want)
		}
	}
}
