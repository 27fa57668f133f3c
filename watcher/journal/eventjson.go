package journal

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tavernhq/tavern/schema"
)

// The journal's encoder. Journal.Append runs on every engine mutation, and
// json.Marshal of an Event (reflection over the struct and the Data map)
// was a visible share of a queue worker's CPU. These functions append the
// same bytes json.Marshal(e) produces, without reflection for the common
// Data values (strings, integers, float64, bools, nil, nested maps and
// slices of those); any other value is encoded by json.Marshal itself.
// TestEventJSON and FuzzEventJSON hold the output byte-identical to
// json.Marshal, HTML escaping (<, >, & as \u003c...) included.

// asciiEscape[b] is what an ASCII byte b becomes inside a JSON string
// as encoding/json writes it by default: "" for bytes copied as they are;
// two-character escapes for quote, backslash, \n, \r, \t, \b and \f;
// \u00XX for the other control bytes and for <, > and & (HTML-safe).
var asciiEscape = func() (t [utf8.RuneSelf]string) {
	short := map[byte]string{'"': `\"`, '\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\b': `\b`, '\f': `\f`}
	for b := 0; b < utf8.RuneSelf; b++ {
		switch e, ok := short[byte(b)]; {
		case ok:
			t[b] = e
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = fmt.Sprintf(`\u%04x`, b)
		}
	}
	return t
}()

// appendJSONString appends s as a JSON string, byte for byte what
// encoding/json writes: see asciiEscape; invalid UTF-8 becomes \ufffd,
// and U+2028 and U+2029 are escaped (for JSONP).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for len(s) > 0 {
		// Copy the longest run that needs nothing, 8 bytes at a time
		// where it can (most of an event is paths and ids).
		n := 0
		for n+8 <= len(s) && plain8(s[n:n+8]) {
			n += 8
		}
		for n < len(s) && s[n] < utf8.RuneSelf && asciiEscape[s[n]] == "" {
			n++
		}
		if n == len(s) {
			return append(append(b, s...), '"')
		}
		b, s = append(b, s[:n]...), s[n:]
		if c := s[0]; c < utf8.RuneSelf {
			b, s = append(b, asciiEscape[c]...), s[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028':
			b = append(b, `\u2028`...)
		case r == '\u2029':
			b = append(b, `\u2029`...)
		default:
			b = append(b, s[:size]...)
		}
		s = s[size:]
	}
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

// appendEventTime appends t as schema.Timestamp's JSON does (the engine's
// one time format, RFC 3339 in UTC with milliseconds, quoted); a year
// outside [0,9999] is an error, as there.
func appendEventTime(b []byte, t time.Time) ([]byte, error) {
	return schema.AppendTimeJSON(b, t)
}

// appendEvent appends json.Marshal(e). The journal does not call it: it
// assembles the same pieces in two steps (appendEventBody in the caller,
// the id, writer and seq in the flusher); this is the reference both are
// tested against.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"time":`...)
	b, err := appendEventTime(b, e.Time.Time)
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

// appendJSONFloat appends a finite f the way encoding/json and
// JavaScript print numbers: positional notation from 1e-6 up to (not
// including) 1e21, exponent notation outside that, with the shortest
// digits that read back as f and no leading zero in the exponent.
func appendJSONFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); a == 0 || a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	e := strconv.AppendFloat(nil, f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(string(e), "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return append(append(append(append(b, mant...), 'e'), sign...), digits...)
}
