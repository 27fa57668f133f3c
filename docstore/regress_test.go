package docstore

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// SetYAML types only one-line scalars and flow collections; other text
// is kept as typed.
func TestSetYAMLText(t *testing.T) {
	tests := []struct {
		text string
		want any
	}{
		{"3", 3}, {"-3", -3}, {"1.5", 1.5}, {"true", true}, {"[a, b]", []any{"a", "b"}}, {"{k: v}", map[string]any{"k": "v"}},
		{`"3"`, "3"}, {"'x'", "x"}, {"Fix #12", "Fix #12"}, {"a: b", "a: b"}, {"- x", "- x"}, {"&a x", "&a x"},
		{"*nope", "*nope"}, {"line1\nline2", "line1\nline2"}, {"", ""}, {"  ", "  "}, {"# only a comment", "# only a comment"},
	}
	for _, tt := range tests {
		d, err := New(schema.Note, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetYAML("v", tt.text); err != nil {
			t.Fatalf("SetYAML(%q): %v", tt.text, err)
		}
		r, err := Parse("x.md", d.Bytes())
		if err != nil {
			t.Fatalf("SetYAML(%q) gave an unparsable document: %v\n%s", tt.text, err, d.Bytes())
		}
		if got := r.Fields()["v"]; !jsonSame(got, tt.want) {
			t.Errorf("SetYAML(%q) = %#v, want %#v", tt.text, got, tt.want)
		}
	}
}

func jsonSame(a, b any) bool {
	return strings.TrimSpace(sprintJSON(a)) == strings.TrimSpace(sprintJSON(b))
}

// Alias cycles and alias bombs are refused by Parse, quickly, with the
// line of the alias that crosses the limit: bad input is reported, never
// truncated (they used to read as null past 65536 values). Aliases within
// the limit still expand.
func TestAliasBombsRefused(t *testing.T) {
	_, err := Parse("x.md", []byte("---\na: &x [1, *x]\nb: *x\n---\n"))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(pe.Msg, "refers to its own anchor") {
		t.Errorf("cyclic alias: %v, want a parse error at line 2", err)
	}
	var b strings.Builder
	b.WriteString("---\ntitle: ok\na: &a [x,x,x,x,x,x,x,x,x]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString(n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n")
		prev = n
	}
	b.WriteString("---\n")
	start := time.Now()
	_, err = Parse("x.md", []byte(b.String()))
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("Parse of an alias bomb took %v", el)
	}
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "alias expansion exceeds 65536 values") || pe.Line < 4 || pe.Line > 11 {
		t.Fatalf("alias bomb: %v, want \"alias expansion exceeds 65536 values\" at the line of an alias", err)
	}
	d, err := Parse("x.md", []byte("---\nbase: &b {x: 1}\nuse: *b\nlist: [*b, *b]\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sprintJSON(d.Fields()["list"]); !strings.Contains(got, `"x"`) {
		t.Errorf("aliases within the limit: list = %s", got)
	}
}

func TestTooLargeAndNonRegular(t *testing.T) {
	s := newTestStore(t)
	big := filepath.Join(s.Root(), "agents", "big.md")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxDocSize + 1)
	f.Close()
	_, err = s.Get("agents/big.md")
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrParse) {
		t.Errorf("Get of an oversized file: %v, want ErrTooLarge and ErrParse", err)
	}
	if _, err := Parse("x.md", make([]byte, MaxDocSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse of oversized data: %v, want ErrTooLarge", err)
	}
	// A FIFO must be refused, not opened (open(2) would block forever).
	fifo := filepath.Join(s.Root(), "agents", "pipe.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := s.Get("agents/pipe.md"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrOddFile) {
			t.Errorf("Get of a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get of a FIFO blocked")
	}
	docs, errs := s.List(schema.Agent)
	if len(docs) != 0 || len(errs) != 2 {
		t.Errorf("List: %d docs, errors %v; want 0 docs and 2 errors", len(docs), errs)
	}
}

// Names are names, not glob patterns.
func TestResolveGlobCharacters(t *testing.T) {
	s := newTestStore(t)
	createAgent(t, s, "alice")
	for _, ref := range []string{"agents/*", "agents/?lice", "agents/[a]lice"} {
		rel, err := s.Resolve(ref)
		if err != nil {
			continue
		}
		if rel == "agents/alice.md" {
			t.Errorf("Resolve(%q) = %s: a pattern matched a document", ref, rel)
		}
	}
	createAgent(t, s, "a*")
	if rel, err := s.Resolve("agents/a*"); err != nil || rel != "agents/a*.md" {
		t.Errorf("Resolve(agents/a*) = %q, %v", rel, err)
	}
	// Items: the free part (queue, state) is globbed, the given id is not.
	d, _ := New(schema.Item, []Field{{Key: "title", Value: "t"}}, nil)
	if err := s.Create("queues/build/pending/x1.md", d); err != nil {
		t.Fatal(err)
	}
	if rel, err := s.Resolve("items/x1"); err != nil || rel != "queues/build/pending/x1.md" {
		t.Errorf("Resolve(items/x1) = %q, %v", rel, err)
	}
	if _, err := s.Resolve("items/x*"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Resolve(items/x*) = %v, want ErrNotExist", err)
	}
}

func sprintJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
