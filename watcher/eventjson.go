package watcher

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The journal's encoder. Journal.Append runs on every engine mutation, and
// json.Marshal of an Event (reflection over the struct and the Data map)
// was a visible share of a queue worker's CPU. These functions append the
// same bytes json.Marshal(e) produces, without reflection for the common
// Data values (strings, integers, float64, bools, nil, nested maps and
// slices of those); any other value is encoded by json.Marshal itself.
// TestEventJSON and FuzzEventJSON hold the output byte-identical to
// json.Marshal, HTML escaping (<, >, & as \u003c...) included.

// jsonSafe[b] reports whether encoding/json copies the ASCII byte b into a
// string unescaped (its htmlSafeSet: the default Marshal escapes HTML).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json
// does: control characters, quote and backslash escaped, <, > and &
// escaped for HTML, U+2028 and U+2029 escaped for JSONP, invalid UTF-8
// replaced by \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip 8 plain bytes at a time: most of an event is paths and ids.
		for i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
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

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain8 reports whether none of the 8 bytes of s needs escaping: all are
// ASCII from 0x20 and none is a quote, backslash, <, > or &.
func plain8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	// zero: whether v has a zero byte; x&msb: non-ASCII; then below 0x20.
	zero := func(v uint64) uint64 { return (v - lsb) & ^v & msb }
	bad := x&msb | (x-0x20*lsb)&^x&msb |
		zero(x^('"'*lsb)) | zero(x^('\\'*lsb)) | zero(x^('<'*lsb)) | zero(x^('>'*lsb)) | zero(x^('&'*lsb))
	return bad == 0
}

// appendEventTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); a year outside [0,9999] is an error, as there.
func appendEventTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// appendEvent appends json.Marshal(e). The journal does not call it: it
// assembles the same pieces in two steps (appendEventBody in the caller,
// the id, writer and seq in the flusher); this is the reference both are
// tested against.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"time":`...)
	b, err := appendEventTime(b, e.Time)
	if err != nil {
		return nil, err
	}
	if e.Writer != "" {
		b = append(b, `,"writer":`...)
		b = appendJSONString(b, e.Writer)
	}
	if e.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, e.Seq, 10)
	}
	return appendEventTail(b, e)
}

// appendEventTail appends the fields after seq and the closing brace.
func appendEventTail(b []byte, e *Event) ([]byte, error) {
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	for _, f := range [...]struct{ name, v string }{
		{`,"kind":`, e.Kind},
		{`,"path":`, e.Path},
		{`,"rev":`, e.Rev},
		{`,"agent":`, e.Agent},
		{`,"parent":`, e.Parent},
		{`,"item":`, e.Item},
		{`,"queue":`, e.Queue},
	} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendJSONString(b, f.v)
		}
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		var err error
		if b, err = appendJSONMap(b, e.Data, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// maxInlineDepth bounds the recursion into nested maps and slices; deeper
// values go to json.Marshal, whose cycle detection turns a map that
// contains itself into an error rather than a stack overflow.
const maxInlineDepth = 32

// appendJSONMap appends m with its keys sorted, as encoding/json does.
func appendJSONMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendJSONValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxInlineDepth {
		return appendMarshal(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case float64:
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			return appendJSONFloat(b, v), nil
		}
		// Unsupported: json.Marshal below returns its error.
	case map[string]any:
		return appendJSONMap(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONValue(b, x, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	// Anything else (named types, structs, Marshalers, float32, other
	// slices and maps) is rare in events: encoding/json knows best.
	return appendMarshal(b, v)
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, js...), nil
}

// appendJSONFloat appends a finite f as encoding/json does (ES6 number
// formatting: exponent form below 1e-6 and from 1e21, exponent unpadded).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
