package docstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// MaxDocSize bounds the size of a document file. Larger files are refused
// before they are read, so a stray log or binary cannot exhaust memory.
const MaxDocSize = 8 << 20

// Doc is one document: YAML frontmatter and a markdown body.
//
// A Doc keeps the exact bytes it was parsed from. Edits rewrite only the
// lines of the fields they touch, so key order, comments, quoting, unknown
// keys, line endings and the body survive byte for byte.
//
// The splitter is our own rather than adrg/frontmatter's: that package
// returns the decoded values and the body but not the byte offsets of the
// fences, and those offsets are what line-exact editing and path:line:col
// errors need.
type Doc struct {
	Path string       // slash-separated path relative to the store root
	Kind *schema.Kind // nil when the path matches no kind
	Name string       // the document's name within its kind
	Rev  string       // content hash of the bytes last read or written

	head  []byte // optional BOM and the opening "---" line
	front []byte // frontmatter text, every line ending in a newline
	tail  []byte // the closing "---" line
	body  []byte
	nl    string     // line ending of the fences: "\n" or "\r\n"
	root  *yaml.Node // the frontmatter mapping
	perm  uint32     // permission bits of the file it was read from; 0: a new document (mode.go)
}

// Revision is the content hash used as a document's revision.
func Revision(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ValidRevision reports whether rev has Revision's form: 16 lowercase
// hex digits.
func ValidRevision(rev string) bool {
	if len(rev) != 16 {
		return false
	}
	for _, r := range rev {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse splits and parses a document. path is used only in errors.
func Parse(path string, data []byte) (*Doc, error) {
	perr := func(line, col int, format string, args ...any) error {
		return &ParseError{Path: path, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxDocSize {
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("%d bytes is larger than the %d byte limit", len(data), MaxDocSize), Err: ErrTooLarge}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line, col := position(data, i)
		return nil, perr(line, col, "binary content (NUL byte); not a markdown document")
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		line, col := position(data, i)
		return nil, perr(line, col, "invalid UTF-8")
	}
	d := &Doc{Path: path, Rev: Revision(data)}
	rest := data
	bom := []byte{}
	if bytes.HasPrefix(rest, []byte("\xef\xbb\xbf")) {
		bom, rest = rest[:3], rest[3:]
	}
	first, after, ok := cutLine(rest)
	if !ok || string(trimEOL(first)) != "---" {
		return nil, &ParseError{Path: path, Line: 1, Col: 1, Msg: "missing frontmatter: a document starts with a line `---`", Err: ErrNoFrontmatter}
	}
	d.head = append(append([]byte{}, bom...), first...)
	d.nl = eol(first)
	frontStart := len(data) - len(after)
	rest = after
	line := 2
	for {
		l, next, ok := cutLine(rest)
		if !ok {
			return nil, perr(1, 1, "missing closing `---`: the frontmatter opened on line 1 is never closed")
		}
		if s := trimEOL(l); string(s) == "---" || string(s) == "..." { // no allocation: compared, not kept
			d.front = data[frontStart : len(data)-len(rest)]
			d.tail = l
			d.body = next
			break
		}
		rest = next
		line++
	}
	// YAML also breaks lines at a lone CR, NEL, LS and PS. Line-exact
	// editing counts "\n" lines, so such a break would make an edit of one
	// field swallow the next; refuse them with their position instead.
	for i := 0; i < len(d.front); i++ {
		c := d.front[i]
		bad := ""
		switch {
		case c == '\r' && (i+1 == len(d.front) || d.front[i+1] != '\n'):
			bad = "a carriage return without a newline"
		case c == 0xc2 && i+1 < len(d.front) && d.front[i+1] == 0x85:
			bad = "U+0085 (NEL)"
		case c == 0xe2 && i+2 < len(d.front) && d.front[i+1] == 0x80 && (d.front[i+2] == 0xa8 || d.front[i+2] == 0xa9):
			bad = "U+2028/U+2029 (line or paragraph separator)"
		}
		if bad != "" {
			line, col := position(data, frontStart+i)
			return nil, perr(line, col, "frontmatter contains %s, which YAML reads as a line break; use \\n or \\r\\n line endings", bad)
		}
	}
	if err := d.parseFront(); err != nil {
		return nil, err
	}
	return d, nil
}

// parseFront (re)builds the node tree from d.front.
func (d *Doc) parseFront() error {
	// The common shape without yaml.v3 (same tree); anything else below.
	if root, ok := parseFrontFast(d.front); ok {
		d.root = root
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal(d.front, &n); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		// yaml.v3 prints scanner error lines 1-based but parser error
		// lines 0-based (the line of the enclosing collection), and no line
		// at all when that is 0. Shift parser errors to 1-based.
		if isParserError(msg) {
			line++
		}
		if line > 0 {
			line += d.frontLine() - 1
		}
		return &ParseError{Path: d.Path, Line: line, Col: 1, Msg: "frontmatter: " + msg}
	}
	if len(n.Content) == 0 {
		d.root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1}
		return nil
	}
	root := n.Content[0]
	if root.Kind != yaml.MappingNode {
		return &ParseError{Path: d.Path, Line: root.Line + d.frontLine() - 1, Col: root.Column,
			Msg: "frontmatter must be a mapping of `field: value` lines"}
	}
	for i := 0; i < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind != yaml.ScalarNode {
			return &ParseError{Path: d.Path, Line: k.Line + d.frontLine() - 1, Col: k.Column, Msg: "frontmatter keys must be plain names"}
		}
	}
	if bad, msg := checkAliases(root); bad != nil {
		return &ParseError{Path: d.Path, Line: bad.Line + d.frontLine() - 1, Col: bad.Column, Msg: "frontmatter: " + msg}
	}
	d.root = root
	return nil
}

// checkAliases refuses frontmatter whose aliases expand to more than
// maxExpand values (a "billion laughs": each anchor aliasing the previous
// one nine times is 9^9 values from a few lines) or to infinitely many
// (an alias inside its own anchor). Readers would otherwise have to cut
// the expansion and read the rest as null: bad input is reported, never
// truncated. It returns the alias where the limit is crossed.
func checkAliases(root *yaml.Node) (*yaml.Node, string) {
	sizes := map[*yaml.Node]int{}
	onPath := map[*yaml.Node]bool{}
	var cyclic *yaml.Node
	// size is the number of values n stands for, aliases expanded,
	// saturated at maxExpand+1.
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return 1
			}
			if onPath[n.Alias] {
				if cyclic == nil {
					cyclic = n
				}
				return maxExpand + 1
			}
			n = n.Alias
		}
		if v, ok := sizes[n]; ok {
			return v
		}
		onPath[n] = true
		total := 1
		for _, c := range n.Content {
			total = min(total+size(c), maxExpand+1)
		}
		delete(onPath, n)
		sizes[n] = total
		return total
	}
	expanded := 0
	var walk func(n *yaml.Node) *yaml.Node
	walk = func(n *yaml.Node) *yaml.Node {
		if n.Kind == yaml.AliasNode {
			if expanded += size(n); expanded > maxExpand {
				return n
			}
			return nil
		}
		for _, c := range n.Content {
			if bad := walk(c); bad != nil {
				return bad
			}
		}
		return nil
	}
	if bad := walk(root); bad != nil {
		if cyclic != nil {
			return cyclic, fmt.Sprintf("alias *%s refers to its own anchor (infinite expansion)", cyclic.Value)
		}
		return bad, fmt.Sprintf("alias expansion exceeds %d values", maxExpand)
	}
	return nil, ""
}

// parserErrors are yaml.v3's parser (not scanner) messages; see parseFront.
var parserErrors = []string{"did not find expected <document start>", "did not find expected node content",
	"did not find expected key", "did not find expected '-' indicator", "did not find expected ',' or ']'",
	"did not find expected ',' or '}'", "found undefined tag handle", "found duplicate %YAML directive",
	"found incompatible YAML document", "found duplicate %TAG directive"}

func isParserError(msg string) bool {
	for _, p := range parserErrors {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// frontLine is the file line number of the first frontmatter line.
func (d *Doc) frontLine() int { return 2 }

// New returns an empty document of a kind with the given fields set in
// order, and the body.
func New(kind *schema.Kind, fields []Field, body []byte) (*Doc, error) {
	d := &Doc{Kind: kind, head: []byte("---\n"), tail: []byte("---\n"), nl: "\n", body: body}
	d.root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, kv := range fields {
		if err := d.Set(kv.Key, kv.Value); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Bytes renders the document.
func (d *Doc) Bytes() []byte {
	out := make([]byte, 0, len(d.head)+len(d.front)+len(d.tail)+len(d.body))
	out = append(out, d.head...)
	out = append(out, d.front...)
	out = append(out, d.tail...)
	return append(out, d.body...)
}

// EqualBytes reports whether data is what Bytes would render, without
// rendering it.
func (d *Doc) EqualBytes(data []byte) bool {
	if len(data) != len(d.head)+len(d.front)+len(d.tail)+len(d.body) {
		return false
	}
	for _, part := range [4][]byte{d.head, d.front, d.tail, d.body} {
		if !bytes.HasPrefix(data, part) {
			return false
		}
		data = data[len(part):]
	}
	return true
}

// Body returns the markdown after the frontmatter.
func (d *Doc) Body() []byte { return d.body }

// Text returns the body as its writer gave it: without the one blank
// line the store writes between the frontmatter and the body (NewDoc
// puts it in front of a body that does not start with one; the writers
// of ledgers and constitutions write "\n" + text). A body that does not
// start with a blank line, written by hand, is returned as it is.
func (d *Doc) Text() []byte {
	if b, ok := bytes.CutPrefix(d.body, []byte("\r\n")); ok {
		return b
	}
	if b, ok := bytes.CutPrefix(d.body, []byte("\n")); ok {
		return b
	}
	return d.body
}

// SetBody replaces the markdown body.
func (d *Doc) SetBody(b []byte) {
	if len(b) > 0 && !bytes.HasSuffix(d.tail, []byte("\n")) {
		d.tail = append(append([]byte{}, d.tail...), d.nl...)
	}
	d.body = append([]byte(nil), b...)
}

// Front returns the frontmatter mapping node. Callers must not modify it;
// use Set, SetNode, Delete and Rename.
func (d *Doc) Front() *yaml.Node { return d.root }

// Clone returns an independent copy.
func (d *Doc) Clone() *Doc {
	c, err := Parse(d.Path, d.Bytes())
	if err != nil { // cannot happen: d was parsed or built by us
		panic("docstore: clone of unparsable document: " + err.Error())
	}
	c.Kind, c.Name, c.Rev, c.perm = d.Kind, d.Name, d.Rev, d.perm
	return c
}

// Warnings returns what the document's kind finds allowed but probably
// not meant (schema.Kind.Warnings), with file positions: for check to
// report, never a reason to refuse it.
func (d *Doc) Warnings() []*schema.FieldError {
	if d.Kind == nil {
		return nil
	}
	v := d.View()
	warns := d.Kind.Warnings(v.root)
	for _, w := range warns {
		w.Path = d.Path
		w.Line += d.frontLine() - 1
	}
	return warns
}

// Validate checks the document against its kind's schema after migrating
// a copy in memory, and returns the problems with file positions.
func (d *Doc) Validate(strict bool) []*schema.FieldError {
	if d.Kind == nil {
		return []*schema.FieldError{{Path: d.Path, Line: 1, Col: 1, Msg: "not a document of any known kind"}}
	}
	v := d.View()
	errs := d.Kind.Validate(v.root, strict)
	for _, e := range errs {
		e.Path = d.Path
		e.Line += d.frontLine() - 1
		if len(v.root.Content) == 0 && e.Line < d.frontLine() {
			e.Line = 1
		}
	}
	return errs
}

// View returns the document as the current schema sees it: d itself, or
// a migrated copy if d was written by an older schema version. Nothing is
// written; `tavern migrate` does that.
func (d *Doc) View() *Doc {
	if d.Kind == nil {
		return d
	}
	if v, _ := schema.DocVersion(d); v >= d.Kind.Version {
		return d
	}
	c := d.Clone()
	if _, err := d.Kind.Migrate(c); err != nil {
		return d
	}
	return c
}

func position(data []byte, off int) (line, col int) {
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, utf8.RuneCount(data[start:off]) + 1
}

// cutLine returns the first line including its newline. ok is false when
// there is no complete line (no newline) and data is empty; a last line
// without a newline is returned as a line.
func cutLine(data []byte) (line, rest []byte, ok bool) {
	if len(data) == 0 {
		return nil, nil, false
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i+1], data[i+1:], true
	}
	return data, nil, true
}

func trimEOL(l []byte) []byte {
	l = bytes.TrimSuffix(l, []byte("\n"))
	l = bytes.TrimSuffix(l, []byte("\r"))
	return bytes.TrimRight(l, " \t")
}

func eol(l []byte) string {
	if bytes.HasSuffix(l, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// Replace swaps the whole content of d for data (as written by an editor),
// keeping its path, kind and name. d is unchanged if data does not parse.
func (d *Doc) Replace(data []byte) error {
	n, err := Parse(d.Path, data)
	if err != nil {
		return err
	}
	d.head, d.front, d.tail, d.body, d.nl, d.root = n.head, n.front, n.tail, n.body, n.nl, n.root
	return nil
}

// Field is one frontmatter key and its value, in the order a document
// lists them: New, SetMany and Edit take a []Field so the order a caller
// writes is the order the file shows.
type Field struct {
	Key   string
	Value any
}
