package agents

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
)

// WhereHints is the one rule of the warnings of a query's --where: a
// field or value of the kind that looks like a typo, and a name of a
// queue or an agent that names none but is near one. Every query path
// (ls, log, watch) asks it, so they warn alike.
func TestWhereHints(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "bob", Role: "coder"})
	mustAgent(t, m, AgentSpec{Name: "user-research", Role: "coder"})
	mustQueue(t, newBroker(t, m), "build", queues.QueueOptions{})

	tests := []struct {
		kind *schema.Kind
		expr string
		want string // the warning, "" for none
		what string // a *RefHintError's, "" for another hint
		near []string
		path string
	}{
		{schema.Item, "queue=biuld", `--where queue=biuld: no queue "biuld" (did you mean "build"?)`, "queue", []string{"build"}, "queues/biuld/queue.md"},
		{schema.Agent, "parent=bbo", `--where parent=bbo: no agent "bbo" (did you mean "bob"?)`, "agent", []string{"bob"}, "agents/bbo.md"},
		{nil, "claimed_by=user-reserch", `--where claimed_by=user-reserch: no agent "user-reserch" (did you mean "user-research"?)`, "agent", []string{"user-research"}, "agents/user-reserch.md"},
		{schema.Agent, "stat=idle", `--where stat=idle: "stat" is not a field of agent documents (did you mean "state"?)`, "", nil, ""},
		{schema.Item, "queue=build", "", "", nil, ""},
		{schema.Item, "queue=zzzz", "", "", nil, ""},      // near nothing: meant
		{schema.Item, "claimed_by=user", "", "", nil, ""}, // the person
		{schema.Item, "queue!=biuld", "", "", nil, ""},
		{nil, "stat=idle", "", "", nil, ""}, // no kind: no field to be near
	}
	for _, tt := range tests {
		c, err := docstore.ParseWhere(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		hints := WhereHints(m.Store, tt.kind, []docstore.Cond{c})
		if tt.want == "" {
			if len(hints) != 0 {
				t.Errorf("WhereHints(%s) = %v, want none", tt.expr, hints)
			}
			continue
		}
		if len(hints) != 1 {
			t.Fatalf("WhereHints(%s) = %v, want one", tt.expr, hints)
		}
		err = hints[0]
		if got := err.Error(); got != tt.want {
			t.Errorf("WhereHints(%s) = %q, want %q", tt.expr, got, tt.want)
		}
		var we *WhereHintError
		if !errors.As(err, &we) || we.Op != "where" || we.Cond != c {
			t.Errorf("WhereHints(%s) = %#v, want a *WhereHintError of the condition", tt.expr, err)
		}
		if !errors.Is(err, schema.ErrLikelyTypo) {
			t.Errorf("WhereHints(%s) = %v, want it to match schema.ErrLikelyTypo", tt.expr, err)
		}
		var re *RefHintError
		if got := errors.As(err, &re); got != (tt.what != "") {
			t.Errorf("WhereHints(%s) is a *RefHintError: %v, want %v", tt.expr, got, tt.what != "")
			continue
		}
		if re != nil && (re.What != tt.what || re.Path != tt.path || !slices.Equal(re.Near, tt.near)) {
			t.Errorf("WhereHints(%s) = %+v, want what %s, path %s, near %q", tt.expr, re, tt.what, tt.path, tt.near)
		}
	}
}

func TestAgentHint(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "bob", Role: "coder"})
	for _, tt := range []struct {
		name string
		near []string // nil: no hint
	}{
		{"bobb", []string{"bob"}},
		{"bob", nil},
		{"user", nil}, // the person
		{"", nil},
		{"zzzzzz", nil}, // near none: taken as meant
	} {
		err := AgentHint(m.Store, "--agent", tt.name)
		var hint *RefHintError
		if tt.near == nil {
			if err != nil {
				t.Errorf("AgentHint(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if !errors.As(err, &hint) || !errors.Is(err, schema.ErrLikelyTypo) {
			t.Fatalf("AgentHint(%q) = %v, want a *RefHintError", tt.name, err)
		}
		if got, want := hint.Op, "--agent"; got != want {
			t.Errorf("Op = %q, want %q", got, want)
		}
		if got, want := strings.Join(hint.Near, ","), strings.Join(tt.near, ","); got != want {
			t.Errorf("AgentHint(%q).Near = %s, want %s", tt.name, got, want)
		}
	}
}
