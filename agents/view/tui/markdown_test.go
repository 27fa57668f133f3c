package tui

import (
	"strings"
	"testing"
)

func TestMarkdownPlain(t *testing.T) {
	tests := []struct {
		name, src string
		width     int
		want      string
	}{
		{"heading and wrap", "# Title\n\nSome *emph* and **bold** text with `code` that wraps.", 22,
			"# Title\n\nSome emph and bold\ntext with code that\nwraps.\n"},
		{"lists", "- one\n- two words here\n  - nested\n\n1. a\n2. b", 14,
			"• one\n• two words\n  here\n  • nested\n\n1. a\n2. b\n"},
		{"link, quote, code", "[site](http://x)\n\n> said\n\n```\nx := 1\n```", 40,
			"site (http://x)\n\n│ said\n\n  x := 1\n"},
		{"glued text keeps together", "a **b**c d", 40, "a bc d\n"},
		{"hard break", "one\\\ntwo", 40, "one\ntwo\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newMarkdown("notty").render(tt.src, tt.width)
			if got != tt.want {
				t.Errorf("render:\n%s\nwant:\n%s", got, tt.want)
			}
			if strings.Contains(got, "\x1b[") {
				t.Errorf("notty output has escape sequences: %q", got)
			}
		})
	}
}
