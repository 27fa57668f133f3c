package tuples

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Glob is a path pattern for reservations, relative to the project root
// (the directory holding .tavern/), with slash separators:
//
//   - any run of characters within one path segment
//     ?       one character other than /
//     [a-z]   a character class ([!x] or [^x] negates); never matches /
//     **      as a whole segment: any number of segments ("src/**/*.go"
//     matches src/a.go and src/a/b/c.go; "src/**" everything under src)
//     \x      the character x itself
//     dir/    shorthand for dir/**
//
// Braces are not special. Two globs overlap when some path matches both;
// that is decided exactly (intersection of the two automata), so
// "src/**/*.go", "src/a/b.go" and "src/a/*" all overlap each other while
// "src/*.go" and "src/a/*.go" do not.
type Glob struct {
	src string
	nfa *nfa
}

// MaxGlobLen bounds a glob's length; the overlap check is quadratic in it.
const MaxGlobLen = 512

// ParseGlob parses and normalises a reservation glob.
func ParseGlob(s string) (Glob, error) {
	bad := func(why string) (Glob, error) {
		return Glob{}, fmt.Errorf("%w %q: %s", ErrBadGlob, s, why)
	}
	norm := strings.TrimSpace(s)
	for strings.HasPrefix(norm, "./") {
		norm = strings.TrimLeft(norm[2:], "/")
	}
	switch {
	case norm == "" || norm == ".":
		return bad("empty")
	case len(norm) > MaxGlobLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxGlobLen))
	case !utf8.ValidString(norm) || strings.ContainsRune(norm, 0):
		return bad("not valid UTF-8 text")
	case strings.HasPrefix(norm, "/"):
		return bad("absolute; globs are relative to the project root")
	}
	if strings.HasSuffix(norm, "/") {
		norm = strings.TrimRight(norm, "/") + "/**"
	}
	for _, seg := range strings.Split(norm, "/") {
		switch seg {
		case "":
			return bad("empty path segment (//)")
		case ".", "..":
			return bad("'.' and '..' segments are not allowed")
		}
	}
	n, err := compileGlob(norm, false)
	if err != nil {
		return bad(err.Error())
	}
	return Glob{src: norm, nfa: n}, nil
}

// globPrefix is the literal start of a glob as ParseGlob normalises it:
// every path it matches begins with it (matching is anchored at the
// start, and literal characters match only themselves), so a path that
// does not begin with it cannot match.
func globPrefix(s string) string {
	norm := strings.TrimSpace(s)
	for strings.HasPrefix(norm, "./") {
		norm = strings.TrimLeft(norm[2:], "/")
	}
	if i := strings.IndexAny(norm, "*?[\\"); i >= 0 {
		return norm[:i]
	}
	return norm
}

// MustGlob is ParseGlob for literals in tests and examples.
func MustGlob(s string) Glob {
	g, err := ParseGlob(s)
	if err != nil {
		panic(err)
	}
	return g
}

func (g Glob) String() string { return g.src }

// Match reports whether the slash-separated relative path matches g.
func (g Glob) Match(path string) bool {
	if g.nfa == nil {
		return false
	}
	lit, _ := compileGlob(path, true)
	return intersects(g.nfa, lit)
}

// Overlaps reports whether some path matches both g and o. It is
// symmetric.
func (g Glob) Overlaps(o Glob) bool {
	if g.nfa == nil || o.nfa == nil {
		return false
	}
	return intersects(g.nfa, o.nfa)
}

// A label is the set of characters an NFA edge consumes.
type label struct {
	kind   byte // 'l' literal, 'n' any but '/', 'a' any, 'c' class
	r      rune
	ranges [][2]rune
	neg    bool
}

func (l *label) accepts(r rune) bool {
	switch l.kind {
	case 'l':
		return r == l.r
	case 'n':
		return r != '/'
	case 'a':
		return true
	}
	if r == '/' {
		return false
	}
	in := false
	for _, rg := range l.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != l.neg
}

// boundaries are the characters where l's membership can change: a
// non-empty intersection of two labels always contains one of the
// boundaries of either (every label is a finite union of intervals).
func (l *label) boundaries(out []rune) []rune {
	switch l.kind {
	case 'l':
		return append(out, l.r, l.r+1)
	case 'n':
		return append(out, '/', '/'+1)
	case 'a':
		return append(out, 1)
	}
	out = append(out, 1, '/', '/'+1)
	for _, rg := range l.ranges {
		out = append(out, rg[0], rg[1]+1)
	}
	return out
}

func overlapLabels(a, b *label) bool {
	if a.kind == 'l' {
		return b.accepts(a.r)
	}
	if b.kind == 'l' {
		return a.accepts(b.r)
	}
	var cand [16]rune
	for _, r := range b.boundaries(a.boundaries(cand[:0])) {
		if r > 0 && r <= utf8.MaxRune && a.accepts(r) && b.accepts(r) {
			return true
		}
	}
	return false
}

type edge struct {
	to  int
	lab *label // nil: epsilon
}

// nfa is a Thompson-style automaton; state 0 starts, final accepts.
type nfa struct {
	edges [][]edge
	final int
}

func (n *nfa) ensure(st int) {
	for len(n.edges) <= st {
		n.edges = append(n.edges, nil)
	}
}

func (n *nfa) add(from, to int, l *label) {
	n.ensure(max(from, to))
	n.edges[from] = append(n.edges[from], edge{to: to, lab: l})
}

var (
	labNonSlash = &label{kind: 'n'}
	labAny      = &label{kind: 'a'}
	labSlash    = &label{kind: 'l', r: '/'}
)

// compileGlob builds the automaton of a normalised glob, or of a literal
// path when literal is set.
func compileGlob(s string, literal bool) (*nfa, error) {
	n := &nfa{}
	st := 0
	n.ensure(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if literal {
			n.add(st, st+1, &label{kind: 'l', r: c})
			st++
			continue
		}
		segStart := i == 0 || rs[i-1] == '/'
		switch c {
		case '*':
			j := i
			for j < len(rs) && rs[j] == '*' {
				j++
			}
			double := j-i >= 2 && segStart && (j == len(rs) || rs[j] == '/')
			i = j - 1
			switch {
			case double && j < len(rs): // "**/": zero or more whole segments
				n.add(st, st+2, nil)
				n.add(st, st+1, nil)
				n.add(st+1, st+1, labAny)
				n.add(st+1, st+2, labSlash)
				st += 2
				i++ // the '/' is consumed
			case double: // trailing "**": anything below
				n.add(st, st+1, nil)
				n.add(st+1, st+1, labAny)
				n.add(st+1, st+2, nil)
				st += 2
			default:
				n.add(st, st+1, nil)
				n.add(st+1, st+1, labNonSlash)
				n.add(st+1, st+2, nil)
				st += 2
			}
		case '?':
			n.add(st, st+1, labNonSlash)
			st++
		case '[':
			l, next, err := parseClass(rs, i)
			if err != nil {
				return nil, err
			}
			n.add(st, st+1, l)
			st++
			i = next - 1
		case '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("trailing backslash")
			}
			i++
			n.add(st, st+1, &label{kind: 'l', r: rs[i]})
			st++
		default:
			n.add(st, st+1, &label{kind: 'l', r: c})
			st++
		}
	}
	n.ensure(st)
	n.final = st
	return n, nil
}

// parseClass parses the class starting at rs[i] == '[' and returns the
// index after its closing ']'.
func parseClass(rs []rune, i int) (*label, int, error) {
	l := &label{kind: 'c'}
	j := i + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		l.neg = true
		j++
	}
	char := func() (rune, error) {
		if j >= len(rs) {
			return 0, fmt.Errorf("unterminated character class")
		}
		c := rs[j]
		if c == '\\' {
			j++
			if j >= len(rs) {
				return 0, fmt.Errorf("unterminated character class")
			}
			c = rs[j]
		} else if c == '/' {
			return 0, fmt.Errorf("'/' in a character class")
		}
		j++
		return c, nil
	}
	for first := true; ; first = false {
		if j >= len(rs) {
			return nil, 0, fmt.Errorf("unterminated character class")
		}
		if rs[j] == ']' && !first {
			return l, j + 1, nil
		}
		if rs[j] == ']' {
			return nil, 0, fmt.Errorf("empty character class")
		}
		lo, err := char()
		if err != nil {
			return nil, 0, err
		}
		hi := lo
		if j+1 < len(rs) && rs[j] == '-' && rs[j+1] != ']' {
			j++
			if hi, err = char(); err != nil {
				return nil, 0, err
			}
			if hi < lo {
				return nil, 0, fmt.Errorf("character range %c-%c is reversed", lo, hi)
			}
		}
		l.ranges = append(l.ranges, [2]rune{lo, hi})
	}
}

// intersects reports whether some string is accepted by both automata:
// reachability of (final, final) in their product.
func intersects(a, b *nfa) bool {
	nb := len(b.edges)
	seen := make([]bool, len(a.edges)*nb)
	stack := []int32{0}
	seen[0] = true
	push := func(p, q int) {
		k := p*nb + q
		if !seen[k] {
			seen[k] = true
			stack = append(stack, int32(k))
		}
	}
	for len(stack) > 0 {
		k := int(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		p, q := k/nb, k%nb
		if p == a.final && q == b.final {
			return true
		}
		ea, eb := a.edges[p], b.edges[q]
		for _, x := range ea {
			if x.lab == nil {
				push(x.to, q)
				continue
			}
			for _, y := range eb {
				if y.lab != nil && overlapLabels(x.lab, y.lab) {
					push(x.to, y.to)
				}
			}
		}
		for _, y := range eb {
			if y.lab == nil {
				push(p, y.to)
			}
		}
	}
	return false
}
