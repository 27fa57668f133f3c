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
		{"updated<2021", schema.Agent, false}, // a time field: as before
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
