package docstore

import (
	"bytes"
	"fmt"
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
	for i := 0; i+1 < len(d.root.Content); i += 2 {
		out[d.root.Content[i].Value] = plain(d.root.Content[i+1])
	}
	return out
}

// plain converts a node to JSON-friendly values. Unlike yaml's own decoder
// it keeps timestamps as the text the file holds.
func plain(n *yaml.Node) any {
	switch n.Kind {
	case yaml.AliasNode:
		return plain(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = plain(c)
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = plain(n.Content[i+1])
		}
		return out
	}
	switch n.Tag {
	case "!!null":
		return nil
	case "!!int", "!!float", "!!bool":
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
	}
	return n.Value
}

// Set sets a top-level field to v, encoded as YAML. A *yaml.Node is used
// as is. Only the lines of that field change.
func (d *Doc) Set(key string, v any) error {
	n, ok := v.(*yaml.Node)
	if !ok {
		if t, isTime := v.(time.Time); isTime {
			return d.SetNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: schema.FormatTime(t)})
		}
		var err error
		if n, err = valueNode(key, v); err != nil {
			return err
		}
	}
	return d.SetNode(key, n)
}

// SetYAML sets a field from YAML text as typed on a command line: `3` is
// an integer, `[a, b]` a list, `"3"` a string. Empty text sets "".
func (d *Doc) SetYAML(key, text string) error {
	if strings.TrimSpace(text) == "" {
		return d.SetNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text, Style: yaml.DoubleQuotedStyle})
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil || len(n.Content) == 0 {
		// Not YAML on its own (e.g. "a: b: c"): keep it as a string.
		return d.SetNode(key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text})
	}
	v := n.Content[0]
	if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
		// Quotes on the command line only make the value a string; the
		// file's own quoting style is kept (SetNode).
		v.Style = 0
	}
	return d.SetNode(key, v)
}

// SetNode sets a top-level field to a node.
func (d *Doc) SetNode(key string, n *yaml.Node) error {
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return fmt.Errorf("invalid field name %q", key)
	}
	i := d.index(key)
	if i < 0 {
		text, err := renderEntry(key, n, d.nl)
		if err != nil {
			return err
		}
		return d.replaceFront(append(append([]byte{}, d.front...), text...))
	}
	old := d.root.Content[i+1]
	// Keep the quoting style the file used for strings.
	if n.Kind == yaml.ScalarNode && old.Kind == yaml.ScalarNode && n.Tag == "!!str" && old.Tag == "!!str" && n.Style == 0 &&
		(old.Style == yaml.SingleQuotedStyle || old.Style == yaml.DoubleQuotedStyle) && !strings.Contains(n.Value, "\n") {
		n.Style = old.Style
	}
	if d.root.Style&yaml.FlowStyle != 0 {
		return d.reencode(func(m *yaml.Node) { m.Content[i+1] = n })
	}
	lines := splitLines(d.front)
	if d.editInPlace(lines, i, n) {
		return d.replaceFront(bytes.Join(lines, nil))
	}
	first, last := d.entryLines(i, lines)
	text, err := renderEntry(key, n, eol(lines[first]))
	if err != nil {
		return err
	}
	out := append([][]byte{}, lines[:first]...)
	out = append(out, text)
	out = append(out, lines[last+1:]...)
	return d.replaceFront(bytes.Join(out, nil))
}

// editInPlace rewrites the value of the i-th entry on its own line when
// both the old and the new value are one-line scalars, keeping the key,
// the spacing and a trailing comment. It changes lines[first] only, so
// the line numbers of every other entry stay valid (SetMany relies on
// that). It reports false if the entry needs the general path.
func (d *Doc) editInPlace(lines [][]byte, i int, n *yaml.Node) bool {
	old := d.root.Content[i+1]
	first, last := d.entryLines(i, lines)
	if n.Kind != yaml.ScalarNode || old.Kind != yaml.ScalarNode || first != last ||
		old.Line != d.root.Content[i].Line || old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return false
	}
	text, ok := scalarText(n)
	if !ok {
		return false
	}
	line := lines[first]
	start := byteOffset(line, old.Column-1)
	end := len(bytes.TrimRight(line, " \t\r\n"))
	if c := lineComment(d.root.Content[i], old); c != "" {
		if j := bytes.LastIndex(line, []byte(c)); j >= start {
			end = len(bytes.TrimRight(line[:j], " \t"))
		}
	}
	if start > end {
		return false
	}
	nl := append([]byte{}, line[:start]...)
	nl = append(nl, text...)
	nl = append(nl, line[end:]...)
	lines[first] = nl
	return true
}

// SetMany sets several top-level fields like successive Set calls, with
// one YAML re-parse instead of one per field where it can: one-line
// scalar values are edited in place and new fields appended, and only a
// field needing the general path (multi-line values, flow-style
// frontmatter) forces an intermediate parse. The result is byte for byte
// that of the Set calls. On error the document is unchanged.
func (d *Doc) SetMany(fields [][2]any) error {
	return d.Edit(fields)
}

// Edit is SetMany, then Delete of each key in del, with one re-parse for
// all of it where it can (a queue state change sets a few fields and
// drops a few: each re-parse is a whole YAML decode). The result is byte
// for byte that of SetMany followed by the Delete calls. On error the
// document is unchanged.
func (d *Doc) Edit(fields [][2]any, del ...string) error {
	orig, origRoot := d.front, d.root
	slow := d.root.Style&yaml.FlowStyle != 0
	for _, k := range del {
		for _, kv := range fields {
			if kv[0].(string) == k {
				slow = true // set then deleted in one edit: take the plain path
			}
		}
	}
	if slow {
		if err := d.setMany(fields, nil); err != nil {
			return err
		}
		for _, k := range del {
			if err := d.Delete(k); err != nil {
				d.front, d.root = orig, origRoot
				return err
			}
		}
		return nil
	}
	return d.setMany(fields, del)
}

func (d *Doc) setMany(fields [][2]any, del []string) error {
	if d.root.Style&yaml.FlowStyle != 0 {
		for _, kv := range fields {
			if err := d.Set(kv[0].(string), kv[1]); err != nil {
				return err
			}
		}
		return nil
	}
	orig, origRoot := d.front, d.root
	lines := splitLines(d.front)
	var tail []byte // new entries, appended after the existing ones
	seen := map[string]bool{}
	// While every change is a plain one-line scalar in a frontmatter
	// without comments, anchors, tags or block scalars, the node tree is
	// patched instead of re-parsed (patchTree; TestEditPatchMatchesParse).
	p := &treePatch{ok: d.nl == "\n" && !bytes.ContainsAny(d.front, "#&*!|>")}
	flush := func() error {
		p.ok = false
		if err := d.replaceFront(append(bytes.Join(lines, nil), tail...)); err != nil {
			return err
		}
		lines, tail, seen = splitLines(d.front), nil, map[string]bool{}
		return nil
	}
	for _, kv := range fields {
		key := kv[0].(string)
		n, err := valueNode(key, kv[1])
		if err != nil {
			d.front, d.root = orig, origRoot
			return err
		}
		if key == "" || strings.ContainsAny(key, "\n\r") {
			d.front, d.root = orig, origRoot
			return fmt.Errorf("invalid field name %q", key)
		}
		if seen[key] {
			if err := flush(); err != nil {
				d.front, d.root = orig, origRoot
				return err
			}
		}
		seen[key] = true
		i := d.index(key)
		if i < 0 {
			text, err := renderEntry(key, n, d.nl)
			if err != nil {
				d.front, d.root = orig, origRoot
				return err
			}
			tail = append(tail, text...)
			if v, ok := fastScalarText(n); ok && p.ok && plainSafe(key) && v != "" {
				p.tail = append(p.tail, [2]*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, {Kind: yaml.ScalarNode, Tag: n.Tag, Value: n.Value}})
			} else {
				p.ok = false
			}
			continue
		}
		old := d.root.Content[i+1]
		if n.Kind == yaml.ScalarNode && old.Kind == yaml.ScalarNode && n.Tag == "!!str" && old.Tag == "!!str" && n.Style == 0 &&
			(old.Style == yaml.SingleQuotedStyle || old.Style == yaml.DoubleQuotedStyle) && !strings.Contains(n.Value, "\n") {
			n.Style = old.Style
		}
		if d.editInPlace(lines, i, n) {
			if _, ok := fastScalarText(n); ok && old.Style == 0 {
				p.set = append(p.set, treeSet{i + 1, n.Tag, n.Value})
			} else {
				p.ok = false
			}
			continue
		}
		if err := flush(); err != nil {
			d.front, d.root = orig, origRoot
			return err
		}
		if err := d.SetNode(key, n); err != nil {
			d.front, d.root = orig, origRoot
			return err
		}
		lines = splitLines(d.front)
	}
	// Deleted entries: blank their lines. In-place edits changed no line
	// numbers and new entries are in tail, so d.root's positions still
	// index lines; a blanked line counts as blank for the entries after.
	for _, k := range del {
		if i := d.index(k); i >= 0 {
			first, last := d.entryLines(i, lines)
			for j := first; j <= last; j++ {
				lines[j] = nil
			}
			p.del = append(p.del, treeDel{i, first + 1, last + 1})
		}
	}
	if p.ok {
		if root := p.apply(d.root, len(lines)); root != nil {
			d.front, d.root = append(bytes.Join(lines, nil), tail...), root
			return nil
		}
	}
	if err := flush(); err != nil {
		d.front, d.root = orig, origRoot
		return err
	}
	return nil
}

// treePatch records the edits of one setMany so the node tree can be
// updated as a re-parse of the edited text would build it.
type treePatch struct {
	ok   bool
	set  []treeSet       // in-place values
	del  []treeDel       // deleted entries
	tail [][2]*yaml.Node // appended key/value, one line each
}

type treeSet struct {
	i          int // index of the value node in root.Content
	tag, value string
}

type treeDel struct {
	i           int // index of the key node in root.Content
	first, last int // 1-based lines removed
}

// apply returns the patched tree (a copy; nodes of the old tree are not
// changed), or nil when it cannot (the caller re-parses). nlines is the
// number of lines of the frontmatter before the deletions.
func (p *treePatch) apply(root *yaml.Node, nlines int) *yaml.Node {
	removed := func(line int) int { // lines removed above line
		n := 0
		for _, d := range p.del {
			if d.last < line {
				n += d.last - d.first + 1
			}
		}
		return n
	}
	gone := map[int]bool{}
	for _, d := range p.del {
		gone[d.i] = true
	}
	vals := map[int]treeSet{}
	for _, s := range p.set {
		vals[s.i] = s
	}
	out := *root
	out.Content = nil
	for i := 0; i+1 < len(root.Content); i += 2 {
		if gone[i] {
			continue
		}
		k, v := root.Content[i], root.Content[i+1]
		if s, ok := vals[i+1]; ok {
			c := *v
			c.Tag, c.Value = s.tag, s.value
			v = &c
		}
		if delta := removed(k.Line); delta > 0 {
			k, v = shiftLines(k, delta), shiftLines(v, delta)
		}
		out.Content = append(out.Content, k, v)
	}
	line := nlines - removed(nlines+1) // lines left
	for _, kv := range p.tail {
		line++
		k, v := *kv[0], *kv[1]
		k.Line, k.Column = line, 1
		v.Line, v.Column = line, len(k.Value)+3
		out.Content = append(out.Content, &k, &v)
	}
	if len(out.Content) == 0 {
		return nil
	}
	out.Line, out.Column = out.Content[0].Line, out.Content[0].Column
	return &out
}

// shiftLines returns a copy of n and its children moved up delta lines.
func shiftLines(n *yaml.Node, delta int) *yaml.Node {
	c := *n
	c.Line -= delta
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			c.Content[i] = shiftLines(ch, delta)
		}
	}
	return &c
}

// valueNode converts a Set value to a node (times as timestamps).
func valueNode(key string, v any) (*yaml.Node, error) {
	if n, ok := v.(*yaml.Node); ok {
		return n, nil
	}
	if t, isTime := v.(time.Time); isTime {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: schema.FormatTime(t)}, nil
	}
	if n := fastNode(v); n != nil {
		return n, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("set %s: %w", key, err)
	}
	return n, nil
}

// fastNode is yaml's Node.Encode for the values the engine sets on every
// state change (counters, names, ids), without running the encoder (which
// was most of the CPU of a queue claim). It returns nil for anything
// else; TestFastScalarMatchesEncoder checks it against the encoder.
func fastNode(v any) *yaml.Node {
	switch x := v.(type) {
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
	case string:
		if plainSafe(x) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
		}
	}
	return nil
}

// plainSafe reports whether s is a string the YAML encoder writes plain
// (unquoted) and a decoder reads back as the same string: a letter, then
// letters, digits and _ . / - only, and not a word YAML 1.1 reads as a
// boolean or null. Conservative: anything else takes the encoder.
func plainSafe(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// fastScalarText is scalarText for nodes fastNode makes and timestamps
// from valueNode; ok is false for anything else.
func fastScalarText(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" || n.Anchor != "" {
		return "", false
	}
	switch n.Tag {
	case "!!int":
		if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil && n.Value == strconv.FormatInt(v, 10) {
			return n.Value, true
		}
	case "!!str":
		if plainSafe(n.Value) {
			return n.Value, true
		}
	case "!!timestamp":
		if t, err := time.Parse(time.RFC3339Nano, n.Value); err == nil && schema.FormatTime(t) == n.Value {
			return n.Value, true
		}
	}
	return "", false
}

// Delete removes a top-level field and its lines.
func (d *Doc) Delete(key string) error {
	i := d.index(key)
	if i < 0 {
		return nil
	}
	if d.root.Style&yaml.FlowStyle != 0 {
		return d.reencode(func(m *yaml.Node) { m.Content = append(m.Content[:i], m.Content[i+2:]...) })
	}
	lines := splitLines(d.front)
	first, last := d.entryLines(i, lines)
	out := append(append([][]byte{}, lines[:first]...), lines[last+1:]...)
	return d.replaceFront(bytes.Join(out, nil))
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

func renderEntry(key string, n *yaml.Node, nl string) ([]byte, error) {
	if text, ok := fastScalarText(n); ok && plainSafe(key) {
		return []byte(key + ": " + text + nl), nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, clean(n)}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("set %s: %w", key, err)
	}
	return fixEOL(buf.Bytes(), nl), nil
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
	if text, ok := fastScalarText(n); ok {
		return []byte(text), true
	}
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
	var out [][]byte
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
