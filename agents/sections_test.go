package agents

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSections(t *testing.T) {
	body := []byte("\n# alice\n\n## Assignment\n\nDo it.\n\n```\n## Notes\nnot a heading\n```\n\n## Notes\n\nold\n\n## Recent Messages\n")
	if got, _ := Section(body, "Assignment"); !strings.Contains(got, "Do it.") || !strings.Contains(got, "not a heading") {
		t.Errorf("Assignment = %q (the fenced ## Notes belongs to it)", got)
	}
	if got, _ := Section(body, "Notes"); got != "old" {
		t.Errorf("Notes = %q, want old", got)
	}
	out := SetSection(body, "Notes", "new")
	if got, _ := Section(out, "Notes"); got != "new" {
		t.Errorf("after set: %q", got)
	}
	if !bytes.Contains(out, []byte("```\n## Notes\nnot a heading\n```")) {
		t.Errorf("code block changed:\n%s", out)
	}
	out = SetSection(out, "Extra", "x")
	if got, ok := Section(out, "Extra"); !ok || got != "x" {
		t.Errorf("appended section = %q %v\n%s", got, ok, out)
	}
	// Setting the last section keeps exactly one trailing newline.
	out = SetSection(out, "Extra", "y")
	if !bytes.HasSuffix(out, []byte("## Extra\n\ny\n")) {
		t.Errorf("tail = %q", out[len(out)-20:])
	}
}

// update rewrites the golden files under testdata/ (go test -update).
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestSectionGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "agent_body.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := SetSection(in, SectionNotes, "Verification 1 failed:\n\n- tests: `go test` exit 1")
	out = SetSection(out, SectionMessages, "- 10:00:00 alice: hello")
	golden := filepath.Join("testdata", "agent_body.golden.md")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

// FuzzSetSection: setting a section never loses text outside it, and the
// section reads back as set.
func FuzzSetSection(f *testing.F) {
	f.Add([]byte("\n# a\n\n## Notes\n\nx\n"), "y")
	f.Add([]byte("## Notes\n## Notes\n"), "")
	f.Add([]byte("```\n## Notes\n```\n"), "z")
	f.Add([]byte("Notes\n-----\n\n## Recent Messages\n"), "q\n\n## not")
	f.Fuzz(func(t *testing.T, body []byte, content string) {
		if strings.Contains(content, "#") || strings.Contains(content, "`") || strings.Contains(content, "~") ||
			strings.Contains(content, "<") || strings.Contains(content, "\r") || strings.Contains(content, "-") || strings.Contains(content, "=") {
			return // content that is itself markdown structure is out of scope
		}
		out := SetSection(body, "Notes", content)
		got, ok := Section(out, "Notes")
		if !ok {
			t.Fatalf("section missing after set:\n%q", out)
		}
		if want := strings.TrimSpace(content); got != want && !strings.HasPrefix(got, want) {
			t.Fatalf("got %q, want %q\nbody %q\nout %q", got, want, body, out)
		}
	})
}
