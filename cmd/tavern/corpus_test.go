package main

// CLI contracts checked over a corpus rather than a scenario: every
// golden document, every kind's JSON Schema.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// changedLines compares two texts with the same number of lines and
// returns the lines of b that differ; ok is false if the counts differ.
func changedLines(a, b string) (changed []string, ok bool) {
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(la) != len(lb) {
		return nil, false
	}
	for i := range la {
		if la[i] != lb[i] {
			changed = append(changed, lb[i])
		}
	}
	return changed, true
}

// `tavern set` of one field on each golden document changes one line.
func TestSetGoldenOneLineDiff(t *testing.T) {
	p := newProject(t)
	files, _ := filepath.Glob("../../docstore/testdata/roundtrip/*.md")
	if len(files) < 10 {
		t.Fatalf("found %d golden documents", len(files))
	}
	tested := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := docstore.Parse(f, data)
		if err != nil {
			t.Fatal(err)
		}
		// Notes have almost no schema, so any golden document is valid as one.
		id := strings.TrimSuffix(filepath.Base(f), ".md")
		rel := "notes/golden/" + id + ".md"
		p.write(rel, string(data))
		for _, key := range d.Keys() {
			v, k := d.Get(key), d.Front().Content[slices.Index(d.Keys(), key)*2]
			// (field=value arguments cannot name a key with a space or "=".)
			if v.Kind != yaml.ScalarNode || v.Line != k.Line || strings.Contains(v.Value, "\n") || key == "schema_version" || strings.ContainsAny(key, " \t=") ||
				v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				continue
			}
			before := p.read(rel)
			p.ok("set", "notes/golden/"+id, key+"=changed")
			after := p.read(rel)
			ch, ok := changedLines(before, after)
			if !ok || len(ch) != 1 || !strings.Contains(ch[0], "changed") {
				t.Errorf("%s: set %s changed %q (same line count %v)", id, key, ch, ok)
			}
			tested++
		}
	}
	if tested < 30 {
		t.Fatalf("only %d one-line sets tested", tested)
	}
}

// Every kind's --json-schema is a valid draft 2020-12 JSON Schema, and it
// agrees with tavern: a document tavern made validates, one tavern
// rejects does not.
func TestSchemaJSONSchema(t *testing.T) {
	p := newProject(t)
	compiled := map[string]*jsonschema.Schema{}
	for _, k := range schema.Kinds() {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(p.ok("schema", "--json-schema", k.Name)))
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		url := "mem://" + k.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url) // validates against the 2020-12 metaschema
		if err != nil {
			t.Fatalf("--json-schema %s is not a valid JSON Schema: %v", k.Name, err)
		}
		compiled[k.Name] = s
	}
	fields := func(ref string) any {
		t.Helper()
		var obj struct{ Fields map[string]any }
		p.json(&obj, "show", ref)
		b, _ := json.Marshal(obj.Fields)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	p.ok("queue", "create", "a") // an agent's queues must exist
	p.ok("queue", "create", "b")
	p.ok("new", "agent", "alice", "role=reviewer", "queues=[a, b]", "spawns=2")
	if err := compiled["agent"].Validate(fields("agents/alice")); err != nil {
		t.Errorf("a valid agent fails its JSON Schema: %v", err)
	}
	p.write("agents/bad.md", "---\nschema_version: 1\nstate: bogus\nspawns: -1\n---\n")
	if err := compiled["agent"].Validate(fields("agents/bad")); err == nil {
		t.Error("an invalid agent passes its JSON Schema")
	}
}

// helpCommands parses the COMMANDS: section of a help text.
func helpCommands(help string) []string {
	var names []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "COMMANDS:"):
			in = true
		case in && (strings.TrimSpace(line) == "" || !strings.HasPrefix(line, "   ")):
			in = false
		case in:
			name := strings.TrimSuffix(strings.Fields(line)[0], ",")
			if name != "help" {
				names = append(names, name)
			}
		}
	}
	return names
}

// Every command and subcommand shows at least one example in --help.
func TestHelpHasExamples(t *testing.T) {
	p := newProject(t)
	top := helpCommands(p.ok("--help"))
	if len(top) < 40 {
		t.Fatalf("tavern --help lists %d commands: %v", len(top), top)
	}
	for _, c := range top {
		help := p.ok(c, "--help")
		if !strings.Contains(help, "Example") {
			t.Errorf("tavern %s --help has no example", c)
		}
		for _, s := range helpCommands(help) {
			if !strings.Contains(p.ok(c, s, "--help"), "Example") {
				t.Errorf("tavern %s %s --help has no example", c, s)
			}
		}
	}
}
