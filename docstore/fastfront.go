package docstore

import (
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// Why a hand-written parser: yaml.v3's parser was most of the CPU of a
// queue take+done cycle, which parses a claimed item's frontmatter.
// BenchmarkParseFront (fastfront_bench_test.go) measures that frontmatter
// both ways: 47 -> 8 µs when the scanner went in on a loaded machine
// (round 4 in queues/PERFORMANCE.md), 38 -> 4 µs (165 -> 4 allocations)
// on a quiet one. The cost is this file and its differential tests.
//
// yaml.v3 is unmaintained upstream (the go-yaml repository is archived).
// It stays the reference all the same: the differential test and the fuzz
// target hold the scanner to a frozen yaml.v3, not to a moving spec, so a
// change of YAML library means re-running them against the new one and
// accepting its differences deliberately.

// parseFrontFast builds the node tree of frontmatter in the shape Tavern
// writes without running yaml.v3, whose parser is most of the CPU of a
// queue take+done cycle. It accepts only a conservative subset and reports
// ok=false for anything else, and then the caller parses with yaml.v3 as
// before. For every input it accepts, the result is identical, field for
// field (Kind, Style, Tag, Value, Line, Column, no comments or anchors),
// to the mapping yaml.Unmarshal gives; TestParseFrontFastDifferential and
// FuzzParseFrontFast check that against yaml.v3 itself.
//
// Accepted, line by line (each ending in "\n" or "\r\n"):
//
//	key: plain            key: 'single quoted'     key: [a, b, 3]
//	key:                  key: "no escapes"        key: |-
//	  - item              (a block list)             two-space indented
//	                                                 lines, none blank
//
// Keys are [a-z_][a-z0-9_]*, unique. Block list items are indented by
// two spaces and are plain or quoted scalars. Plain scalars are strings,
// canonical decimal ints, decimal floats with a fraction, true/false and
// RFC 3339 timestamps (mayNotBeString refuses whatever else a resolver
// might not read as a string). Comments, tabs, blank or indented lines, anchors,
// aliases, tags, escapes, folded scalars, flow mappings, plain or
// quoted scalars over several lines and anything else are refused.
func parseFrontFast(front []byte) (*yaml.Node, bool) {
	if len(front) == 0 || front[len(front)-1] != '\n' {
		return nil, false
	}
	lines := 0
	for _, c := range front {
		if c == '\n' {
			lines++
		}
	}
	// One string for all values (substrings share it) and one slab of
	// nodes: a few allocations per document instead of a few per field.
	src := string(front)
	a := nodeSlab{buf: make([]yaml.Node, 0, 1+2*lines)}
	root := a.new()
	root.Kind, root.Tag, root.Line, root.Column = yaml.MappingNode, "!!map", 1, 1
	root.Content = make([]*yaml.Node, 0, 2*lines)

	var open *yaml.Node // value of a "key:" line: null, or a block list if items follow
	var keyLen int      // length of that key, for the null's column
	var seq *yaml.Node  // the block list items are being added to
	var seen map[string]bool
	line := 0
	for pos := 0; pos < len(src); {
		line++
		end := pos + strings.IndexByte(src[pos:], '\n')
		l := src[pos:end]
		pos = end + 1
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		if strings.HasPrefix(l, "  - ") {
			if seq == nil {
				if open == nil {
					return nil, false
				}
				seq = open
				seq.Kind, seq.Tag, seq.Line, seq.Column = yaml.SequenceNode, "!!seq", line, 3
				open = nil
			}
			v := a.new()
			if !blockScalar(v, l[4:], line, 5) {
				return nil, false
			}
			seq.Content = append(seq.Content, v)
			continue
		}
		seq = nil
		if open != nil {
			closeNull(open, keyLen)
			open = nil
		}
		// key
		i := 0
		for i < len(l) && (l[i] >= 'a' && l[i] <= 'z' || l[i] == '_' || i > 0 && l[i] >= '0' && l[i] <= '9') {
			i++
		}
		if i == 0 || i > 128 || i == len(l) || l[i] != ':' {
			return nil, false
		}
		key := l[:i]
		if mayNotBeString(key) {
			return nil, false // true:, null:
		}
		if len(root.Content) < 32 {
			for j := 0; j < len(root.Content); j += 2 {
				if root.Content[j].Value == key {
					return nil, false
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, len(root.Content))
				for j := 0; j < len(root.Content); j += 2 {
					seen[root.Content[j].Value] = true
				}
			}
			if seen[key] {
				return nil, false
			}
			seen[key] = true
		}
		k := a.new()
		k.Kind, k.Tag, k.Value, k.Line, k.Column = yaml.ScalarNode, "!!str", key, line, 1
		v := a.new()
		root.Content = append(root.Content, k, v)
		rest := l[i+1:]
		if rest == "" {
			v.Line = line
			open, keyLen = v, len(key)
			continue
		}
		if rest[0] != ' ' {
			return nil, false
		}
		rest = rest[1:]
		if rest == "|-" || rest == "|" {
			n, ok := literal(src[pos:], rest == "|")
			if !ok {
				return nil, false
			}
			v.Kind, v.Tag, v.Style, v.Line, v.Column = yaml.ScalarNode, "!!str", yaml.LiteralStyle, line, i+3
			v.Value = n.value
			pos += n.size
			line += n.lines
			continue
		}
		if rest != "" && rest[0] == '[' {
			if !flowList(&a, v, rest, line, i+3) {
				return nil, false
			}
			continue
		}
		if !blockScalar(v, rest, line, i+3) {
			return nil, false
		}
	}
	if open != nil {
		closeNull(open, keyLen)
	}
	return root, true
}

// closeNull makes v, its Line set, the empty value of a "key:" line:
// yaml.v3 places it just after the colon.
func closeNull(v *yaml.Node, keyLen int) {
	v.Kind, v.Tag, v.Column = yaml.ScalarNode, "!!null", keyLen+2
}

// nodeSlab hands out nodes from shared arrays.
type nodeSlab struct{ buf []yaml.Node }

func (a *nodeSlab) new() *yaml.Node {
	if len(a.buf) == cap(a.buf) {
		a.buf = make([]yaml.Node, 0, 16)
	}
	a.buf = a.buf[:len(a.buf)+1]
	return &a.buf[len(a.buf)-1]
}

// blockScalar fills v from s, the rest of a line after "key: " or "  - "
// at column col, if s is a one-line plain or quoted scalar we accept.
func blockScalar(v *yaml.Node, s string, line, col int) bool {
	if s == "" {
		return false
	}
	v.Kind, v.Line, v.Column = yaml.ScalarNode, line, col
	switch s[0] {
	case '\'':
		val, ok := singleQuoted(s)
		if !ok {
			return false
		}
		v.Tag, v.Value, v.Style = "!!str", val, yaml.SingleQuotedStyle
		return true
	case '"':
		val, ok := doubleQuoted(s)
		if !ok {
			return false
		}
		v.Tag, v.Value, v.Style = "!!str", val, yaml.DoubleQuotedStyle
		return true
	}
	if !plainStart(s) {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !safeRune(r) {
				return false
			}
			i += size
			continue
		}
		switch {
		case c == ':':
			// ": " starts a mapping, a final ':' a key: not one scalar.
			if i+1 == len(s) || s[i+1] == ' ' {
				return false
			}
		case c == ' ':
			if i+1 == len(s) {
				return false // yaml.v3 drops trailing spaces
			}
		case c == '#' || c < ' ' || c > '~':
			return false
		}
		i++
	}
	tag, ok := plainTag(s)
	if !ok {
		return false
	}
	v.Tag, v.Value = tag, s
	return true
}

// plainStart reports whether a plain scalar may start like s: a letter,
// digit, '_', '/' or '.', or '-' before a digit; never an indicator.
func plainStart(s string) bool {
	c := s[0]
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '/', c == '.':
		return true
	case c == '-':
		return len(s) > 1 && s[1] >= '0' && s[1] <= '9'
	}
	return false
}

// plainTag is the tag yaml.v3 gives plain scalar s, if it is one we
// accept: strings, canonical decimal ints, decimal floats with a
// fraction, true/false and RFC 3339 timestamps. Other floats (1e3, .5,
// .inf), other ints (0x1f, 0o17, 1_000, 012, +1), True/TRUE, ~, Null
// and the like are refused.
func plainTag(s string) (string, bool) {
	switch {
	case s == "true" || s == "false":
		return "!!bool", true
	case canonicalInt(s):
		return "!!int", true
	case decimalFloat(s):
		return "!!float", true
	case rfc3339Stamp(s):
		if schema.IsStamp(s) { // what time.Parse accepts, found faster
			return "!!timestamp", true
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return "", false // 2026-13-45...: not a time, and not surely a string
		}
		return "!!timestamp", true
	case mayNotBeString(s):
		return "", false
	}
	return "!!str", true
}

// canonicalInt reports whether s is 0 or -?[1-9][0-9]{0,17}.
func canonicalInt(s string) bool {
	v := strings.TrimPrefix(s, "-")
	if v == "" || len(v) > 18 || v[0] == '0' && (v != "0" || len(s) != 1) {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// decimalFloat reports whether s is -?(0|[1-9][0-9]*)\.[0-9]+, the way
// Go prints a float64 with a fraction (3.5, -0.25), at most 40 bytes.
func decimalFloat(s string) bool {
	v := strings.TrimPrefix(s, "-")
	dot := strings.IndexByte(v, '.')
	if len(v) > 40 || dot < 1 || dot == len(v)-1 || v[0] == '0' && dot != 1 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i != dot && (v[i] < '0' || v[i] > '9') {
			return false
		}
	}
	return true
}

// rfc3339Stamp reports whether s has the shape of RFC 3339 as Tavern
// writes it (schema.FormatTime): 2006-01-02T15:04:05, an optional
// fraction of 1 to 9 digits, and Z or a ±hh:mm offset.
func rfc3339Stamp(s string) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(shape)+1 {
		return false
	}
	for i := 0; i < len(shape); i++ {
		if shape[i] == 'd' && !isDigit(s[i]) || shape[i] != 'd' && s[i] != shape[i] {
			return false
		}
	}
	rest := s[len(shape):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 || n > 10 {
			return false
		}
		rest = rest[n:]
	}
	if rest == "Z" {
		return true
	}
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && isDigit(rest[1]) && isDigit(rest[2]) &&
		rest[3] == ':' && isDigit(rest[4]) && isDigit(rest[5])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// safeRune reports whether r, inside a scalar that ends its line, is
// read by yaml.v3 as an ordinary character: printable (its reader refuses
// control characters), not a line break (NEL, LS, PS), not a BOM.
func safeRune(r rune) bool {
	switch {
	case r == utf8.RuneError, r < 0xA0, r == 0x2028, r == 0x2029, r == 0xFEFF:
		return false
	case r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// singleQuoted decodes s, a whole single-quoted scalar ending its line.
func singleQuoted(s string) (string, bool) {
	if len(s) < 2 || s[len(s)-1] != '\'' {
		return "", false
	}
	body := s[1 : len(s)-1]
	esc := false
	for i := 0; i < len(body); {
		c := body[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(body[i:])
			if !safeRune(r) {
				return "", false
			}
			i += size
			continue
		}
		if c < ' ' || c > '~' {
			return "", false
		}
		if c == '\'' {
			// Only '' (an escaped quote) may appear inside.
			if i+1 == len(body) || body[i+1] != '\'' {
				return "", false
			}
			esc = true
			i += 2
			continue
		}
		i++
	}
	if esc {
		return strings.ReplaceAll(body, "''", "'"), true
	}
	return body, true
}

type literalText struct {
	value string
	size  int // bytes of src it spans
	lines int
}

// literal reads the content lines of a "key: |-" (or, clip, "key: |")
// block scalar at the start of src: one or more lines indented by two
// spaces (the first by exactly two), none blank, up to the next line
// that does not start with two spaces.
func literal(src string, clip bool) (literalText, bool) {
	var b strings.Builder
	var t literalText
	for t.size < len(src) && strings.HasPrefix(src[t.size:], "  ") {
		end := t.size + strings.IndexByte(src[t.size:], '\n')
		l := src[t.size+2 : end]
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		if strings.TrimLeft(l, " ") == "" || t.lines == 0 && l[0] == ' ' {
			return t, false
		}
		for i := 0; i < len(l); {
			c := l[i]
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRuneInString(l[i:])
				if !safeRune(r) {
					return t, false
				}
				i += size
				continue
			}
			if c < ' ' || c > '~' {
				return t, false
			}
			i++
		}
		if t.lines > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		t.lines++
		t.size = end + 1
	}
	if t.lines == 0 {
		return t, false
	}
	if clip {
		b.WriteByte('\n')
	}
	t.value = b.String()
	return t, true
}

// doubleQuoted decodes s, a whole double-quoted scalar ending its line,
// if it has no escapes: the encoder's "" and "true".
func doubleQuoted(s string) (string, bool) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", false
	}
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); {
		c := body[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(body[i:])
			if !safeRune(r) {
				return "", false
			}
			i += size
			continue
		}
		if c < ' ' || c > '~' || c == '"' || c == '\\' {
			return "", false
		}
		i++
	}
	return body, true
}

// flowList fills v from s, "[...]" ending the line at column col: []
// or plain scalars (letters, digits, _ . @ / + = -; no spaces) separated
// by ", ".
func flowList(a *nodeSlab, v *yaml.Node, s string, line, col int) bool {
	if len(s) < 2 || s[len(s)-1] != ']' {
		return false
	}
	v.Kind, v.Tag, v.Style, v.Line, v.Column = yaml.SequenceNode, "!!seq", yaml.FlowStyle, line, col
	body := s[1 : len(s)-1]
	if body == "" {
		return true
	}
	n := strings.Count(body, ", ") + 1
	v.Content = make([]*yaml.Node, 0, n)
	off := 1 // offset of the element in s
	for {
		e := body
		j := strings.IndexByte(body, ',')
		if j >= 0 {
			e = body[:j]
		}
		if e == "" || !plainStart(e) {
			return false
		}
		for i := 0; i < len(e); i++ {
			c := e[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
				c == '_' || c == '.' || c == '@' || c == '/' || c == '+' || c == '=' || c == '-') {
				return false
			}
		}
		tag, ok := plainTag(e)
		if !ok || tag == "!!timestamp" {
			return false
		}
		el := a.new()
		el.Kind, el.Tag, el.Value, el.Line, el.Column = yaml.ScalarNode, tag, e, line, col+off
		v.Content = append(v.Content, el)
		if j < 0 {
			return true
		}
		if j+1 == len(body) || body[j+1] != ' ' {
			return false
		}
		body = body[j+2:]
		off += j + 2
	}
}

// mayNotBeString reports whether a YAML resolver could read the plain
// scalar s as something other than a string. It errs on the side of yes
// (refusing costs only the fast path): true, false and null in any case,
// ~, anything starting like a number or a special float (.5, .inf,
// +1), a merge key, and digit-first values unless they are a UUID or
// hold a letter that no number, date or time in any base uses (as 5m0s
// does). Other values are strings for every YAML 1.2 resolver.
func mayNotBeString(s string) bool {
	if s == "" {
		return true
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", ".inf", ".nan":
		return true
	}
	c := s[0]
	switch {
	case c == '+' || c == '-' || c == '~' || c == '<' || c == '=':
		return true
	case c == '.':
		return len(s) > 1 && isDigit(s[1])
	case isDigit(c):
		if isUUID(s) {
			return false // hex groups and dashes: no number, no date (4 digits then '-')
		}
		for i := 0; i < len(s); i++ {
			if l := s[i] | 0x20; l >= 'a' && l <= 'z' && !strings.ContainsRune("abcdefotxz", rune(l)) {
				return false // 5m0s, 2h, 10k: no number or timestamp has these letters
			}
		}
		return true
	}
	return false
}

// isUUID reports whether s is 8-4-4-4-12 lowercase hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
