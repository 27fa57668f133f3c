package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Settings files are edited as text. The tools' settings are files people
// write and format by hand (Gemini CLI's settings.json may hold // and /*
// */ comments: it strips them before parsing), so setup never re-formats
// one: it parses the file into nodes that know their byte spans, and each
// change is a splice — a member or an element inserted after the last
// one, or deleted with its separating comma. An insertion and the
// deletion of what it inserted are inverses, so `setup --remove` gives
// back the file byte for byte. New text is indented like its
// surroundings.

// jnode is a JSON value with its span in the text.
type jnode struct {
	kind       byte // '{', '[', '"', '0' (number), 't' (true/false), 'n' (null)
	start, end int  // the value's bytes: text[start:end]
	members    []jmember
	elems      []*jnode
	str        string // '"': the decoded string; '0', 't': the literal
}

type jmember struct {
	key      string
	keyStart int
	val      *jnode
}

func (n *jnode) member(key string) (int, *jnode) {
	for i, m := range n.members {
		if m.key == key {
			return i, m.val
		}
	}
	return -1, nil
}

// jsonDoc is a settings file's text and its parse.
type jsonDoc struct {
	text string
	root *jnode
}

func parseJSONDoc(text string) (*jsonDoc, error) {
	p := &jparser{s: text}
	p.skip()
	if p.err != nil {
		return nil, p.fail()
	}
	root := p.value()
	if p.err == nil {
		p.skip()
		if p.err == nil && p.i < len(p.s) {
			p.errorf("unexpected data after the top-level value")
		}
	}
	if p.err != nil {
		return nil, p.fail()
	}
	return &jsonDoc{text: text, root: root}, nil
}

type jparser struct {
	s     string
	i     int
	err   error
	errAt int
}

func (p *jparser) errorf(format string, a ...any) {
	if p.err == nil {
		p.err, p.errAt = fmt.Errorf(format, a...), p.i
	}
}

func (p *jparser) fail() error {
	line, col := lineCol([]byte(p.s), int64(p.errAt))
	return &jsonSyntaxError{Line: line, Col: col, Err: p.err}
}

// jsonSyntaxError is where a JSON text does not parse ("line:col: why").
type jsonSyntaxError struct {
	Line, Col int
	Err       error
}

func (e *jsonSyntaxError) Error() string { return fmt.Sprintf("%d:%d: %v", e.Line, e.Col, e.Err) }
func (e *jsonSyntaxError) Unwrap() error { return e.Err }

// skip passes whitespace and comments.
func (p *jparser) skip() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case strings.HasPrefix(p.s[p.i:], "//"):
			if j := strings.IndexByte(p.s[p.i:], '\n'); j >= 0 {
				p.i += j + 1
			} else {
				p.i = len(p.s)
			}
		case strings.HasPrefix(p.s[p.i:], "/*"):
			j := strings.Index(p.s[p.i+2:], "*/")
			if j < 0 {
				p.errorf("unterminated comment")
				return
			}
			p.i += j + 4
		default:
			return
		}
	}
}

func (p *jparser) value() *jnode {
	if p.i >= len(p.s) {
		p.errorf("unexpected end of JSON input")
		return nil
	}
	start := p.i
	switch c := p.s[p.i]; {
	case c == '{':
		n := &jnode{kind: '{', start: start}
		p.i++
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			n.end = p.i
			return n
		}
		for p.err == nil {
			p.skip()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				p.errorf("object key is not a string")
				return nil
			}
			keyStart := p.i
			k := p.value()
			if p.err != nil {
				return nil
			}
			if _, dup := n.member(k.str); dup != nil {
				p.i = keyStart
				p.errorf("duplicate key %q", k.str)
				return nil
			}
			p.skip()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				p.errorf("expected ':' after object key")
				return nil
			}
			p.i++
			p.skip()
			v := p.value()
			if p.err != nil {
				return nil
			}
			n.members = append(n.members, jmember{key: k.str, keyStart: keyStart, val: v})
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				n.end = p.i
				return n
			}
			p.errorf("expected ',' or '}' after object value")
		}
		return nil
	case c == '[':
		n := &jnode{kind: '[', start: start}
		p.i++
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			n.end = p.i
			return n
		}
		for p.err == nil {
			p.skip()
			v := p.value()
			if p.err != nil {
				return nil
			}
			n.elems = append(n.elems, v)
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				n.end = p.i
				return n
			}
			p.errorf("expected ',' or ']' after array element")
		}
		return nil
	case c == '"':
		j := p.i + 1
		for j < len(p.s) && p.s[j] != '"' {
			if p.s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(p.s) {
			p.errorf("unterminated string")
			return nil
		}
		var s string
		if err := json.Unmarshal([]byte(p.s[p.i:j+1]), &s); err != nil {
			p.errorf("bad string: %v", err)
			return nil
		}
		p.i = j + 1
		return &jnode{kind: '"', start: start, end: p.i, str: s}
	case c == '-' || (c >= '0' && c <= '9'):
		j := p.i
		for j < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[j]) >= 0 {
			j++
		}
		if _, err := strconv.ParseFloat(p.s[p.i:j], 64); err != nil || !json.Valid([]byte(p.s[p.i:j])) {
			p.errorf("bad number %q", p.s[p.i:j])
			return nil
		}
		p.i = j
		return &jnode{kind: '0', start: start, end: j, str: p.s[start:j]}
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				kind := byte('t')
				if lit == "null" {
					kind = 'n'
				}
				return &jnode{kind: kind, start: start, end: p.i, str: lit}
			}
		}
		p.errorf("invalid character %q looking for a value", c)
		return nil
	}
}

// plain converts a node to the values setup compares and renders
// (*jsonObject, []any, string, json.Number, bool, nil).
func (n *jnode) plain() any {
	switch n.kind {
	case '{':
		o := newObject()
		for _, m := range n.members {
			o.set(m.key, m.val.plain())
		}
		return o
	case '[':
		arr := []any{}
		for _, e := range n.elems {
			arr = append(arr, e.plain())
		}
		return arr
	case '"':
		return n.str
	case '0':
		return json.Number(n.str)
	case 't':
		return n.str == "true"
	}
	return nil
}

// splice replaces text[start:end] with repl and parses again.
func (d *jsonDoc) splice(start, end int, repl string) error {
	text := d.text[:start] + repl + d.text[end:]
	nd, err := parseJSONDoc(text)
	if err != nil {
		return fmt.Errorf("settings edit produced bad JSON (a bug): %w", err)
	}
	*d = *nd
	return nil
}

// lineIndent is the whitespace that starts the line holding offset off.
func (d *jsonDoc) lineIndent(off int) string {
	ls := strings.LastIndexByte(d.text[:off], '\n') + 1
	j := ls
	for j < len(d.text) && (d.text[j] == ' ' || d.text[j] == '\t') {
		j++
	}
	return d.text[ls:j]
}

// onOwnLine reports whether the value at off starts its line.
func (d *jsonDoc) onOwnLine(off int) bool {
	ls := strings.LastIndexByte(d.text[:off], '\n') + 1
	return strings.TrimLeft(d.text[ls:off], " \t") == ""
}

// unit is the file's indent step: the indent of the root's first member
// when it has one on its own line, else two spaces.
func (d *jsonDoc) unit() string {
	if d.root != nil && d.root.kind == '{' && len(d.root.members) > 0 {
		k := d.root.members[0].keyStart
		if ind := d.lineIndent(k); ind != "" && d.onOwnLine(k) {
			return ind
		}
	}
	return "  "
}

// childIndent is the indent for a new entry of container c: that of its
// last entry when it is on its own line, else the container's line
// indent plus one unit.
func (d *jsonDoc) childIndent(c *jnode) string {
	var last int = -1
	if c.kind == '{' && len(c.members) > 0 {
		last = c.members[len(c.members)-1].keyStart
	}
	if c.kind == '[' && len(c.elems) > 0 {
		last = c.elems[len(c.elems)-1].start
	}
	if last >= 0 && d.onOwnLine(last) {
		return d.lineIndent(last)
	}
	return d.lineIndent(c.start) + d.unit()
}

// render writes v as JSON text starting at indent (the indent of the line
// it starts on), one unit deeper per level.
func render(v any, indent, unit string) string {
	var b strings.Builder
	renderTo(&b, v, indent, unit)
	return b.String()
}

func renderTo(b *strings.Builder, v any, indent, unit string) {
	switch t := v.(type) {
	case *jsonObject:
		if t.len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			b.WriteString(indent + unit)
			writeJSONString(b, k)
			b.WriteString(": ")
			renderTo(b, t.vals[k], indent+unit, unit)
			if i < len(t.keys)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, x := range t {
			b.WriteString(indent + unit)
			renderTo(b, x, indent+unit, unit)
			if i < len(t)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "]")
	default:
		writeJSONValue(b, v, indent)
	}
}

// addMember appends key: v to object o (found again by path after each
// splice: nodes do not survive one).
func (d *jsonDoc) addMember(o *jnode, key string, v any) error {
	var kb strings.Builder
	writeJSONString(&kb, key)
	if len(o.members) == 0 {
		ind := d.lineIndent(o.start)
		child := ind + d.unit()
		return d.splice(o.start, o.end, "{\n"+child+kb.String()+": "+render(v, child, d.unit())+"\n"+ind+"}")
	}
	last := o.members[len(o.members)-1].val
	ind := d.childIndent(o)
	return d.splice(last.end, last.end, ",\n"+ind+kb.String()+": "+render(v, ind, d.unit()))
}

// addElem appends v to array a.
func (d *jsonDoc) addElem(a *jnode, v any) error {
	if len(a.elems) == 0 {
		ind := d.lineIndent(a.start)
		child := ind + d.unit()
		return d.splice(a.start, a.end, "[\n"+child+render(v, child, d.unit())+"\n"+ind+"]")
	}
	last := a.elems[len(a.elems)-1]
	ind := d.childIndent(a)
	return d.splice(last.end, last.end, ",\n"+ind+render(v, ind, d.unit()))
}

// removeAt deletes entry i of container c (its key too, in an object):
// the last one from the end of the one before, others up to the start of
// the next, the only one by emptying the container ({} or []). Each is the
// inverse of the insertion above.
func (d *jsonDoc) removeAt(c *jnode, i int) error {
	type span struct{ start, end int }
	var ents []span
	if c.kind == '{' {
		for _, m := range c.members {
			ents = append(ents, span{m.keyStart, m.val.end})
		}
	} else {
		for _, e := range c.elems {
			ents = append(ents, span{e.start, e.end})
		}
	}
	switch {
	case i < 0 || i >= len(ents):
		return errors.New("settings edit: no such entry (a bug)")
	case len(ents) == 1:
		empty := "{}"
		if c.kind == '[' {
			empty = "[]"
		}
		return d.splice(c.start, c.end, empty)
	case i == len(ents)-1:
		return d.splice(ents[i-1].end, ents[i].end, "")
	default:
		return d.splice(ents[i].start, ents[i+1].start, "")
	}
}

// at follows a path of object keys and array indexes ("hooks", "Stop", 0,
// "hooks") from the root; nil when it leads nowhere.
func (d *jsonDoc) at(path ...any) *jnode {
	n := d.root
	for _, p := range path {
		if n == nil {
			return nil
		}
		switch k := p.(type) {
		case string:
			if n.kind != '{' {
				return nil
			}
			_, n = n.member(k)
		case int:
			if n.kind != '[' || k < 0 || k >= len(n.elems) {
				return nil
			}
			n = n.elems[k]
		}
	}
	return n
}
