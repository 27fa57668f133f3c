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

// helpExamples returns the lines of a help text's Examples: block.
func helpExamples(help string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.TrimSpace(line) == "Examples:":
			in = true
		case in && (strings.TrimSpace(line) == "" || !strings.HasPrefix(line, "   ")):
			in = false
		case in:
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// shellRedirect returns the word of line that a shell would cut at an
// unquoted < or > into a redirection (priority<2 reads the file 2), or
// "" if none: a < or > after a word with a letter in it, outside quotes.
// File descriptors (2>&1) and redirections after a space are meant.
func shellRedirect(line string) string {
	var quote byte
	start := 0
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			} else if ch == '\\' && quote == '"' {
				i++
			}
		case ch == '\\':
			i++
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == ' ' || ch == '\t' || ch == '(' || ch == '|' || ch == ';':
			start = i + 1
		case ch == '<' || ch == '>':
			if strings.ContainsFunc(line[start:i], func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }) {
				end := strings.IndexAny(line[i:], " \t")
				if end < 0 {
					end = len(line) - i
				}
				return line[start : i+end]
			}
			start = i + 1
		}
	}
	return ""
}

// Every example in --help runs as shown when pasted into a shell: an
// expression such as --where priority<2 is quoted, or the shell reads
// it as a redirection (here from a file named 2).
func TestHelpExamplesQuoted(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`tavern ls items --where priority<2 --limit 1`, "priority<2"},
		{`tavern tuple ls job 'n>2'`, ""},
		{`make test 2>&1 | tavern send @lead --as ci`, ""},
		{`tavern prime --hook-json < hook-payload.json`, ""},
		{`read id attempt < <(tavern queue take build | head -1)`, ""},
		{`tavern ls agents --where "spawns>=2"`, ""},
	} {
		if got := shellRedirect(c.line); got != c.want {
			t.Errorf("shellRedirect(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	p := newProject(t)
	var helps []string
	for _, c := range helpCommands(p.ok("--help")) {
		help := p.ok(c, "--help")
		helps = append(helps, help)
		for _, s := range helpCommands(help) {
			helps = append(helps, p.ok(c, s, "--help"))
		}
	}
	for _, help := range helps {
		for _, line := range helpExamples(help) {
			if w := shellRedirect(line); w != "" {
				t.Errorf("example %q: the shell reads %q as a redirection; quote it", line, w)
			}
		}
	}
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
