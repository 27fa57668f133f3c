package tuples

import (
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/docstore"
)

// Term is one field test of a tuple pattern. It is a docstore condition
// (field=value, field!=value, field<N, field<=N, field>N, field>=N,
// field~text, field?) or a formal, field=?, which matches any present,
// non-null value and captures it.
type Term struct {
	docstore.Cond
	Formal bool
}

func (t Term) String() string {
	if t.Formal {
		return t.Field + "=?"
	}
	if t.Op == docstore.OpEq && t.Value == "?" {
		return t.Field + `=\?`
	}
	return t.Cond.String()
}

// Pattern is a Linda template over a tuple's frontmatter: every term must
// match. The empty pattern matches every tuple of a type.
type Pattern []Term

func (p Pattern) String() string {
	parts := make([]string, len(p))
	for i, t := range p {
		parts[i] = t.String()
	}
	return strings.Join(parts, " ")
}

// ParseTerm parses one pattern term. The expression grammar is
// docstore.ParseWhere's; on top of it "field=?" is a formal and
// "field=\?" matches the literal value "?".
func ParseTerm(s string) (Term, error) {
	c, err := docstore.ParseWhere(s)
	if err != nil {
		return Term{}, fmt.Errorf("%w: %w", ErrBadPattern, err)
	}
	if c.Op == docstore.OpEq {
		switch c.Value {
		case "?":
			return Term{Cond: docstore.Cond{Field: c.Field, Op: docstore.OpExists}, Formal: true}, nil
		case `\?`:
			c.Value = "?"
		}
	}
	return Term{Cond: c}, nil
}

// ParsePattern parses pattern terms as given on a command line.
func ParsePattern(args []string) (Pattern, error) {
	p := make(Pattern, 0, len(args))
	for _, a := range args {
		t, err := ParseTerm(a)
		if err != nil {
			return nil, err
		}
		p = append(p, t)
	}
	return p, nil
}

// Match reports whether decoded frontmatter satisfies every term, and
// returns the values of the formals (nil when there are none).
func (p Pattern) Match(fields map[string]any) (captures map[string]any, ok bool) {
	for _, t := range p {
		if !t.Cond.Match(fields) {
			return nil, false
		}
		if t.Formal {
			v, _ := docstore.Lookup(fields, t.Field)
			if captures == nil {
				captures = map[string]any{}
			}
			captures[t.Field] = v
		}
	}
	return captures, true
}
