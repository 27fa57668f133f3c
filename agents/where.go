package agents

import (
	"iter"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// WhereHints are the warnings of a query's --where conditions (ls, log,
// watch: every path that takes them asks here, so all warn alike), in the
// order of conds, each a *WhereHintError: a field kind k has not but is
// one letter from one it has, or a value outside a field's enum
// (schema.Kind.FieldHint; none when k is nil), and a value of a field
// that names a queue or an agent that names none but is near one
// (*RefHintError). Each most likely makes the answer empty by a typo;
// the query still runs as given (a document may carry fields of its own,
// a name near none is taken as meant).
func WhereHints(s *docstore.Store, k *schema.Kind, conds []docstore.Cond) []error {
	var hints []error
	path := ""
	if k != nil {
		path = k.Plural
	}
	for _, c := range conds {
		if k != nil {
			if err := k.FieldHint(c.Field, c.Value, c.Op == docstore.OpEq); err != nil {
				hints = append(hints, &WhereHintError{Op: "where", Path: path, Cond: c, Err: err})
			}
		}
		if err := refHint(s, c); err != nil {
			hints = append(hints, &WhereHintError{Op: "where", Path: path, Cond: c, Err: err})
		}
	}
	return hints
}

// AgentHint is the *RefHintError of an agent name a filter gives (log
// --agent, watch --parent; op names it) that names no agent but is near
// one, else nil: the rule of WhereHints's agent=NAME, for flags.
func AgentHint(s *docstore.Store, op, name string) error {
	err := refHint(s, docstore.Cond{Field: "agent", Op: docstore.OpEq, Value: name})
	if r, ok := err.(*RefHintError); ok {
		r.Op = op
	}
	return err
}

// refHint is the *RefHintError of FIELD=VALUE where the field names a
// queue (queue) or an agent (agent, claimed_by, parent) and VALUE names
// none but is near one (queue=biuld beside build), else nil.
func refHint(s *docstore.Store, c docstore.Cond) error {
	if c.Op != docstore.OpEq || c.Value == "" {
		return nil
	}
	var what, dir string
	switch c.Field {
	case "queue":
		what, dir = "queue", "queues"
	case "agent", "claimed_by", "parent":
		if c.Value == Person { // the person: no agent document
			return nil
		}
		what, dir = "agent", "agents"
	default:
		return nil
	}
	abs, err := s.Abs(dir)
	if err != nil {
		return nil
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if what == "agent" {
			var ok bool
			if name, ok = strings.CutSuffix(name, ".md"); !ok {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		if name == c.Value {
			return nil
		}
		names = append(names, name)
	}
	near := schema.Near(c.Value, names)
	if len(near) == 0 {
		return nil
	}
	path := dir + "/" + c.Value + "/queue.md"
	if what == "agent" {
		path = dir + "/" + c.Value + ".md"
	}
	return &RefHintError{Op: "where", Path: path, What: what, Name: c.Value, Near: near}
}

// SortHint is the warning of a sort by a field that nothing listed has (a
// *SortHintError): kind k does not declare it and none of docs (the
// listed documents' frontmatter) has it, so the sort keeps the listing's
// order, most likely by a typo. Near names the fields, the kind's and the
// documents' own, nearest to it. nil when k declares the field (a sort by
// a field a document may have), some document has it, or nothing is
// listed. field may start with "-" (descending) and be dotted.
func SortHint(k *schema.Kind, field string, docs iter.Seq[map[string]any]) error {
	name := strings.TrimPrefix(field, "-")
	top, _, _ := strings.Cut(name, ".")
	if name == "" || k.Field(top) != nil {
		return nil
	}
	seen := map[string]bool{}
	listed := false
	for fields := range docs {
		listed = true
		if _, ok := docstore.Lookup(fields, name); ok {
			return nil
		}
		for key := range fields {
			seen[key] = true
		}
	}
	if !listed {
		return nil
	}
	for _, f := range k.Fields {
		seen[f.Name] = true
	}
	return &SortHintError{Op: "sort", Path: k.Plural, Kind: k.Name, Field: field,
		Near: schema.Near(top, slices.Sorted(maps.Keys(seen)))}
}
