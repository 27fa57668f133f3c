package docstore

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// Op is a comparison in a --where expression.
type Op string

// The comparison operators, longest first for parsing.
const (
	OpNe     Op = "!="
	OpLe     Op = "<="
	OpGe     Op = ">="
	OpEq     Op = "="
	OpLt     Op = "<"
	OpGt     Op = ">"
	OpHas    Op = "~"
	OpExists Op = "?"
)

var ops = []Op{OpNe, OpLe, OpGe, OpEq, OpLt, OpGt, OpHas}

// Cond is one parsed --where expression: field OP value, or field? .
// Field may be dotted to reach into mappings (bookmarks.general).
type Cond struct {
	Field string
	Op    Op
	Value string
}

func (c Cond) String() string {
	if c.Op == OpExists {
		return c.Field + "?"
	}
	// A value after < or > that starts with = would read back as <= or
	// >=: a space keeps them apart (ParseWhere trims it).
	if (c.Op == OpLt || c.Op == OpGt) && strings.HasPrefix(c.Value, "=") {
		return c.Field + string(c.Op) + " " + c.Value
	}
	return c.Field + string(c.Op) + c.Value
}

// ParseWhere parses "field=value", "field!=value", "field<N", "field<=N",
// "field>N", "field>=N", "field~substring" or "field?". Spaces around the
// field and the value are not theirs ("state = idle" is state=idle):
// the syntax has no quoting, and a value read as " idle" matches nothing.
func ParseWhere(expr string) (Cond, error) {
	bad := func(why string) (Cond, error) {
		return Cond{}, &ExprError{Op: "where", Expr: expr, Why: why + " (want field=value, field!=value, field<N, field>=N, field~text or field?)"}
	}
	if f, ok := strings.CutSuffix(strings.TrimSpace(expr), "?"); ok && validField(strings.TrimSpace(f)) {
		return Cond{Field: strings.TrimSpace(f), Op: OpExists}, nil
	}
	best, bestOp := -1, Op("")
	for _, op := range ops {
		if i := strings.Index(expr, string(op)); i >= 0 && (best < 0 || i < best || (i == best && len(op) > len(bestOp))) {
			best, bestOp = i, op
		}
	}
	if best < 0 {
		return bad("no operator")
	}
	c := Cond{Field: strings.TrimSpace(expr[:best]), Op: bestOp, Value: strings.TrimSpace(expr[best+len(bestOp):])}
	if !validField(c.Field) {
		return bad("missing or invalid field name")
	}
	return c, nil
}

// CheckKind checks c against the fields kind k declares: an ordering
// (< <= > >=) of an int or number field by a bound that is no number, or
// of a time field by one that is no time (schema.ParseTime: RFC 3339, or
// a date), is refused with an *ExprError (ErrBadExpr, ErrBadBound): the
// first would match no valid document (compare never orders a number
// against text), the second would compare the times as text. Text
// fields order as text, and fields k does not declare (a document's
// own) are not checked.
func (c Cond) CheckKind(k *schema.Kind) error {
	if k == nil {
		return nil
	}
	switch c.Op {
	case OpLt, OpLe, OpGt, OpGe:
	default:
		return nil
	}
	f := k.Field(c.Field)
	if f == nil {
		return nil
	}
	if f.Type == schema.Time {
		if _, err := timeBound(c.Value); err == nil {
			return nil
		}
		return &ExprError{Op: "where", Path: k.Plural, Expr: c.String(), Field: c.Field, Err: ErrBadBound,
			Why: fmt.Sprintf("%s is a time field of %s documents, and %q is no time (RFC 3339 such as 2026-11-26T10:00:00Z, a date such as 2026-11-26, or a month 2026-11 or year 2026): it would be compared as text", c.Field, k.Name, c.Value)}
	}
	if f.Type != schema.Int && f.Type != schema.Number {
		return nil
	}
	if _, err := strconv.ParseFloat(c.Value, 64); err == nil {
		return nil
	}
	an := "a"
	if f.Type == schema.Int {
		an = "an"
	}
	return &ExprError{Op: "where", Path: k.Plural, Expr: c.String(), Field: c.Field, Err: ErrBadBound,
		Why: fmt.Sprintf("%s is %s %s field of %s documents, and %q is no number: it would match nothing", c.Field, an, f.Type, k.Name, c.Value)}
}

func validField(f string) bool {
	if f == "" {
		return false
	}
	for _, part := range strings.Split(f, ".") {
		if part == "" || strings.ContainsAny(part, " \t=!<>~?") {
			return false
		}
	}
	return true
}

// Lookup finds a dotted field in decoded frontmatter.
func Lookup(fields map[string]any, field string) (any, bool) {
	if !strings.Contains(field, ".") {
		v, ok := fields[field]
		return v, ok
	}
	var cur any = fields
	for _, part := range strings.Split(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Match reports whether decoded frontmatter satisfies the condition. A
// list matches = and ~ if any entry does, and != if none does.
func (c Cond) Match(fields map[string]any) bool {
	v, ok := Lookup(fields, c.Field)
	if c.Op == OpExists {
		return ok && v != nil
	}
	if list, isList := v.([]any); isList {
		hit := false
		for _, e := range list {
			if (Cond{Field: "v", Op: c.Op, Value: c.Value}).Match(map[string]any{"v": e}) != (c.Op == OpNe) {
				hit = true
				break
			}
		}
		if c.Op == OpNe {
			return !hit
		}
		return hit
	}
	if !ok || v == nil {
		return c.MatchScalar("", false)
	}
	return c.MatchScalar(scalarString(v), true)
}

// MatchScalar is Match for a scalar value in its text form (a number as
// strconv.FormatFloat(x, 'f', -1, 64) or its decimal digits, a boolean
// as true/false); present false means the field is missing or null.
// Projections that keep fields encoded match with it without decoding.
func (c Cond) MatchScalar(s string, present bool) bool {
	if c.Op == OpExists {
		return present
	}
	if !present {
		return c.Op == OpNe && c.Value != ""
	}
	switch c.Op {
	case OpEq:
		return s == c.Value
	case OpNe:
		return s != c.Value
	case OpHas:
		return strings.Contains(strings.ToLower(s), strings.ToLower(c.Value))
	}
	cmp, ok := compare(s, c.Value)
	if !ok {
		return false
	}
	switch c.Op {
	case OpLt:
		return cmp < 0
	case OpLe:
		return cmp <= 0
	case OpGt:
		return cmp > 0
	case OpGe:
		return cmp >= 0
	}
	return false
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case time.Time:
		return schema.FormatTime(x)
	}
	return fmt.Sprint(v)
}

// compare orders two values as numbers, then as timestamps (b may be a
// timeBound: updated<2026 is a time, not the number 2026), then as text.
func compare(a, b string) (int, bool) {
	x, errA := strconv.ParseFloat(a, 64)
	if errA == nil {
		if y, err := strconv.ParseFloat(b, 64); err == nil {
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	if x, err := schema.ParseTime(a); err == nil {
		if y, err := timeBound(b); err == nil {
			return x.Compare(y), true
		}
	}
	return strings.Compare(a, b), true
}

// timeBound is a bound an ordering compares a time with: what
// schema.ParseTime takes, or a month (2026-11) or a year (2026), each
// its first instant in UTC, so that updated>=2026-11 is "since
// November". A document's own time fields take only ParseTime's forms.
func timeBound(s string) (time.Time, error) {
	t, err := schema.ParseTime(s)
	if err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01", "2006"} {
		if t, perr := time.Parse(layout, s); perr == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// SortBy sorts items by a field of their frontmatter; a leading "-"
// reverses. Missing values sort last; ties keep their order.
func SortBy[T any](items []T, field string, fields func(T) map[string]any) {
	desc := strings.HasPrefix(field, "-")
	field = strings.TrimPrefix(field, "-")
	sort.SliceStable(items, func(i, j int) bool {
		a, okA := Lookup(fields(items[i]), field)
		b, okB := Lookup(fields(items[j]), field)
		if !okA || a == nil {
			return false
		}
		if !okB || b == nil {
			return true
		}
		c, ok := compare(scalarString(a), scalarString(b))
		if !ok {
			c = strings.Compare(scalarString(a), scalarString(b))
		}
		if desc {
			return c > 0
		}
		return c < 0
	})
}
