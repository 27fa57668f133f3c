package view

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Visible is s with every control character but tab and newline shown
// as an escape a person can read: C0 and DEL as \xHH (ESC is \x1b, a
// bare carriage return \x0d), C1 and the bidirectional formatting
// characters as \uHHHH (\u202e), and a byte that is not UTF-8 as \xHH.
// Titles, names and message text are anyone's to write; drawn raw they
// could set the terminal's title, clear the screen, overwrite a line
// (\r) or reorder it (\u202e) in what a person reads. Every text
// view of the store (the terminal UI, the CLI's tables and messages)
// shows user text through Visible; JSON escapes control characters by
// itself.
func Visible(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape, no copy
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r, n) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r, n):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsEscape: r (n bytes of input) is a control character other than
// tab and newline, a bidirectional formatting character, or a byte that
// is not UTF-8. The bidi embeddings, overrides and isolates (U+202A..E,
// U+2066..9) and marks (U+200E, U+200F) reorder what follows them on
// screen: a title could show "done" where the bytes say otherwise (the
// "Trojan Source" trick).
func needsEscape(r rune, n int) bool {
	switch {
	case r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		return true
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return false
}
