package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestMarkdownRender(t *testing.T) {
	src := "# Title\n\nSome *text* with `code` and a [link](http://x.test), long enough to wrap at a narrow width for sure.\n\n" +
		"- one\n- two\n  - nested\n\n1. first\n2. second\n\n```sh\ngo test ./...\n```\n\n> quoted\n\n| a | bb |\n|---|---|\n| 1 | 2 |\n\n---\n\n<b>raw</b>\n"
	tests := []struct {
		name  string
		style string
		width int
		want  []string // lines (trimmed of the right) that must appear, in order
	}{
		{"notty", "notty", 40, []string{
			"# Title",
			"Some text with code and a link",
			"• one",
			"• two",
			"  • nested",
			"1. first",
			"2. second",
			"  go test ./...",
			"│ quoted",
			"a │ bb",
			"1 │ 2",
			"────",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := newMarkdown(tc.style).render(src, tc.width)
			plain := ansi.Strip(out)
			rest := plain
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing (or out of order) %q in:\n%s", w, plain)
				}
				rest = rest[i+len(w):]
			}
			for _, l := range strings.Split(plain, "\n") {
				if got := ansi.StringWidth(l); got > tc.width-2 {
					t.Errorf("line wider (%d) than %d: %q", got, tc.width-2, l)
				}
			}
			if strings.Contains(plain, "<b>") {
				t.Errorf("raw HTML tags shown:\n%s", plain)
			}
		})
	}
	// The colour styles render the same words.
	if got := ansi.Strip(newMarkdown("dark").render(src, 40)); !strings.Contains(got, "• nested") || !strings.Contains(got, "# Title") {
		t.Errorf("dark style:\n%s", got)
	}
}
