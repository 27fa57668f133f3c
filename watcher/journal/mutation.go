package journal

import (
	"encoding/json"
	"hash/fnv"
	"reflect"
	"slices"

	"github.com/tavernhq/tavern/docstore"
)

// MutationEvent converts a docstore mutation into its journal event.
func MutationEvent(m docstore.Mutation) Event {
	e := Event{Path: m.Path}
	switch m.Op {
	case "create":
		e.Type = TypeCreated
	case "update":
		e.Type = TypeUpdated
	case "delete":
		e.Type = TypeRemoved
	case "move":
		e.Type = "doc.moved"
		e.Data = map[string]any{"from": m.From}
	default:
		e.Type = "doc." + m.Op
	}
	if m.Doc != nil {
		e.Rev = m.Doc.Rev
		if m.Doc.Kind != nil {
			e.Kind = m.Doc.Kind.Name
		}
		if m.Prev != nil {
			if ch := ChangedFields(m.Prev.Fields(), m.Doc.Fields()); len(ch) > 0 {
				if e.Data == nil {
					e.Data = map[string]any{}
				}
				e.Data["changed"] = ch
			}
		}
	} else if m.Prev != nil && m.Prev.Kind != nil {
		e.Kind = m.Prev.Kind.Name
	}
	if e.Rev == "" {
		e.Rev = m.Rev
	}
	return e
}

// RecordMutations journals every mutation made through s into j, so the
// watcher can tell engine changes from external ones. agent (may be "")
// is recorded as the acting agent. The Events the store's amends derived
// from the write (Mutation.Derived: an agent state that `set` changed is
// an "agent.state") follow the mutation's own, with its revision when
// they carry none. onErr (may be nil) receives append failures: the
// mutation itself has already happened.
func RecordMutations(s *docstore.Store, j *Journal, agent string, onErr func(error)) {
	s.Observe(func(m docstore.Mutation) {
		e := MutationEvent(m)
		e.Agent = agent
		if _, err := j.Append(e); err != nil && onErr != nil {
			onErr(err)
		}
		for _, v := range m.Derived {
			d, ok := v.(Event)
			if !ok {
				continue
			}
			if d.Rev == "" {
				d.Rev = e.Rev
			}
			if _, err := j.Append(d); err != nil && onErr != nil {
				onErr(err)
			}
		}
	})
}

// ChangedFields lists, sorted, the top-level fields that differ between
// a and b (added, removed or changed).
func ChangedFields(a, b map[string]any) []string {
	var out []string
	for k, v := range b {
		if w, ok := a[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// FieldDigest is a short hash of each top-level field's value: enough to
// tell which fields differ between two revisions without keeping them.
type FieldDigest map[string]uint64

// DigestFields hashes each field's JSON encoding (map keys sorted).
func DigestFields(fields map[string]any) FieldDigest {
	d := make(FieldDigest, len(fields))
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(reflect.TypeOf(v).String()) // unencodable: differs from anything encodable
		}
		h := fnv.New64a()
		h.Write(b)
		d[k] = h.Sum64()
	}
	return d
}

// Changed lists, sorted, the fields that differ between the revision d
// digests and fields (added, removed or changed), like ChangedFields.
func (d FieldDigest) Changed(fields map[string]any) []string {
	n := DigestFields(fields)
	var out []string
	for k, h := range n {
		if o, ok := d[k]; !ok || o != h {
			out = append(out, k)
		}
	}
	for k := range d {
		if _, ok := n[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
