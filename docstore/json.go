package docstore

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// JSON of field values without reflection: `ls --json` over a few
// thousand documents spent a third of its time in encoding/json
// (reflection over map[string]any, then re-indenting the whole output).

// AppendJSON appends v as encoding/json (MarshalIndent with two-space
// steps, HTML not escaped) writes it at indent, the indentation of the
// line v starts on. Map keys are sorted. Frontmatter's types (strings,
// numbers, booleans, lists, maps) are written without reflection; any
// other goes through encoding/json. JSON has no NaN or infinities, which
// YAML has (.nan, .inf, -.inf: a hand edit or `tavern set f=.nan` writes
// them): they are written as those YAML spellings, quoted, where
// encoding/json fails, because one such document must not stop `ls
// --json` from listing every other.
func AppendJSON(b []byte, v any, indent string) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return append(b, `".nan"`...), nil
		case math.IsInf(x, 1):
			return append(b, `".inf"`...), nil
		case math.IsInf(x, -1):
			return append(b, `"-.inf"`...), nil
		}
		return appendJSONFloat(b, x), nil
	case []any:
		if len(x) == 0 {
			return append(b, "[]"...), nil
		}
		inner := indent + "  "
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			var err error
			if b, err = AppendJSON(b, e, inner); err != nil {
				return nil, err
			}
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, ']'), nil
	case map[string]any:
		if len(x) == 0 {
			return append(b, "{}"...), nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		inner := indent + "  "
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			b = AppendJSONString(b, k)
			b = append(b, ": "...)
			var err error
			if b, err = AppendJSON(b, x[k], inner); err != nil {
				return nil, err
			}
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, '}'), nil
	}
	// Anything else, as encoding/json writes it.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, indent, "  "); err != nil {
		return nil, err
	}
	return append(b, buf.Bytes()...), nil
}

// appendJSONFloat formats like encoding/json: 'f' unless the exponent is
// very small or large, and e-09 written e-9.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// AppendJSONString quotes s as encoding/json does without HTML escaping.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: a listing's
		// strings are mostly plain ASCII, and this loop wrote a third of
		// `ls --json`'s output time byte by byte.
		for i+8 <= len(s) {
			w := s[i : i+8]
			if !plainWord(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56) {
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainWord reports whether the 8 bytes of x are ASCII that JSON writes
// as they are: none is a control character, '"', '\\' or >= 0x80.
// (v - ones) & ^v & highs is nonzero iff some byte of v is zero; with
// 0x20 in place of 1, iff some byte is below 0x20 (exact for bytes below
// 0x80; x & highs catches the others).
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := x^'"'*ones, x^'\\'*ones // zero bytes where x has '"', '\\'
	return ((x-0x20*ones)&^x|(q-ones)&^q|(bs-ones)&^bs|x)&highs == 0
}
