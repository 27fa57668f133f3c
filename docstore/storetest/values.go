package storetest

import (
	"math"
	"math/rand/v2"
	"strings"
)

// HardStrings are strings that every JSON or YAML writer must get right:
// quotes, backslashes, control characters, HTML, multi-byte and invalid
// UTF-8, the line separators JavaScript chokes on, a long one.
var HardStrings = []string{"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f", "<html>&amp;", "é ü 日本",
	"\u2028\u2029", "bad \xff utf8 \xc3", "emoji 😀", strings.Repeat("x", 300)}

// FrontmatterValue returns a random value of the types a document's
// frontmatter decodes to (nil, bools, ints, int64, uint64, floats,
// strings from HardStrings, lists and maps nested up to depth 3). Each
// of other, if any, is returned now and then, at any depth: values of
// types frontmatter does not have, for code that must fall back on them.
func FrontmatterValue(r *rand.Rand, depth int, other ...any) any {
	n := r.IntN(11 + len(other))
	if n >= 11 {
		return other[n-11]
	}
	switch {
	case n == 0:
		return nil
	case n == 1:
		return r.IntN(2) == 0
	case n == 2:
		return r.IntN(2000) - 1000
	case n == 3:
		return int64(r.Uint64())
	case n == 4:
		return r.Uint64()
	case n == 5:
		return []float64{0, 1.5, -2.25, 1e21, 1e-7, 123456789.125, 1e20, 5e-324, math.MaxFloat64, 0.000001}[r.IntN(10)]
	case n == 6 && depth < 3:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = FrontmatterValue(r, depth+1, other...)
		}
		return l
	case n == 7 && depth < 3:
		m := map[string]any{}
		for range r.IntN(4) {
			m[HardStrings[r.IntN(len(HardStrings))]] = FrontmatterValue(r, depth+1, other...)
		}
		return m
	default:
		return HardStrings[r.IntN(len(HardStrings))]
	}
}
