package docstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// nodeDiff returns the first difference between two node trees as
// "path: field got, want", or "" when they are identical.
func nodeDiff(path string, got, want *yaml.Node) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("%s: node %v, want %v", path, got, want)
		}
		return ""
	}
	type field struct {
		name      string
		got, want any
	}
	for _, f := range []field{
		{"Kind", got.Kind, want.Kind}, {"Style", got.Style, want.Style}, {"Tag", got.Tag, want.Tag},
		{"Value", got.Value, want.Value}, {"Anchor", got.Anchor, want.Anchor},
		{"HeadComment", got.HeadComment, want.HeadComment}, {"LineComment", got.LineComment, want.LineComment},
		{"FootComment", got.FootComment, want.FootComment}, {"Line", got.Line, want.Line}, {"Column", got.Column, want.Column},
		{"Content==nil", got.Content == nil, want.Content == nil}, {"len(Content)", len(got.Content), len(want.Content)},
	} {
		if f.got != f.want {
			return fmt.Sprintf("%s: %s %#v, want %#v", path, f.name, f.got, f.want)
		}
	}
	if d := nodeDiff(path+".Alias", got.Alias, want.Alias); d != "" {
		return d
	}
	for i := range got.Content {
		if d := nodeDiff(fmt.Sprintf("%s[%d]", path, i), got.Content[i], want.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkFast runs parseFrontFast on front and, when it accepts, requires
// yaml.v3 to parse front to the identical mapping. It reports whether the
// fast path accepted.
func checkFast(tb testing.TB, front []byte) bool {
	tb.Helper()
	got, ok := parseFrontFast(front)
	if !ok {
		if got != nil {
			tb.Fatalf("parseFrontFast(%q) refused but returned a tree", front)
		}
		return false
	}
	var n yaml.Node
	if err := yaml.Unmarshal(front, &n); err != nil {
		tb.Fatalf("parseFrontFast accepted %q, which yaml.v3 refuses: %v", front, err)
	}
	if len(n.Content) != 1 {
		tb.Fatalf("parseFrontFast accepted %q, yaml.v3 gives %d documents' content", front, len(n.Content))
	}
	want := n.Content[0]
	if d := nodeDiff("root", got, want); d != "" {
		tb.Fatalf("parseFrontFast(%q) differs from yaml.v3: %s", front, d)
	}
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("parseFrontFast(%q) is not DeepEqual to yaml.v3's tree", front)
	}
	return true
}

// frontOf returns the frontmatter bytes of a document as Parse splits it.
func frontOf(tb testing.TB, name string, data []byte) ([]byte, bool) {
	tb.Helper()
	d, err := Parse(name, data)
	if err != nil {
		return nil, false
	}
	return d.front, true
}

func TestParseFrontFastTable(t *testing.T) {
	accept := []string{
		"a: b\n",
		"a:\n",
		"a:\nb:\n",
		"a: x\r\nb:\r\n  - y\r\n",
		"schema_version: 1\nid: p05-01a20116-c2a3-7634-8a96-0fa840dec3a0\n",
		"id: 01a20116-fd3a-7387-94d3-4b5d5b52cb0d\n",
		"id: 0193a1f2-7c4e-7b1a-9d2e-3f4a5b6c7d8e\n",
		"lease: 5m0s\nlease_grace: 30s\nbackoff_max: 10m0s\n",
		"n: 0\nm: -7\nbig: 999999999999999999\nneg: -999999999999999999\n",
		"t: true\nf: false\n",
		"created: 2026-11-22T02:29:58.563Z\n",
		"created: 2026-11-22T02:29:58Z\nx: 2026-11-22T02:29:58.123456789+02:00\ny: 2026-11-22T02:29:58-05:30\n",
		"claimed_by: root@vm\n",
		"title: compile the parser, then link it\n",
		"title: a:b c=d e/f g+h (i) [j] {k} 'l' \"m\" !n ?o ;p %q &r *s ~t ^u $v |w >x <y `z \\\n",
		"title: café crème …\n",
		"title: 'link it: now'\nlast_error: 'tests fail: #3'\nresult: 'it worked: yes …'\n",
		"title: 'it''s'\nempty: ''\nq: ''''\n",
		"depends_on:\n  - p01-01a20116-c29c-7113-90f4-a9747c217dd8\n  - p05-01a20116-c2a3-7634-8a96-0fa840dec3a0\nattempts: 0\n",
		"queues:\n  - build\n  - 'a: b'\n  - 3\n  - true\n  - 2026-11-22T02:29:58.563Z\n",
		"tags: [go, docstore, bench]\nempty: []\nnums: [1, -2, x.y, a@b, /p, a=b, a+b]\n",
		"a: b\nlast:\n",
		"_x: 1\nx_1_y: z\n",
		"on: 1\nyes: y\nno: n\noff: o\n",
		"v: 1.5m\nu: 12abcg\n",
		"f: 1.5\ng: -0.25\nh: 385.04\ni: 0.0\nl: [1.5, 2]\n",
		"last_error: |-\n  exit status 1\n  spilled the ale: # on p00\nresult: x\n",
		"a: |\n  b\n    c  \n  - d\n  e: f\n  ---\n  'g' …\n",
		"a: |-\r\n  b\r\n  c\r\nd: |\r\n  e\r\n",
		`a: "b"` + "\n" + "c: .b\nd: ./drone.sh\n",
		"output: \"\"\ntitle: \"true\"\nx: \"a: #b 'c' …\"\nl:\n  - \"\"\n",
	}
	long := strings.Repeat("x y", 2000)
	many := ""
	for i := range 40 {
		many += fmt.Sprintf("k%d: %d\n", i, i)
	}
	accept = append(accept, "title: "+long+"\n", "title: '"+long+"'\n", "l:\n  - "+long+"\n", strings.Repeat("k", 128)+": 1\n",
		many, "e: x😀 \ue000\n", "e: '😀'\n")
	for _, in := range accept {
		if !checkFast(t, []byte(in)) {
			t.Errorf("parseFrontFast(%q) refused, want accepted", in)
		}
	}
	reject := []string{
		// Not surely strings to every resolver (mayNotBeString): refused
		// rather than classified.
		"v: 1.2.3\n", "w: 2026-13-45T00:00:00Z\n", "u: 12abc\n", "feb30: 2026-02-30T10:00:00Z\n", "x: 0x1f\n", "x: 1_000\n",
		"x: .5\n", "x: .Inf\n", "x: NULL\n", "x: 2026-11-22\n", "x: 2026-11-22 10:00:00\n", "TRUE: 1\n",
		"", "a: b", "\n", "a: b\n\n", "# c\na: b\n", "a: b # c\n", "a: b\n# c\n",
		"---\na: b\n", "a: b\n---\n", "a: b\n...\n", " a: b\n", "a:\tb\n", "a: b\t\n", "a:  b\n", "a: b \n", "a:b\n",
		"A: b\n", "1a: b\n", "a-b: c\n", "a.b: c\n", "true: x\n", "null: x\n", "false: x\n",
		"a: b\na: c\n",
		"a: &x b\n", "a: *x\n", "a: !!str b\n", "a: !t b\n", "a: >\n  b\n", "a: >-\n  b\n", "a: |+\n  b\n", "a: |2-\n  b\n", "a: |- \n  b\n",
		"a: |-\n", "a: |-\nb: c\n", "a: |-\n   b\n", "a: |-\n  b\n\n  c\n", "a: |-\n  b\n  \n  c\n", "a: |-\n  b\n   \n", "a: |-\n  b\tc\n",
		"a: |-\n  b\n c\n", "a:\n  |-\n  b\n", "a:\n  - |-\n    b\n", "a: |-\n  \x01\n",
		"a: {b: c}\n", "a: b: c\n", "a: b:\n", "a: 'b\n", "a: 'b'c'\n", "a: 'b' \n", "a: 'b\n  c'\n",
		"a: b\n  c\n", "a:\n  b\n", "a:\n- b\n", "a:\n  -b\n", "a:\n  - \n", "a:\n  - - b\n", "a:\n  - b: c\n", "a:\n    - b\n",
		"a: b\n  - c\n", "  - b\n", "a: [b, c\n", "a: [b,c]\n", "a: [b, ]\n", "a: [ b]\n", "a: [b] \n", "a: [b, 'c']\n", "a: [a b]\n",
		"a: [b, 2026-11-22]\n", "a: [[b]]\n", "a: [{b: c}]\n", "a: [b]x\n",
		"a: 01.5\n", "a: 1.\n", "a: -.5\n", "a: 1.5e3\n", "a: .5\n", "a: 1e3\n", "a: .inf\n", "a: 0x1f\n", "a: 0o17\n", "a: 0b101\n", "a: 012\n", "a: 1_000\n",
		"a: +1\n", "a: -0\n", "a: 9999999999999999999\n", "a: True\n", "a: FALSE\n", "a: ~\n", "a: null\n", "a: Null\n",
		"a: 2026-11-22\n", "a: 2026-11-22 10:00:00\n", "a: 2026-11-22t10:00:00Z\n",
		"a: -\n", "a: - b\n", "a: ?b\n", "a: @b\n", "a: %b\n", "a: `b\n", "a: ,b\n", "a: <<\n",
		"a: b\rc\n", "a: b\r\r\n", "a: b\u0085c\n", "a: b\u2028c\n", "a: b\ufeffc\n", "a: b\x01\n", "a: b\x7f\n", "a: \xff\n",
		"a: 'b\u2029'\n", "a: '\x01'\n", `a: "b\"c"` + "\n", `a: "b\nc"` + "\n", `a: "b" c"` + "\n", `a: "b` + "\n", `a: "b" ` + "\n",
		"%YAML 1.2\na: b\n", "a: b\n%x\n",
	}
	reject = append(reject, strings.Repeat("k", 129)+": 1\n", many+"k3: x\n", many+"k39:\n", "e: \uffff\n", "e: 😀\n")
	for _, in := range reject {
		if checkFast(t, []byte(in)) {
			t.Errorf("parseFrontFast(%q) accepted, want refused", in)
		}
	}
}

// tavernFronts returns the frontmatter of documents as the engine writes
// them, built through New and the field setters with the values the
// queues and agents packages use (ids, times, ints, lists, titles that
// need quoting), and after the edits of a claim and a completion.
func tavernFronts(tb testing.TB) map[string][]byte {
	tb.Helper()
	now := time.Date(2026, 11, 22, 2, 28, 23, 279_000_000, time.UTC)
	out := map[string][]byte{}
	titles := []string{"compile parser", "link it: now", "fix #12", "it's", "café", "3 tests", "true", "a, b", ""}
	for i, title := range titles {
		fields := []Field{
			{Key: schema.VersionField, Value: 1},
			{Key: "id", Value: fmt.Sprintf("p%02d-%s", i, NewID())},
			{Key: "queue", Value: "build"},
		}
		if title != "" {
			fields = append(fields, Field{Key: "title", Value: title})
		}
		fields = append(fields, Field{Key: "priority", Value: i})
		if i%2 == 1 {
			fields = append(fields, Field{Key: "depends_on", Value: []string{"p01-" + NewID(), "p02-" + NewID()}})
		}
		fields = append(fields, Field{Key: "attempts", Value: 0}, Field{Key: "created", Value: now}, Field{Key: "updated", Value: now})
		d, err := New(schema.Item, fields, []byte("\nbody\n"))
		if err != nil {
			tb.Fatal(err)
		}
		d, err = Parse("queues/build/pending/x.md", d.Bytes())
		if err != nil {
			tb.Fatal(err)
		}
		out[fmt.Sprintf("item-%d-pending", i)] = d.front
		// claim, as queues' take does it
		if err := d.SetMany([]Field{{Key: "attempts", Value: 1}, {Key: "updated", Value: now.Add(time.Second)}, {Key: "claimed_by", Value: "root@vm"},
			{Key: "claim_attempt", Value: 1}, {Key: "claim_kind", Value: "lease"}, {Key: "lease_until", Value: now.Add(5 * time.Minute)}, {Key: "started", Value: now.Add(time.Second)}}); err != nil {
			tb.Fatal(err)
		}
		out[fmt.Sprintf("item-%d-claimed", i)] = d.front
		// completion
		if err := d.Edit([]Field{{Key: "updated", Value: now.Add(2 * time.Second)}, {Key: "completed", Value: now.Add(2 * time.Second)},
			{Key: "result", Value: "done: all " + strconv.Itoa(i) + " tests pass …"}}, "lease_until"); err != nil {
			tb.Fatal(err)
		}
		out[fmt.Sprintf("item-%d-done", i)] = d.front
	}
	agent, err := New(schema.Agent, []Field{{Key: schema.VersionField, Value: 1}, {Key: "id", Value: NewID()}, {Key: "name", Value: "alice"}, {Key: "role", Value: "builder"},
		{Key: "state", Value: "idle"}, {Key: "applied_state", Value: "idle"}, {Key: "queues", Value: []string{"build", "docs"}}, {Key: "spawns", Value: 0},
		{Key: "created", Value: now}, {Key: "updated", Value: now}, {Key: "state_changed", Value: now}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	out["agent"] = agent.front
	return out
}

// TestParseFrontFastDifferential compares the fast path with yaml.v3 on
// every document we have: the golden documents, the FuzzParse and
// FuzzParseFrontFast corpora, and documents written by the engine. The
// shapes Tavern writes must take the fast path.
func TestParseFrontFastDifferential(t *testing.T) {
	accepted, total := 0, 0
	for name, data := range readRoundtrip(t) {
		if front, ok := frontOf(t, name, data); ok {
			total++
			if checkFast(t, front) {
				accepted++
			}
		}
	}
	for _, dir := range []string{"testdata/fuzz/FuzzParse", "testdata/fuzz/FuzzParseFrontFast"} {
		for name, data := range readCorpus(t, dir) {
			total++
			if checkFast(t, data) {
				accepted++
			} else if strings.HasPrefix(name, "tavern-") {
				t.Errorf("%s/%s: written by tavern but refused by the fast path:\n%s", dir, name, data)
			}
			// The corpus of FuzzParse holds whole documents.
			if front, ok := frontOf(t, name, data); ok {
				total++
				if checkFast(t, front) {
					accepted++
				}
			}
		}
	}
	for name, front := range tavernFronts(t) {
		total++
		if !checkFast(t, front) {
			t.Errorf("%s: written by the engine but refused by the fast path:\n%s", name, front)
		} else {
			accepted++
		}
	}
	t.Logf("fast path took %d of %d inputs", accepted, total)
}

// TestParseUsesFastPath checks that Parse gives the fast path's tree for
// an item, and that the fields read back as typed values.
func TestParseUsesFastPath(t *testing.T) {
	d, err := Parse("queues/build/claimed/x.md", itemDoc)
	if err != nil {
		t.Fatal(err)
	}
	fast, ok := parseFrontFast(d.front)
	if !ok {
		t.Fatal("the item's frontmatter is refused by the fast path")
	}
	if diff := nodeDiff("root", d.root, fast); diff != "" {
		t.Fatalf("Parse's tree is not the fast path's: %s", diff)
	}
	if got, want := d.String("claimed_by"), "root@vm"; got != want {
		t.Errorf("claimed_by = %q, want %q", got, want)
	}
	if got, ok := d.Int("claim_attempt"); !ok || got != 1 {
		t.Errorf("claim_attempt = %d, %v; want 1, true", got, ok)
	}
	if got, ok := d.Time("lease_until"); !ok || !got.Equal(time.Date(2026, 11, 22, 2, 35, 11, 735_000_000, time.UTC)) {
		t.Errorf("lease_until = %v, %v", got, ok)
	}
	if got, want := d.Strings("depends_on"), []string{"p01-01a20116-c29c-7113-90f4-a9747c217dd8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("depends_on = %q, want %q", got, want)
	}
	if got, want := d.String("title"), "link it: now"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
}

// readCorpus reads a `go test fuzz v1` corpus directory of []byte inputs.
func readCorpus(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		rest, ok := bytes.CutPrefix(raw, []byte("go test fuzz v1\n"))
		if !ok {
			tb.Fatalf("%s: not a fuzz corpus file", f)
		}
		s := strings.TrimSpace(string(rest))
		if !strings.HasPrefix(s, "[]byte(") || !strings.HasSuffix(s, ")") {
			tb.Fatalf("%s: not a single []byte value", f)
		}
		v, err := strconv.Unquote(s[len("[]byte(") : len(s)-1])
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = []byte(v)
	}
	return out
}

// FuzzParseFrontFast: whenever the fast path accepts a frontmatter,
// yaml.v3 parses it to the identical mapping. Seeds: testdata/fuzz/
// FuzzParseFrontFast (documents written by tavern, and every divergence
// found so far) and the acceptance table's shapes.
func FuzzParseFrontFast(f *testing.F) {
	for _, s := range []string{
		"a: b\n", "a:\n  - b\n", "a: [b, 1]\n", "a: 'b'' c'\n", "a: 1\nb: true\nc: 2026-11-22T02:29:58.563Z\n",
		"a: x\r\nb:\r\n", "lease: 5m0s\n", "title: café …\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, front []byte) {
		checkFast(t, front)
		checkFast(t, synthFront(front))
	})
}

// Fragments synthFront assembles lines from: the pieces of accepted
// lines and the characters and words at the edge of what is accepted.
var (
	synthPrefixes = []string{"", "", "", "  - ", "  - ", "  ", " ", "- ", "   - ", "    "}
	synthKeys     = []string{"a", "id", "title", "a_1", "_x", "true", "null", "y", "n", "on", "A", "1", "a-b", "x:y", ""}
	synthSeps     = []string{": ", ": ", ": ", ":", ":  ", " : ", ":\t"}
	synthPieces   = []string{
		"x", "ab", "1", "0", "9", "-", "+", ".", "e", "E", "3", "_", ":", " ", "#", "'", "''", "\"", "[", "]", ", ", ",",
		"{", "}", "|", "|-", ">", "&a", "*a", "!", "!!str ", "%", "@", "`", "~", "/", "=", "\\", "\t", "\r", "…", "é",
		"\u00a0", "😀", "\ue000", "\uffff", "\u2028", "\ufeff", "\u0085", "\x01", "\x7f", "true", "True", "null", "Null", "false", ".inf", ".nan",
		"0x1f", "0o17", "0b1", "1_0", "1.5", "1e3", "<<", "2026-11-22T02:29:58.563Z", "2026-11-22", "2026-02-30T10:00:00Z",
		"T", "Z", "t", "+02:00", "-05:30", "12:30:00", "5m0s", "root@vm", "p05-01a20116-c2a3-7634-8a96-0fa840dec3a0",
		"---", "...",
	}
)

// synthFront turns fuzz bytes into a frontmatter of key/value and list
// lines built from the fragments above, so that the fuzzer spends its
// time near the boundary of what the fast path accepts rather than on
// bytes it refuses at the first character. Each line takes a control
// byte: bit 0 drops the key, bits 1-3 the value's form (plain, quoted,
// flow list, block scalar), bits 4-6 the number of fragments, bit 7 a
// CR before the newline.
func synthFront(data []byte) []byte {
	var b bytes.Buffer
	pick := func(list []string) string {
		if len(data) == 0 {
			return list[0]
		}
		c := data[0]
		data = data[1:]
		return list[int(c)%len(list)]
	}
	pieces := func(n int, sep string) {
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(sep)
			}
			b.WriteString(pick(synthPieces))
		}
	}
	for len(data) > 0 {
		c := data[0]
		data = data[1:]
		pre := pick(synthPrefixes)
		b.WriteString(pre)
		if pre == "" || c&1 == 0 {
			b.WriteString(pick(synthKeys))
			b.WriteString(pick(synthSeps))
		}
		n := int(c>>4) & 7
		eol := "\n"
		if c&0x80 != 0 {
			eol = "\r\n"
		}
		switch c >> 1 & 7 {
		case 1:
			b.WriteString("'")
			pieces(n, "")
			b.WriteString("'")
		case 2:
			b.WriteString(`"`)
			pieces(n, "")
			b.WriteString(`"`)
		case 3:
			b.WriteString("[")
			pieces(n, ", ")
			b.WriteString("]")
		case 4:
			b.WriteString(pick([]string{"|-", "|", "|+", ">-", "|2-"}))
			for i := 0; i < n; i++ {
				b.WriteString(eol)
				b.WriteString(pick([]string{"  ", "  ", "   ", " ", ""}))
				pieces(1+i%2, "")
			}
		case 5:
		default:
			pieces(n, "")
		}
		b.WriteString(eol)
	}
	return b.Bytes()
}
