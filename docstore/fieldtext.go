package docstore

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// FieldText returns the exact lines of top-level field key, from its
// key's line to its last line (the lines SetNode would replace), and the
// front-relative line (1-based) of the first. ok is false when the field
// is absent or the frontmatter is a flow mapping ({a: 1}), which has no
// lines of its own per field.
//
// With SetFieldText it moves a field between two copies of a document
// byte for byte (the sync's field merge): re-rendering a value from its
// node would change how it is written (`[a:1]` becomes `['a:1']`).
func (d *Doc) FieldText(key string) (text []byte, line int, ok bool) {
	i := d.index(key)
	if i < 0 || d.root.Style&yaml.FlowStyle != 0 || d.root.Content[i].Line < 1 {
		return nil, 0, false
	}
	lines := splitLines(d.front)
	first, last := d.entryLines(i, lines)
	if first < 0 || last >= len(lines) {
		return nil, 0, false
	}
	return bytes.Join(lines[first:last+1], nil), first + 1, true
}

// SetFieldText replaces the lines of top-level field key with text (the
// complete lines of that field, as FieldText returns them; a field the
// document lacks is appended). The edit is checked: afterwards key must
// hold want (compared as values, not as text) and every other field must
// be as before; otherwise nothing changes and the error wraps
// ErrUneditable, and the caller may fall back to SetNode, which renders
// the value instead.
func (d *Doc) SetFieldText(key string, text []byte, want *yaml.Node) error {
	if len(text) == 0 || text[len(text)-1] != '\n' {
		return fmt.Errorf("%w: %s: field text must be whole lines", ErrUneditable, key)
	}
	if d.root.Style&yaml.FlowStyle != 0 || hasAnchors(d.root) || hasAnchors(want) {
		return fmt.Errorf("%w: %s: not a line edit (flow mapping or anchors)", ErrUneditable, key)
	}
	text = fixEOL(bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n")), d.nl)
	keys := d.Keys()
	lines := splitLines(d.front)
	var out [][]byte
	if i := d.index(key); i >= 0 {
		first, last := d.entryLines(i, lines)
		out = append(append(append([][]byte{}, lines[:first]...), text), lines[last+1:]...)
	} else {
		keys = append(keys, key)
		out = append(append([][]byte{}, lines...), text)
	}
	others := d.Fields()
	delete(others, key)
	wantV := (&plainer{budget: maxExpand, open: map[*yaml.Node]bool{}}).plain(want)
	front, root := d.front, d.root
	err := d.replaceFront(bytes.Join(out, nil))
	if err == nil {
		now := d.Fields()
		got := now[key]
		delete(now, key)
		if !slices.Equal(d.Keys(), keys) || !reflect.DeepEqual(got, wantV) || !reflect.DeepEqual(now, others) {
			err = fmt.Errorf("the lines give %v", got)
		}
	}
	if err != nil {
		d.front, d.root = front, root
		return fmt.Errorf("%w: %s: %v", ErrUneditable, key, err)
	}
	return nil
}
