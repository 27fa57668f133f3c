package docstore

import (
	"errors"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

func TestCondCheckKind(t *testing.T) {
	tests := []struct {
		expr string
		kind *schema.Kind
		bad  bool
	}{
		{"spawns<abc", schema.Agent, true},
		{"spawns>=", schema.Agent, true},
		{"priority>high", schema.Item, true},
		{"spawns<3", schema.Agent, false},
		{"spawns<-1.5", schema.Agent, false},
		{"spawns=abc", schema.Agent, false}, // equality: a value like any
		{"spawns~a", schema.Agent, false},
		{"role<m", schema.Agent, false},       // text orders as text
		{"mine<abc", schema.Agent, false},     // not the kind's: a document's own
		{"spawns<abc", nil, false},            // no kind: nothing to go by
		{"updated<2021", schema.Agent, false}, // a year: its first instant
		{"updated>=2026-11", schema.Agent, false},
		{"updated<2026-13", schema.Agent, true},
		{"updated>yesterday", schema.Agent, true},
		{"created<=", schema.Agent, true},
		{"lease_until<soon", schema.Item, true},
		{"updated<2021-01-01", schema.Agent, false},
		{"updated>=2026-11-26T10:00:00Z", schema.Agent, false},
		{"updated<2026-11-26T10:00:00.123+02:00", schema.Agent, false},
		{"updated=yesterday", schema.Agent, false}, // equality: a value like any
		{"updated~2020", schema.Agent, false},
	}
	for _, tt := range tests {
		c, err := ParseWhere(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckKind(tt.kind)
		if got := errors.Is(err, ErrBadExpr); got != tt.bad {
			t.Errorf("CheckKind(%q) = %v, want refused: %v", tt.expr, err, tt.bad)
		}
	}
}

// A refused --where expression is an *ExprError: what was asked (Op), of
// which kind's documents (Path), the expression and field, matched with
// errors.Is by ErrBadExpr, and by ErrBadBound when it parses but its bound
// is of no type the field can be ordered by.
func TestCondCheckKindError(t *testing.T) {
	c, err := ParseWhere("spawns<abc")
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckKind(schema.Agent)
	var ee *ExprError
	if !errors.As(err, &ee) {
		t.Fatalf("CheckKind = %#v, want an *ExprError", err)
	}
	if !errors.Is(err, ErrBadExpr) || !errors.Is(err, ErrBadBound) {
		t.Errorf("CheckKind = %v, want it to match ErrBadExpr and ErrBadBound", err)
	}
	if got, want := *ee, (ExprError{Op: "where", Path: "agents", Expr: "spawns<abc", Field: "spawns", Why: ee.Why, Err: ErrBadBound}); got != want {
		t.Errorf("ExprError = %+v, want %+v", got, want)
	}
	if got, want := err.Error(), `bad --where expression "spawns<abc": spawns is an int field of agent documents, and "abc" is no number: it would match nothing`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}

	_, err = ParseWhere("=x")
	if !errors.As(err, &ee) || ee.Op != "where" || ee.Expr != "=x" || !errors.Is(err, ErrBadExpr) || errors.Is(err, ErrBadBound) {
		t.Errorf("ParseWhere(%q) = %#v, want an *ExprError of ErrBadExpr only", "=x", err)
	}
}
