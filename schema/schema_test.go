package schema

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func mapping(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

func TestValidate(t *testing.T) {
	tests := []struct {
		kind   *Kind
		src    string
		strict bool
		want   []string // "line:col: field: message" prefixes
	}{
		{Agent, "name: a\nstate: idle\nspawns: 2\nqueues: [x, y]\n", false, nil},
		{Agent, "name: a\nstate: bogus\n", false, []string{`2:8: state: "bogus" is not one of`}},
		{Agent, "state: wroking\n", false, []string{`1:8: state: "wroking" is not one of idle, working, waiting, verifying, done, failed; did you mean "working"?`}},
		{Agent, "state: WORKING\n", false, []string{`1:8: state: "WORKING" is not one of idle, working, waiting, verifying, done, failed; did you mean "working"?`}},
		{Agent, "spawns: -1\n", false, []string{"1:9: spawns: must be at least 0"}},
		{Agent, "spawns: many\n", false, []string{`1:9: spawns: must be an integer, got "many"`}},
		{Agent, "queues: build\n", false, []string{`1:9: queues: must be a list`}},
		{Agent, "base: &b x\nqueues: [*b, y]\n", false, nil},
		{Agent, "created: yesterday\n", false, []string{"1:10: created:"}},
		{Agent, "created: 2026-01-02T15:04:05Z\nupdated: 2026-01-02 15:04:05.5+02:00\n", false, nil},
		{Agent, "name: ../x\n", false, []string{"1:7: name: invalid name"}},
		{Agent, "custom: 1\n", false, nil},
		{Agent, "custom: 1\n", true, []string{"1:1: custom: unknown field"}},
		{Agent, "state: idle\nstate: done\n", false, []string{"2:1: state: duplicate field"}},
		{Agent, "schema_version: 2\n", false, []string{"1:17: schema_version: version 2 is newer"}},
		{Agent, "schema_version: one\n", false, []string{"1:17: schema_version: must be an integer"}},
		{Commitment, "agent: a\n", false, []string{"1:1: description: required field missing", "1:1: assertion: required field missing"}},
		{Commitment, "description: ~\nassertion: x\n", false, []string{"1:14: description: required, but empty"}},
		{Queue, "lease: 5 minutes\non_empty: steal\nsteal: yes\n", false, []string{`1:8: lease: "5 minutes" is not a duration`, "3:8: steal: must be true or false"}},
		{Memory, "topic: Not Kebab\n", false, []string{"1:8: topic:"}},
	}
	for _, tt := range tests {
		errs := tt.kind.Validate(mapping(t, tt.src), tt.strict)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
			if !errors.Is(e, ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", e)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s %q: got %q, want %q", tt.kind.Name, tt.src, got, tt.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s %q: got %q, want prefix %q", tt.kind.Name, tt.src, got[i], tt.want[i])
			}
		}
	}
}

func TestPathsAndNames(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		kind *Kind
		name string
	}{
		{"tavern.md", Config, ""},
		{"agents/alice.md", Agent, "alice"},
		{"queues/build/queue.md", Queue, "build"},
		{"queues/build/claimed/01J.md", Item, "build/01J"},
		{"commitments/alice/01J.md", Commitment, "alice/01J"},
		{"messages/general/0001.md", Chunk, "general/0001"},
	} {
		k, caps, err := KindOfPath(tt.rel)
		if err != nil || k != tt.kind || k.DocName(caps) != tt.name {
			t.Errorf("KindOfPath(%s) = %v %v %v, want %s %s", tt.rel, k, caps, err, tt.kind.Name, tt.name)
			continue
		}
		if tt.kind == Item {
			continue // Path needs the state
		}
		if p, err := k.Path(tt.name, nil); err != nil || p != tt.rel {
			t.Errorf("%s.Path(%q) = %q, %v", k.Name, tt.name, p, err)
		}
	}
	for _, rel := range []string{"agents/.hidden.md", "agents/a/b.md", "queues/build/stuck/x.md", "agents/x.txt", "widgets/x.md", "../agents/x.md"} {
		if k, _, err := KindOfPath(rel); err == nil {
			t.Errorf("KindOfPath(%s) = %s, want no kind", rel, k.Name)
		}
	}
	if p, err := Item.Path("build/x", map[string]string{"state": "dead"}); err != nil || p != "queues/build/dead/x.md" {
		t.Errorf("Item.Path = %q, %v", p, err)
	}
	if _, err := Item.Path("build/x", map[string]string{"state": "bogus"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Item.Path with a bad state: %v", err)
	}
	for _, bad := range []string{"", ".x", "..", "a/b", `a\b`, "a\x00b", "a\nb", strings.Repeat("x", 201)} {
		if err := ValidName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidName(%q) = %v", bad, err)
		}
	}
	for _, name := range []string{"agent", "agents", "AGENTS", "message", "memories", "tavern"} {
		if _, err := Lookup(name); err != nil {
			t.Errorf("Lookup(%s): %v", name, err)
		}
	}
	if _, err := Lookup("widget"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Lookup(widget): %v", err)
	}
}

type editor struct{ m *yaml.Node }

func (e editor) index(k string) int {
	for i := 0; i+1 < len(e.m.Content); i += 2 {
		if e.m.Content[i].Value == k {
			return i
		}
	}
	return -1
}
func (e editor) Get(k string) *yaml.Node {
	if i := e.index(k); i >= 0 {
		return e.m.Content[i+1]
	}
	return nil
}
func (e editor) SetNode(k string, v *yaml.Node) error {
	if i := e.index(k); i >= 0 {
		e.m.Content[i+1] = v
		return nil
	}
	e.m.Content = append(e.m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	return nil
}
func (e editor) Delete(k string) error { return nil }
func (e editor) Rename(a, b string) error {
	e.m.Content[e.index(a)].Value = b
	return nil
}

func TestMigrateAgentV0(t *testing.T) {
	e := editor{mapping(t, "name: old\nstatus: working\n")}
	changed, err := Agent.Migrate(e)
	if err != nil || !changed {
		t.Fatalf("Migrate: %v, %v", changed, err)
	}
	if e.Get("status") != nil || e.Get("state").Value != "working" || e.Get(VersionField).Value != "1" {
		t.Fatalf("migrated: %+v", e.m.Content)
	}
	if changed, err := Agent.Migrate(e); changed || err != nil {
		t.Fatalf("second Migrate: %v, %v", changed, err)
	}
	// Both keys present: the newer one wins, the old one stays for a person.
	e = editor{mapping(t, "status: a\nstate: idle\n")}
	Agent.Migrate(e)
	if e.Get("status") == nil || e.Get("state").Value != "idle" {
		t.Fatal("migration overwrote an existing state")
	}
}

func TestJSONSchemaShape(t *testing.T) {
	for _, k := range Kinds() {
		s := k.JSONSchema()
		props, _ := s["properties"].(map[string]any)
		if s["type"] != "object" || props == nil || props[VersionField] == nil {
			t.Errorf("%s: %v", k.Name, s)
		}
		req, _ := s["required"].([]string)
		for _, r := range req {
			if props[r] == nil {
				t.Errorf("%s: required %s has no property", k.Name, r)
			}
		}
	}
}

func TestTime(t *testing.T) {
	for _, s := range []string{"2026-01-02T15:04:05Z", "2026-01-02T15:04:05.123+02:00", "2026-01-02 15:04:05Z", "2026-01-02"} {
		if _, err := ParseTime(s); err != nil {
			t.Errorf("ParseTime(%q): %v", s, err)
		}
	}
	tm, _ := ParseTime("2026-01-02T15:04:05.123456+02:00")
	if got := FormatTime(tm); got != "2026-01-02T13:04:05.123Z" {
		t.Errorf("FormatTime = %s", got)
	}
}

// NameOfPath must agree with KindOfPath and DocName on every kind.
func TestNameOfPathMatchesDocName(t *testing.T) {
	paths := []string{
		"agents/alice.md", "queues/build/pending/0193a1f2-7c4e-7b1a-9d2e-3f4a5b6c7d8e.md", "queues/build/queue.md",
		"tuples/token/x.md", "tavern.md", "nope/x.md", "queues/q/elsewhere/x.md", "queues/../x.md",
	}
	for _, k := range Kinds() {
		p := strings.NewReplacer("{", "", "}", "", "|", "", ":", "").Replace(k.Pattern)
		paths = append(paths, p)
	}
	for _, p := range paths {
		k1, caps, err1 := KindOfPath(p)
		k2, name, err2 := NameOfPath(p)
		if (err1 == nil) != (err2 == nil) || k1 != k2 {
			t.Errorf("%s: KindOfPath = %v, %v; NameOfPath = %v, %v", p, k1, err1, k2, err2)
			continue
		}
		if err1 == nil && k1.DocName(caps) != name {
			t.Errorf("%s: name %q, want %q", p, name, k1.DocName(caps))
		}
	}
}

// Captures gives Match's captures in pattern order, and nothing for a
// path of another kind.
func TestCaptures(t *testing.T) {
	rel := "queues/build/claimed/01J.md"
	got, ok := Item.Captures(rel, nil)
	caps, _ := Item.Match(rel)
	if !ok || len(got) != 3 || got[0] != caps["queue"] || got[1] != caps["state"] || got[2] != caps["id"] {
		t.Fatalf("Captures(%q) = %q, %v; want queue, state, id of %v", rel, got, ok, caps)
	}
	for _, bad := range []string{"queues/build/elsewhere/01J.md", "queues/build/claimed/.x.md", "queues/build/claimed/01J.txt", "agents/a.md"} {
		if got, ok := Item.Captures(bad, nil); ok || Item.Matches(bad) {
			t.Errorf("Captures(%q) = %q, %v; Matches = %v; want no match", bad, got, ok, Item.Matches(bad))
		}
	}
}

func TestKindsUnder(t *testing.T) {
	for _, tt := range []struct {
		dir   string
		want  []*Kind
		named string // NamedDir of the one kind
	}{
		{"queues/build/pending", []*Kind{Item}, "queues/build"},
		{"queues/build", []*Kind{Item}, "queues/build"}, // not Queue: only its queue.md
		{"commitments/alice", []*Kind{Commitment}, "commitments/alice"},
		{"agents", []*Kind{Agent}, ""},
		{"queues/build/nostate", nil, ""},
		{"queues/build/pending/x", nil, ""},
		{"agents/alice", nil, ""}, // a document, not a directory
		{"queues/../x", nil, ""},
		{"nothing/here", nil, ""},
	} {
		got := KindsUnder(tt.dir)
		if !slices.Equal(got, tt.want) {
			t.Errorf("KindsUnder(%q) = %v, want %v", tt.dir, got, tt.want)
			continue
		}
		if len(got) == 1 {
			if named := got[0].NamedDir(tt.dir); named != tt.named {
				t.Errorf("NamedDir(%q) = %q, want %q", tt.dir, named, tt.named)
			}
		}
	}
	for _, tt := range []struct {
		kind       *Kind
		name, want string
	}{
		{Item, "build", "queues/build"},
		{Item, "build/01J", ""},
		{Agent, "alice", ""},
		{Commitment, "alice", "commitments/alice"},
		{Item, "../x", ""},
	} {
		if got := tt.kind.DirOfName(tt.name); got != tt.want {
			t.Errorf("%s.DirOfName(%q) = %q, want %q", tt.kind.Name, tt.name, got, tt.want)
		}
	}
}
