package tuples

import (
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
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
// "field=\?" matches the literal value "?". A tuple type declares no
// fields of its own, but every tuple has the tuple kind's (created,
// updated, expires: times): an ordering of one by a bound that is no
// time is refused (docstore.Cond.CheckKind), as it would compare as
// text and match all or nothing (an In that waits for ever). Each error
// is a *PatternError.
func ParseTerm(s string) (Term, error) {
	c, err := docstore.ParseWhere(s)
	if err == nil {
		err = c.CheckKind(schema.Tuple)
	}
	if err != nil {
		return Term{}, &PatternError{Op: "parse", Path: "tuples", Term: s, Err: err}
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
