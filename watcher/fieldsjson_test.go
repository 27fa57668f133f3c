package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
)

// randomFields returns frontmatter-like fields of every type the index
// encoding holds.
func randomFields(r *rand.Rand) map[string]any {
	m := map[string]any{}
	for range r.IntN(20) {
		m[storetest.HardStrings[r.IntN(len(storetest.HardStrings))]+fmt.Sprint(r.IntN(3))] = storetest.FrontmatterValue(r, 0)
	}
	return m
}

// marshalIndent is what encoding/json writes for v on a line indented by
// indent, HTML unescaped.
func marshalIndent(tb testing.TB, v any, indent string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, "  ")
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func encodedEntry(tb testing.TB, fields map[string]any) *Entry {
	tb.Helper()
	raw, err := encodeFields(&Entry{Fields: fields})
	if err != nil {
		tb.Fatal(err)
	}
	return &Entry{raw: raw}
}

// TestAppendFieldsJSON: fields written from their encoding are, byte for
// byte, what encoding/json writes for the decoded map, and what
// docstore.AppendJSON writes for it.
func TestAppendFieldsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		fields := randomFields(r)
		indent := strings.Repeat(" ", 2*(i%4))
		want := marshalIndent(t, fields, indent)
		got, err := AppendFieldsJSON(nil, encodedEntry(t, fields), indent)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: from the encoding:\n got %s\nwant %s", i, got, want)
		}
		got, err = AppendFieldsJSON(nil, &Entry{Fields: fields}, indent)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("case %d: from the map (%v):\n got %s\nwant %s", i, err, got, want)
		}
	}
	// A document that did not parse.
	for _, e := range []*Entry{{}, {raw: rawNil}} {
		if got, err := AppendFieldsJSON(nil, e, ""); err != nil || string(got) != "null" {
			t.Errorf("no fields (raw %q): %s, %v; want null", e.raw, got, err)
		}
	}
}

// TestAppendFieldsJSONDuplicateKey: of a key encoded twice, the last
// value is written, as decoding keeps it.
func TestAppendFieldsJSONDuplicateKey(t *testing.T) {
	var e encoder
	e.b = append(e.b, tagMap)
	e.uvarint(3)
	for _, kv := range [][2]string{{"b", "first"}, {"a", "x"}, {"b", "last"}} {
		e.str(kv[0])
		e.b = append(e.b, tagString)
		e.str(kv[1])
	}
	raw := string(e.b)
	got, err := AppendFieldsJSON(nil, &Entry{raw: raw}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := marshalIndent(t, decodeFields(raw), "")
	if !bytes.Equal(got, want) || !strings.Contains(string(got), `"last"`) {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestAppendFieldsJSONErrors: a corrupt encoding is an error wrapping
// ErrCacheCorrupt, never a panic or half a document; NaN and the
// infinities, which JSON lacks, come out as their YAML spellings.
func TestAppendFieldsJSONErrors(t *testing.T) {
	good := encodedEntry(t, map[string]any{"a": []any{"x", 1}, "b": map[string]any{"c": true}}).raw
	for i := range len(good) {
		if _, err := AppendFieldsJSON(nil, &Entry{raw: good[:i]}, ""); i > 0 && !errors.Is(err, ErrCacheCorrupt) {
			t.Errorf("truncated to %d bytes: %v, want ErrCacheCorrupt", i, err)
		}
	}
	if _, err := AppendFieldsJSON(nil, &Entry{raw: good + "x"}, ""); !errors.Is(err, ErrCacheCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCacheCorrupt", err)
	}
	nan := encodedEntry(t, map[string]any{"f": math.NaN(), "i": math.Inf(-1)})
	if got, err := AppendFieldsJSON(nil, nan, ""); err != nil || string(got) != "{\n  \"f\": \".nan\",\n  \"i\": \"-.inf\"\n}" {
		t.Errorf("NaN and -Inf: %s, %v; want their YAML spellings, quoted", got, err)
	}
}

// FuzzAppendFieldsJSON: for any encoding the index check accepts,
// writing it as JSON gives what writing its decoded map gives.
func FuzzAppendFieldsJSON(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		raw, _ := encodeFields(&Entry{Fields: randomFields(r)})
		f.Add([]byte(raw))
	}
	f.Add([]byte(rawNil))
	f.Fuzz(func(t *testing.T, data []byte) {
		raw := string(data)
		got, err := AppendFieldsJSON(nil, &Entry{raw: raw}, "  ")
		if checkFields(raw) != nil || raw == "" {
			return
		}
		var want []byte
		var werr error
		if fields := decodeFields(raw); fields == nil {
			want = []byte("null")
		} else {
			want, werr = docstore.AppendJSON(nil, fields, "  ")
		}
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("raw %q:\n got %s (%v)\nwant %s (%v)", raw, got, err, want, werr)
		}
	})
}

// TestQueryEncoded: a query that leaves the fields encoded selects the
// same entries in the same order; passed through AppendEntries and
// DecodeEntries (the query daemon's answer) and decoded, they are the
// entries a plain query returns. A document that does not parse is not
// Parsed either way.
func TestQueryEncoded(t *testing.T) {
	s := newStore(t)
	for i := range 12 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), []string{"idle", "working"}[i%2]))
	}
	writeDoc(t, s, "agents/broken.md", "---\nname: [unclosed\n---\n")
	first := openProj(t, s, Options{Cache: true})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{Cache: true}, {Cache: true, Watch: true}} {
		p := openProj(t, s, opt) // entries come encoded from the cache
		for _, q := range []Query{
			{Kind: "agents"},
			{Kind: "agents", Where: []docstore.Cond{mustWhere(t, "state=working")}},
			{Kind: "agents", Limit: 3},
		} {
			want, err := p.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			q.Encoded = true
			enc, err := p.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := paths(enc), paths(want); got != want {
				t.Fatalf("%+v: encoded query lists %s, want %s", q, got, want)
			}
			for _, e := range enc {
				if e.Fields != nil && e.Path != "agents/broken.md" {
					t.Errorf("%+v: %s has its fields decoded", q, e.Path)
				}
				if got, want := e.Parsed(), e.Path != "agents/broken.md"; got != want {
					t.Errorf("%s: Parsed %v, want %v", e.Path, got, want)
				}
			}
			got, err := DecodeEntries(AppendEntries(nil, enc))
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				got[i].Decode()
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: through the daemon's encoding:\n got %+v\nwant %+v", q, got, want)
			}
		}
		// Sort reads the fields: they come decoded.
		sorted, err := p.Query(Query{Kind: "agents", Sort: "-name", Encoded: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(sorted) == 0 || sorted[0].Fields == nil || sorted[0].Fields["name"] != "a11" {
			t.Errorf("sorted by -name: first %+v, want a11 decoded", sorted[0])
		}
		p.Close()
	}
}

func mustWhere(tb testing.TB, w string) docstore.Cond {
	tb.Helper()
	c, err := docstore.ParseWhere(w)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestQueryViewsWhileEditing: views are built outside the projection's
// lock, which holds only because a change puts a new entry rather than
// changing one in place. Queries of every shape run while documents are
// edited, created and removed (with -race, an entry changed in place is
// reported), and every answer is in path order and of whole documents.
func TestQueryViewsWhileEditing(t *testing.T) {
	s := newStore(t)
	for i := range 40 {
		writeDoc(t, s, fmt.Sprintf("agents/a%02d.md", i), agentDoc(fmt.Sprintf("a%02d", i), "idle"))
	}
	first := openProj(t, s, Options{Cache: true})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	p := openProj(t, s, Options{Cache: true, Watch: true})
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		queries := []Query{
			{Kind: "agents"},
			{Kind: "agents", Encoded: true},
			{Kind: "agents", Where: []docstore.Cond{mustWhere(t, "state=working")}},
			{Kind: "agents", Where: []docstore.Cond{mustWhere(t, "state=idle")}, Encoded: true, Limit: 5},
			{Kind: "agents", Fields: []string{"state"}},
		}
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			q := queries[n%len(queries)]
			es, err := p.Query(q)
			if err != nil {
				errs <- err
				return
			}
			for i, e := range es {
				if i > 0 && es[i-1].Path >= e.Path {
					errs <- fmt.Errorf("%+v: %s listed after %s", q, e.Path, es[i-1].Path)
					return
				}
				e.Decode()
				if name, _ := e.Fields["name"].(string); e.Parsed() && q.Fields == nil && "agents/"+name+".md" != e.Path {
					errs <- fmt.Errorf("%+v: %s has name %q", q, e.Path, name)
					return
				}
			}
		}
	}()
	for round := range 30 {
		for i := range 40 {
			rel := fmt.Sprintf("agents/a%02d.md", i)
			switch (i + round) % 7 {
			case 0:
				os.Remove(filepath.Join(s.Root(), rel))
			default:
				writeDocAtomic(t, s, rel, agentDoc(fmt.Sprintf("a%02d", i), []string{"idle", "working"}[(i+round)%2]))
			}
		}
		if err := p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
