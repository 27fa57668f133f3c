package docstore

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// Get returns the value node of a top-level field, or nil.
func (d *Doc) Get(key string) *yaml.Node {
	if i := d.index(key); i >= 0 {
		return d.root.Content[i+1]
	}
	return nil
}

// KeyLine returns the file line (1-based) of a top-level field's key, or
// 0 if the field is absent: for errors that point at a field.
func (d *Doc) KeyLine(key string) int {
	if i := d.index(key); i >= 0 && d.root.Content[i].Line > 0 {
		return d.root.Content[i].Line + d.frontLine() - 1
	}
	return 0
}

// Has reports whether the field is present and not null.
func (d *Doc) Has(key string) bool {
	n := d.Get(key)
	return n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// String returns a scalar field's text, or "" if absent or not a scalar.
func (d *Doc) String(key string) string {
	n := d.Get(key)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

// Int returns an integer field; ok is false if absent or not an integer.
func (d *Doc) Int(key string) (v int64, ok bool) {
	n := d.Get(key)
	if n == nil || n.Kind != yaml.ScalarNode {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	return v, err == nil
}

// Bool returns a boolean field (false when absent).
func (d *Doc) Bool(key string) bool {
	n := d.Get(key)
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!bool" && (n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
}

// Time returns a timestamp field; ok is false if absent or unparsable.
func (d *Doc) Time(key string) (time.Time, bool) {
	s := d.String(key)
	if s == "" {
		return time.Time{}, false
	}
	t, err := schema.ParseTime(s)
	return t, err == nil
}

// Strings returns a list field's scalar entries.
func (d *Doc) Strings(key string) []string {
	n := d.Get(key)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// Keys returns the top-level field names in file order.
func (d *Doc) Keys() []string {
	keys := make([]string, 0, len(d.root.Content)/2)
	for i := 0; i < len(d.root.Content); i += 2 {
		keys = append(keys, d.root.Content[i].Value)
	}
	return keys
}

// Fields decodes the frontmatter into plain Go values for JSON output
// and queries. Timestamps stay strings, as written.
func (d *Doc) Fields() map[string]any {
	out := make(map[string]any, len(d.root.Content)/2)
	p := &plainer{budget: maxExpand, open: map[*yaml.Node]bool{}}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		out[d.root.Content[i].Value] = p.plain(d.root.Content[i+1])
	}
	return out
}

// maxExpand bounds the number of values Fields builds from one document.
// Aliases are expanded, and a hand-written "billion laughs" document (each
// anchor aliasing the previous one nine times) would otherwise take minutes
// and gigabytes; real documents stay far below it.
const maxExpand = 1 << 16

// plainer converts nodes to JSON-friendly values, expanding aliases
// within a budget and cutting cycles (`a: &x [*x]` is valid YAML).
type plainer struct {
	budget  int                 // values left to build through aliases
	aliased int                 // depth of alias expansion
	open    map[*yaml.Node]bool // nodes being converted: an alias to one is a cycle
}

// plain converts a node to JSON-friendly values. Unlike yaml's own decoder
// it keeps timestamps as the text the file holds. An alias that closes a
// cycle, or a value reached through aliases after the budget is spent,
// becomes nil.
func (p *plainer) plain(n *yaml.Node) any {
	if p.open[n] {
		return nil
	}
	if p.aliased > 0 {
		if p.budget--; p.budget < 0 {
			return nil
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil
		}
		p.aliased++
		defer func() { p.aliased-- }()
		return p.plain(n.Alias)
	case yaml.SequenceNode:
		p.open[n] = true
		defer delete(p.open, n)
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = p.plain(c)
		}
		return out
	case yaml.MappingNode:
		p.open[n] = true
		defer delete(p.open, n)
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = p.plain(n.Content[i+1])
		}
		return out
	}
	switch n.Tag {
	case "!!null":
		return nil
	case "!!int", "!!float", "!!bool":
		if v, ok := plainScalar(n); ok {
			return v
		}
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
	}
	return n.Value
}

// plainScalar decodes the common untagged booleans and decimal integers
// without yaml's decoder, which costs a decoder per value and was most of
// Fields' time. It answers only where the result is yaml's own
// (FuzzPlainScalar holds it to Node.Decode); anything else is left to
// Decode.
func plainScalar(n *yaml.Node) (any, bool) {
	if n.Style != 0 {
		return nil, false
	}
	v := n.Value
	switch n.Tag {
	case "!!bool":
		switch v {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		}
	case "!!int":
		if !decimalInt(v) {
			return nil, false
		}
		if i, err := strconv.Atoi(v); err == nil {
			return i, true
		}
	}
	return nil, false
}

// decimalInt reports whether v is 0 or an optionally negative decimal
// with no leading zero, short enough to fit an int64: the integers whose
// meaning no YAML rule (octal, base prefixes, underscores, a plus sign)
// could change.
func decimalInt(v string) bool {
	digits := strings.TrimPrefix(v, "-")
	if v == "0" {
		return true
	}
	if len(digits) == 0 || len(digits) > 18 || digits[0] < '1' || digits[0] > '9' {
		return false
	}
	for i := 1; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// Set sets a top-level field to v, encoded as YAML. A *yaml.Node is used
// as is. Only the lines of that field change.
func (d *Doc) Set(key string, v any) error {
	n, err := valueNode(key, v)
	if err != nil {
		return err
	}
	return d.SetNode(key, n)
}

// SetYAML sets a field from YAML text as typed on a command line: `3` is
// an integer, `[a, b]` a list, `"3"` a string. Empty text sets "".
func (d *Doc) SetYAML(key, text string) error {
	if strings.TrimSpace(text) == "" {
		return d.SetNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text, Style: yaml.DoubleQuotedStyle})
	}
	str := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil || len(n.Content) == 0 {
		// Not YAML on its own (e.g. "a: b: c"): keep it as a string.
		return d.SetNode(key, str)
	}
	v := n.Content[0]
	// Only one-line scalars and flow collections ([a, b], {a: 1}) are
	// typed. Anything else is what a person means as text: "Fix #12" is
	// not "Fix" plus a comment, "a: b" is not a mapping, "- x" not a list,
	// and a value with a newline or an anchor stays exactly as typed.
	if strings.ContainsAny(text, "\r\n") || hasComment(&n) || v.Anchor != "" ||
		(v.Kind != yaml.ScalarNode && v.Style&yaml.FlowStyle == 0) {
		return d.SetNode(key, str)
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		// Quotes on the command line only make the value a string; the
		// file's own quoting style is kept (SetNode).
		v.Style = 0
	}
	return d.SetNode(key, v)
}

// hasComment reports whether any node of a tree carries a comment.
func hasComment(n *yaml.Node) bool {
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" {
		return true
	}
	for _, c := range n.Content {
		if hasComment(c) {
			return true
		}
	}
	return false
}

// SetNode sets a top-level field to a node. If the old value carried an
// anchor (`base: &b x`), the new value keeps it, so aliases elsewhere in
// the frontmatter (`copy: *b`) still resolve, now to the new value.
//
// The edit is checked: if rewriting lines would change any other field
// (possible in unusual layouts, e.g. a value continued on a less indented
// line), the frontmatter is re-encoded instead. That keeps comments
// attached to fields but not the exact layout; it is the price of never
// writing a wrong document.
func (d *Doc) SetNode(key string, n *yaml.Node) error {
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return fmt.Errorf("invalid field name %q", key)
	}
	i := d.index(key)
	keys := d.Keys()
	if i < 0 {
		keys = append(keys, key)
	} else {
		old := d.root.Content[i+1]
		if old.Anchor != "" && n.Anchor == "" {
			c := *n
			c.Anchor = old.Anchor
			n = &c
		}
		// Keep the quoting style the file used for strings.
		if n.Kind == yaml.ScalarNode && old.Kind == yaml.ScalarNode && n.Tag == "!!str" && old.Tag == "!!str" && n.Style == 0 &&
			(old.Style == yaml.SingleQuotedStyle || old.Style == yaml.DoubleQuotedStyle) && !strings.Contains(n.Value, "\n") {
			c := *n
			c.Style = old.Style
			n = &c
		}
	}
	want := (&plainer{budget: maxExpand, open: map[*yaml.Node]bool{}}).plain(n)
	return d.checked(key, keys, func() error {
		if err := d.setLines(key, i, n); err != nil {
			return err
		}
		if got := d.Fields()[key]; !reflect.DeepEqual(got, want) {
			return fmt.Errorf("set %s: line edit gave %v, not %v", key, got, want)
		}
		return nil
	}, func(m *yaml.Node) {
		if i < 0 {
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, n)
		} else {
			m.Content[i+1] = n
		}
	})
}

// checked runs a line edit and verifies that the result has exactly the
// keys want and that no field other than key changed value; otherwise it
// restores d and applies fallback to a re-encoded copy of the mapping.
func (d *Doc) checked(key string, want []string, edit func() error, fallback func(*yaml.Node)) error {
	front, root := d.front, d.root
	var others map[string]any
	if !hasAnchors(root) { // with anchors an alias may rightly follow the edit
		others = d.Fields()
		delete(others, key)
	}
	err := edit()
	if err == nil && slices.Equal(d.Keys(), want) {
		if others == nil {
			return nil
		}
		now := d.Fields()
		delete(now, key)
		if reflect.DeepEqual(now, others) {
			return nil
		}
	}
	d.front, d.root = front, root
	if rerr := d.reencode(fallback); rerr != nil {
		d.front, d.root = front, root
		return fmt.Errorf("%w: %s: %v", ErrUneditable, key, rerr)
	}
	return nil
}

func hasAnchors(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAnchors(c) {
			return true
		}
	}
	return false
}

// setLines is SetNode's line-exact edit of entry i (-1: a new key).
func (d *Doc) setLines(key string, i int, n *yaml.Node) error {
	if i < 0 && d.root.Style&yaml.FlowStyle != 0 {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
		return d.reencode(func(m *yaml.Node) { m.Content = append(m.Content, k, n) })
	}
	if i < 0 {
		text, err := renderEntry(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, n, d.nl, d.indent())
		if err != nil {
			return err
		}
		return d.replaceFront(append(append([]byte{}, d.front...), text...))
	}
	old := d.root.Content[i+1]
	if d.root.Style&yaml.FlowStyle != 0 {
		return d.reencode(func(m *yaml.Node) { m.Content[i+1] = n })
	}
	lines := splitLines(d.front)
	first, last := d.entryLines(i, lines)
	if n.Kind == yaml.ScalarNode && old.Kind == yaml.ScalarNode && first == last &&
		old.Line == d.root.Content[i].Line && old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		if text, ok := scalarText(n); ok {
			line := lines[first]
			start := byteOffset(line, old.Column-1)
			end := len(bytes.TrimRight(line, " \t\r\n"))
			if c := lineComment(d.root.Content[i], old); c != "" {
				if j := bytes.LastIndex(line, []byte(c)); j >= start {
					end = len(bytes.TrimRight(line[:j], " \t"))
				}
			}
			// start == end: an empty (null) value, `a:` or `a: # why`;
			// renderEntry puts the space after the colon.
			if start < end {
				nl := append([]byte{}, line[:start]...)
				nl = append(nl, text...)
				if end < len(line) && line[end] == '#' {
					nl = append(nl, ' ') // `""#c` parses, `42#c` is one plain scalar
				}
				nl = append(nl, line[end:]...)
				lines[first] = nl
				return d.replaceFront(bytes.Join(lines, nil))
			}
		}
	}
	// The key keeps its quoting and its line comment (`queue: # why`).
	k := *d.root.Content[i]
	k.HeadComment, k.FootComment = "", ""
	if k.LineComment == "" {
		k.LineComment = old.LineComment
	}
	text, err := renderEntry(&k, n, eol(lines[first]), d.indent())
	if err != nil {
		return err
	}
	out := append([][]byte{}, lines[:first]...)
	out = append(out, text)
	out = append(out, lines[last+1:]...)
	return d.replaceFront(bytes.Join(out, nil))
}

// Unset is Delete for a person's request to remove key (tavern set
// --unset): a key the document does not have is removed already, and
// said as a *NoFieldError (ErrNoField) with the keys near it, so that a
// typo is not taken for done. Nothing changes then.
func (d *Doc) Unset(key string) error {
	if d.index(key) < 0 {
		return &NoFieldError{Op: "unset", Path: d.Path, Field: key, Near: schema.Near(key, d.Keys())}
	}
	return d.Delete(key)
}

// Delete removes a top-level field and its lines.
func (d *Doc) Delete(key string) error {
	i := d.index(key)
	if i < 0 {
		return nil
	}
	if a := anchorUsed(d.root, d.root.Content[i+1]); a != "" {
		return fmt.Errorf("delete %s: its anchor &%s is used by an alias elsewhere in the frontmatter", key, a)
	}
	drop := func(m *yaml.Node) { m.Content = append(m.Content[:i:i], m.Content[i+2:]...) }
	if d.root.Style&yaml.FlowStyle != 0 {
		return d.reencode(drop)
	}
	keys := d.Keys()
	keys = append(keys[:i/2:i/2], keys[i/2+1:]...)
	return d.checked(key, keys, func() error {
		lines := splitLines(d.front)
		first, last := d.entryLines(i, lines)
		out := append(append([][]byte{}, lines[:first]...), lines[last+1:]...)
		return d.replaceFront(bytes.Join(out, nil))
	}, drop)
}

// anchorUsed returns the name of an anchor defined in v (or below it) that
// an alias outside v refers to, or "".
func anchorUsed(root, v *yaml.Node) string {
	defined := map[*yaml.Node]bool{}
	var mark func(*yaml.Node)
	mark = func(n *yaml.Node) {
		if n.Anchor != "" {
			defined[n] = true
		}
		for _, c := range n.Content {
			mark(c)
		}
	}
	mark(v)
	if len(defined) == 0 {
		return ""
	}
	var find func(*yaml.Node) string
	find = func(n *yaml.Node) string {
		if n == v {
			return ""
		}
		if n.Kind == yaml.AliasNode && defined[n.Alias] {
			return n.Alias.Anchor
		}
		for _, c := range n.Content {
			if a := find(c); a != "" {
				return a
			}
		}
		return ""
	}
	return find(root)
}

// Rename changes a field's name, keeping its value and position.
func (d *Doc) Rename(oldKey, newKey string) error {
	i := d.index(oldKey)
	if i < 0 {
		return nil
	}
	if d.index(newKey) >= 0 {
		return fmt.Errorf("rename %s: field %s already exists", oldKey, newKey)
	}
	k := d.root.Content[i]
	lines := splitLines(d.front)
	if k.Style == 0 && d.root.Style&yaml.FlowStyle == 0 && k.Line-1 < len(lines) {
		line := lines[k.Line-1]
		start := byteOffset(line, k.Column-1)
		if bytes.HasPrefix(line[start:], []byte(oldKey)) {
			nl := append(append(append([]byte{}, line[:start]...), newKey...), line[start+len(oldKey):]...)
			lines[k.Line-1] = nl
			return d.replaceFront(bytes.Join(lines, nil))
		}
	}
	v := d.root.Content[i+1]
	if err := d.Delete(oldKey); err != nil {
		return err
	}
	return d.SetNode(newKey, v)
}

func (d *Doc) index(key string) int {
	if d.root == nil {
		return -1
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if d.root.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// entryLines returns the 0-based first and last line of the i-th entry:
// from its key to the line before the next key, less trailing blank and
// comment lines, which belong to the next entry.
func (d *Doc) entryLines(i int, lines [][]byte) (first, last int) {
	first = d.root.Content[i].Line - 1
	last = len(lines) - 1
	if i+2 < len(d.root.Content) {
		last = d.root.Content[i+2].Line - 2
	}
	for last > first {
		t := bytes.TrimSpace(lines[last])
		if len(t) == 0 || t[0] == '#' {
			last--
			continue
		}
		break
	}
	return first, last
}

func (d *Doc) replaceFront(front []byte) error {
	old, oldRoot := d.front, d.root
	d.front = front
	if err := d.parseFront(); err != nil {
		d.front, d.root = old, oldRoot
		return fmt.Errorf("edit produced invalid YAML (a bug; nothing changed): %w", err)
	}
	return nil
}

// reencode is the fallback for flow-style frontmatter ({a: 1}), which has
// no lines to edit: the mapping is rewritten in block style.
func (d *Doc) reencode(edit func(*yaml.Node)) error {
	m := *d.root
	m.Content = append([]*yaml.Node(nil), d.root.Content...)
	m.Style = 0
	edit(&m)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&m); err != nil {
		return err
	}
	return d.replaceFront(fixEOL(buf.Bytes(), d.nl))
}

// indent is the column of the frontmatter's keys less one: 0, unless the
// whole mapping is indented (valid YAML, if unusual).
func (d *Doc) indent() int {
	if d.root == nil || len(d.root.Content) == 0 {
		return 0
	}
	k := d.root.Content[0]
	line := d.front
	for l := 1; l < k.Line; l++ {
		i := bytes.IndexByte(line, '\n')
		if i < 0 {
			return 0
		}
		line = line[i+1:]
	}
	if k.Line < 1 || len(line) == 0 {
		return 0
	}
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// renderEntry renders "key: value" as block YAML lines, indented by
// indent spaces. Only the key's line comment is kept.
func renderEntry(key, n *yaml.Node, nl string, indent int) ([]byte, error) {
	k := clean(key)
	k.LineComment = key.LineComment
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, clean(n)}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("set %s: %w", key.Value, err)
	}
	out := buf.Bytes()
	if indent > 0 {
		pad := bytes.Repeat([]byte(" "), indent)
		lines := splitLines(out)
		for i, l := range lines {
			lines[i] = append(append([]byte{}, pad...), l...)
		}
		out = bytes.Join(lines, nil)
	}
	return fixEOL(out, nl), nil
}

// clean drops position and comment data from a node taken from another
// document, so the encoder does not reproduce foreign comments.
func clean(n *yaml.Node) *yaml.Node {
	c := *n
	c.Line, c.Column = 0, 0
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			c.Content[i] = clean(ch)
		}
	}
	return &c
}

// scalarText renders a scalar as it would appear after "key: ".
func scalarText(n *yaml.Node) ([]byte, bool) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(clean(n)); err != nil {
		return nil, false
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if bytes.Contains(out, []byte("\n")) || bytes.HasPrefix(out, []byte("|")) || bytes.HasPrefix(out, []byte(">")) {
		return nil, false
	}
	return out, true
}

func lineComment(k, v *yaml.Node) string {
	if v.LineComment != "" {
		return v.LineComment
	}
	return k.LineComment
}

func fixEOL(b []byte, nl string) []byte {
	if nl == "\n" {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte(nl))
}

func splitLines(b []byte) [][]byte {
	out := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

// byteOffset converts a 0-based character column to a byte offset.
func byteOffset(line []byte, col int) int {
	off := 0
	for i := 0; i < col && off < len(line); i++ {
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}

// SetMany sets several top-level fields like successive Set calls. On
// error the document is unchanged.
//
// The common case — block-style frontmatter without anchors, each field
// absent or a one-line plain scalar, each new value a scalar — is done as
// one text edit and one re-parse, then verified: the keys, the new values
// and every other field must come out as intended. Anything else, or a
// failed verification, takes the field-by-field path.
func (d *Doc) SetMany(fields []Field) error {
	orig, origRoot := d.front, d.root
	nodes, owned, err := valueNodes(fields)
	if err != nil {
		return err
	}
	if d.setManyLines(fields, nodes, nil, owned) {
		return nil
	}
	d.front, d.root = orig, origRoot
	for i, kv := range fields {
		if err := d.SetNode(kv.Key, nodes[i]); err != nil {
			d.front, d.root = orig, origRoot
			return err
		}
	}
	return nil
}

// blockUnsafe reports whether yaml.v3 would write s as a literal block it
// reads back differently (a multi-line string whose first line is empty
// or indented loses that line or indentation): such strings are written
// double-quoted instead.
func blockUnsafe(s string) bool {
	return strings.Contains(s, "\n") && (s[0] == '\n' || s[0] == ' ' || s[0] == '\t' || s[0] == '\r')
}

// valueNode is the node Set would write for v.
func valueNode(key string, v any) (*yaml.Node, error) {
	if x, ok := v.(*yaml.Node); ok {
		return x, nil
	}
	n := &yaml.Node{}
	if err := fillValueNode(n, key, v); err != nil {
		return nil, err
	}
	return n, nil
}

// valueNodes is valueNode for each field, the nodes in one allocation;
// owned is false if the caller passed any *yaml.Node of its own.
func valueNodes(fields []Field) (nodes []*yaml.Node, owned bool, err error) {
	nodes = make([]*yaml.Node, len(fields))
	slab := make([]yaml.Node, len(fields))
	owned = true
	for i, kv := range fields {
		if x, ok := kv.Value.(*yaml.Node); ok {
			nodes[i], owned = x, false
			continue
		}
		if err := fillValueNode(&slab[i], kv.Key, kv.Value); err != nil {
			return nil, false, err
		}
		nodes[i] = &slab[i]
	}
	return nodes, owned, nil
}

func fillValueNode(n *yaml.Node, key string, v any) error {
	switch x := v.(type) {
	case time.Time:
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: schema.FormatTime(x)}
		return nil
	case int:
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
		return nil
	case int64:
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
		return nil
	case string:
		if plainSafe(x) { // what the encoder gives, without running it
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
			return nil
		}
		if blockUnsafe(x) {
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x, Style: yaml.DoubleQuotedStyle}
			return nil
		}
	case []string:
		// Built here: Node.Encode of a list holding a blockUnsafe string
		// fails (yaml.v3 emits a literal block it cannot read back).
		*n = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, len(x))}
		for i, s := range x {
			c := &yaml.Node{}
			if err := fillValueNode(c, key, s); err != nil {
				return err
			}
			n.Content[i] = c
		}
		return nil
	}
	if err := n.Encode(v); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	return nil
}

// setManyLines is SetMany's single-edit path; it reports false (leaving
// d possibly changed, the caller restores it) when it does not apply.
// del are keys to delete in the same edit (Edit), absent ones ignored.
//
// It runs twice per queue state change, so it keeps allocations few:
// slices instead of maps, the new text built in one buffer, and (with
// owned set) the value nodes in nodes taken into the tree as they are.
func (d *Doc) setManyLines(fields []Field, nodes []*yaml.Node, del []string, owned bool) bool {
	if d.root.Style&yaml.FlowStyle != 0 || hasAnchors(d.root) || d.indent() != 0 {
		return false
	}
	lines := splitLines(d.front)
	// For patching the tree instead of re-parsing (patchTree): no
	// comments, and a plain block mapping that starts at its first key
	// (a tag on a line of its own puts the mapping's start elsewhere).
	patch := bytes.IndexByte(d.front, '#') < 0 && d.root.Style == 0 && d.root.Tag == "!!map" &&
		d.root.Anchor == "" && len(d.root.Content) > 0 &&
		d.root.Line == d.root.Content[0].Line && d.root.Column == d.root.Content[0].Column
	edits := make([]lineEdit, 0, len(fields)) // one per replaced value, in fields order
	var adds []lineAdd                        // keys not present, appended
	var delIdx []int                          // content indexes of deleted keys
	var drop []bool                           // by old line: dropped with a deleted entry
	for _, key := range del {
		j := d.index(key)
		if j < 0 {
			continue
		}
		if drop == nil {
			drop = make([]bool, len(lines))
		}
		first, last := d.entryLines(j, lines)
		for l := first; l <= last; l++ {
			drop[l] = true
		}
		delIdx = append(delIdx, j)
	}
	for i, kv := range fields {
		key, n := kv.Key, nodes[i]
		if n.Kind != yaml.ScalarNode || key == "" || !plainSafe(key) || slices.Contains(del, key) {
			return false // a set and a delete of one key: the step-by-step path orders them
		}
		for _, prev := range fields[:i] {
			if prev.Key == key {
				return false
			}
		}
		text, ok := fastScalarText(n)
		if !ok {
			return false
		}
		patch = patch && patchSafe(n, text)
		j := d.index(key)
		if j < 0 {
			if adds == nil {
				adds = make([]lineAdd, 0, len(fields)-i)
			}
			adds = append(adds, lineAdd{key: key, text: text, node: n})
			continue
		}
		k, old := d.root.Content[j], d.root.Content[j+1]
		first, last := d.entryLines(j, lines)
		if old.Kind != yaml.ScalarNode || old.Style != 0 || old.Tag == "!!null" || first != last || old.Line != k.Line ||
			old.LineComment != "" || k.LineComment != "" || drop != nil && drop[first] {
			return false
		}
		line := lines[first]
		start := byteOffset(line, old.Column-1)
		end := len(bytes.TrimRight(line, " \t\r\n"))
		if start >= end {
			return false
		}
		edits = append(edits, lineEdit{line: first, start: start, end: end, text: text, idx: j + 1, node: n})
	}
	front := d.editedFront(lines, edits, drop, adds)
	if patch {
		if root := d.patchTree(edits, delIdx, adds, drop, len(lines), owned); root != nil {
			d.front, d.root = front, root
			return true
		}
	}
	// Verify by re-parsing: same keys in the intended order, the new
	// values as set, every other value as it was.
	want := d.Keys()
	want = slices.DeleteFunc(want, func(k string) bool { return slices.Contains(del, k) })
	for _, a := range adds {
		want = append(want, a.key)
	}
	before := d.Fields()
	for _, key := range del {
		delete(before, key)
	}
	if err := d.replaceFront(front); err != nil {
		return false
	}
	if !slices.Equal(d.Keys(), want) {
		return false
	}
	after := d.Fields()
	for key, v := range after {
		if i := slices.IndexFunc(fields, func(f Field) bool { return f.Key == key }); i >= 0 {
			if !reflect.DeepEqual(v, plainValue(nodes[i])) {
				return false
			}
		} else if !reflect.DeepEqual(v, before[key]) {
			return false
		}
	}
	return true
}

// lineEdit replaces bytes [start, end) of old line `line` with text: the
// value node at content index idx becomes node.
type lineEdit struct {
	line, start, end int
	text             string
	idx              int
	node             *yaml.Node
}

// lineAdd is a field setManyLines appends as one "key: text" line.
type lineAdd struct {
	key, text string
	node      *yaml.Node
}

// editedFront renders setManyLines' edit in one buffer: the old lines
// with edits applied and dropped lines left out, then one "key: value"
// line per added field.
func (d *Doc) editedFront(lines [][]byte, edits []lineEdit, drop []bool, adds []lineAdd) []byte {
	size := len(d.front)
	for _, e := range edits {
		size += len(e.text) - (e.end - e.start)
	}
	for _, a := range adds {
		size += len(a.key) + 2 + len(a.text) + len(d.nl)
	}
	out := make([]byte, 0, size+16)
	for l, line := range lines {
		if drop != nil && drop[l] {
			continue
		}
		edited := false
		for _, e := range edits {
			if e.line == l {
				out = append(out, line[:e.start]...)
				out = append(out, e.text...)
				out = append(out, line[e.end:]...)
				edited = true
				break
			}
		}
		if !edited {
			out = append(out, line...)
		}
	}
	for _, a := range adds {
		out = append(out, a.key...)
		out = append(out, ": "...)
		out = append(out, a.text...)
		out = append(out, d.nl...)
	}
	return out
}

func plainValue(n *yaml.Node) any {
	p := &plainer{budget: maxExpand, open: map[*yaml.Node]bool{}}
	return p.plain(n)
}

// plainSafe reports whether s can be written as a plain YAML scalar that
// reads back as the same string: letters, digits and a few punctuation
// marks, not starting like a number or an indicator, not a YAML keyword.
func plainSafe(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return false
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' || c == '@') {
			return false
		}
	}
	return true
}

// fastScalarText renders a scalar for the single-edit path without the
// encoder where the text is obvious; the edit is verified afterwards.
func fastScalarText(n *yaml.Node) (string, bool) {
	switch n.Tag {
	case "!!timestamp":
		// schema.FormatTime's form, 2006-01-02T15:04:05.000Z: its colons
		// are never followed by a space, so it is a plain scalar.
		if n.Style == 0 && stampSafe(n.Value) {
			return n.Value, true
		}
	}
	switch n.Tag {
	case "!!int", "!!timestamp", "!!bool":
		if n.Style == 0 && n.Value != "" && !strings.ContainsAny(n.Value, " #:\n") {
			return n.Value, true
		}
	case "!!str":
		if n.Style == 0 && plainSafe(n.Value) {
			return n.Value, true
		}
	}
	b, ok := scalarText(n)
	return string(b), ok
}

// patchSafe reports whether the parser reads text, written plain after
// "key: ", back as exactly n (kind, tag, value, style), so the tree can be
// patched with n instead of re-parsed.
func patchSafe(n *yaml.Node, text string) bool {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Anchor != "" || text != n.Value || hasComment(n) {
		return false
	}
	switch n.Tag {
	case "!!str":
		return plainSafe(n.Value)
	case "!!timestamp":
		// FormatTime's form, the one stamp the engine writes, checked
		// without time.Parse's layout engine; anything else asks it.
		if v := n.Value; len(v) == len("2006-01-02T15:04:05.000Z") && v[19] == '.' && schema.IsStamp(v) {
			return true
		}
		_, err := time.Parse("2006-01-02T15:04:05.000Z", n.Value)
		return err == nil
	case "!!int":
		v := strings.TrimPrefix(n.Value, "-")
		if v == "" || len(v) > 18 || v != "0" && v[0] == '0' {
			return false
		}
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return false
			}
		}
		return true
	case "!!bool":
		return n.Value == "true" || n.Value == "false"
	}
	return false
}

// patchTree builds the mapping the parser would give for the edited text
// (setManyLines' single-line edits of a comment-free frontmatter): the
// value nodes of edits replaced (same line and column), the entries at
// key index delIdx removed with their lines (drop, by 0-based old line)
// and every later node moved up, adds appended as one line each after
// the n old lines less the dropped ones. The old tree is not changed
// (Docs may share it). The new value nodes are placed in the tree as
// they are when owned (the caller made them for this edit), else copied.
// It returns nil when it does not apply.
func (d *Doc) patchTree(edits []lineEdit, delIdx []int, adds []lineAdd, drop []bool, n int, owned bool) *yaml.Node {
	var dropped []int // sorted 0-based old lines
	for l, x := range drop {
		if x {
			dropped = append(dropped, l)
		}
	}
	n -= len(dropped)
	shift := func(line int) int { // 1-based old line -> new line
		k, _ := slices.BinarySearch(dropped, line-1)
		return line - k
	}
	place := func(nv *yaml.Node, line, col int) *yaml.Node {
		if !owned {
			c := *nv
			nv = &c
		}
		nv.Line, nv.Column = line, col
		return nv
	}
	root := *d.root
	root.Content = make([]*yaml.Node, 0, len(d.root.Content)+2*len(adds))
	var slab []yaml.Node // moved copies of scalar nodes, one allocation
	var keys []yaml.Node // key nodes of adds, one allocation
	if len(adds) > 0 {
		keys = make([]yaml.Node, len(adds))
	}
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		if slices.Contains(delIdx, i) {
			continue
		}
		k, v := d.root.Content[i], d.root.Content[i+1]
		for _, e := range edits {
			if e.idx == i+1 {
				v = place(e.node, v.Line, v.Column)
				break
			}
		}
		if len(dropped) > 0 && shift(k.Line) != k.Line {
			if slab == nil {
				slab = make([]yaml.Node, 0, len(d.root.Content)-i)
			}
			k, v = shiftedCopy(k, shift, &slab), shiftedCopy(v, shift, &slab)
		}
		root.Content = append(root.Content, k, v)
	}
	for i, a := range adds {
		k := &keys[i]
		*k = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: a.key, Line: n + 1 + i, Column: 1}
		root.Content = append(root.Content, k, place(a.node, n+1+i, len(a.key)+3))
	}
	if len(root.Content) == 0 {
		return nil
	}
	root.Line, root.Column = root.Content[0].Line, root.Content[0].Column
	return &root
}

// shiftedCopy deep-copies n with every line moved by shift. Scalars are
// copied into *slab while it has room (it never grows: nodes in it are
// pointed to), the rest allocated one by one.
func shiftedCopy(n *yaml.Node, shift func(int) int, slab *[]yaml.Node) *yaml.Node {
	var c *yaml.Node
	if len(n.Content) == 0 && len(*slab) < cap(*slab) {
		*slab = append(*slab, *n)
		c = &(*slab)[len(*slab)-1]
	} else {
		cp := *n
		c = &cp
	}
	c.Line = shift(n.Line)
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			c.Content[i] = shiftedCopy(ch, shift, slab)
		}
	}
	return c
}

// stampSafe reports whether s is a date or timestamp made only of digits
// and the separators of RFC 3339, starting with a digit.
func stampSafe(s string) bool {
	if s == "" || len(s) > 40 || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '-' || c == ':' || c == '.' || c == 'T' || c == 'Z' || c == '+') {
			return false
		}
	}
	return true
}

// Edit sets fields and deletes keys as one change: like SetMany followed
// by Delete of each key. On error the document is unchanged.
func (d *Doc) Edit(fields []Field, del ...string) error {
	orig, origRoot := d.front, d.root
	if len(del) > 0 {
		// One text edit and one re-parse for the sets and the deletes
		// together, verified like SetMany's.
		nodes, owned, err := valueNodes(fields)
		if err != nil {
			return err
		}
		if d.setManyLines(fields, nodes, del, owned) {
			return nil
		}
		d.front, d.root = orig, origRoot
	}
	err := d.SetMany(fields)
	for _, k := range del {
		if err != nil {
			break
		}
		err = d.Delete(k)
	}
	if err != nil {
		d.front, d.root = orig, origRoot
	}
	return err
}
