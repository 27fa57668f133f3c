package docstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/schema"
)

// writeConfig makes a store whose tavern.md's frontmatter is front.
func writeConfig(tb testing.TB, front string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), DirName)
	if _, _, err := Init(dir, "t"); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte("---\n"+front+"---\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// A tavern.md value that parses but is wrong, or a key the config does
// not know, is refused by Open at tavern.md:line:col; each was ignored
// and every command ran on a default nobody asked for.
func TestOpenRefusesInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		name, front string
		want        string // the error's text
	}{
		{"enum", "name: t\ndurability: nonsense\n", `tavern.md:3:13: durability: "nonsense" is not one of durable, relaxed`},
		{"duration", "name: t\ndefault_lease: soon\n", `tavern.md:3:16: default_lease: "soon" is not a duration (e.g. 30s, 5m, 1h)`},
		{"zero", "name: t\nexternal_grace: 0s\n", `tavern.md:3:17: external_grace: "0s": must be a positive duration`},
		{"negative", "name: t\nbubble_after: -1m\n", `tavern.md:3:15: bubble_after: "-1m": a duration cannot be negative`},
		{"int", "name: t\nchunk_size: many\n", `tavern.md:3:13: chunk_size: must be an integer, got "many"`},
		{"version", "schema_version: abc\nname: t\n", `tavern.md:2:17: schema_version: must be an integer`},
		{"typo", "name: t\ndurabilty: relaxed\n", `tavern.md:3:1: durabilty: unknown field (did you mean "durability"?)`},
		{"unknown", "name: t\nengine: nope\n", `tavern.md:3:1: engine: unknown field (known: schema_version, name, durability,`},
		{"section", "name: t\nsync: here\n", `tavern.md:3:7: sync: must be a mapping, got "here"`},
		{"setting", "name: t\nsync:\n  every: 5s\n  evry: 5s\n", `tavern.md:5:3: sync.evry: unknown setting (did you mean "every"?)`},
		{"etcd setting", "name: t\netcd:\n  endpoints: [a:1]\n  lease_tll: 2s\n", `tavern.md:5:3: etcd.lease_tll: unknown setting (did you mean "lease_ttl"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeConfig(t, tc.front)
			s, err := Open(dir)
			if err == nil {
				t.Fatalf("Open = %v, nil; want %s", s, tc.want)
			}
			if !errors.Is(err, schema.ErrInvalid) {
				t.Errorf("errors.Is(%v, schema.ErrInvalid) = false", err)
			}
			if got := err.Error(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("Open: got %q, want %q...", got, tc.want)
			}
			if path, line, _ := Position(err); path != ConfigFile || line == 0 {
				t.Errorf("Position = %s:%d, want tavern.md:LINE", path, line)
			}
		})
	}
}

func TestOpenRefusesUnparsableConfig(t *testing.T) {
	dir := writeConfig(t, "name: t\ndurability: [durable\n")
	if _, err := Open(dir); !errors.Is(err, ErrParse) {
		t.Fatalf("Open: got %v, want ErrParse", err)
	}
}

func TestOpenValidConfig(t *testing.T) {
	dir := writeConfig(t, "schema_version: 1\nname: t\ndurability: relaxed\ndefault_lease: 1m\nbubble_after: 0s\n"+
		"coordination: local\nsync:\n  every: 5s\ncreated: 2026-01-02T03:04:05Z\n")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.durable {
		t.Error("durability: relaxed: store is durable")
	}
}

// OpenAnyConfig opens such a store for the commands that report or put
// right tavern.md, and says what is wrong with it; nothing is changed.
func TestOpenAnyConfig(t *testing.T) {
	dir := writeConfig(t, "name: t\ndurability: relaxd\n")
	before, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenAnyConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); string(got) != string(before) {
		t.Fatalf("OpenAnyConfig changed tavern.md:\n%s", got)
	}
	var fe *schema.FieldError
	if err := s.ConfigErr(); !errors.As(err, &fe) || fe.Field != "durability" || fe.Line != 3 {
		t.Fatalf("ConfigErr = %v, want durability at line 3", err)
	}
	if !s.durable {
		t.Error("a durability the store cannot read must leave it durable")
	}
	if _, err := s.Update(ConfigFile, func(d *Doc) error { return d.Set("durability", "relaxed") }); err != nil {
		t.Fatalf("putting tavern.md right: %v", err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("Open after the fix: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if string(after) == string(before) {
		t.Error("the fix was not written")
	}
}

// A write of tavern.md that adds a key it does not know is refused, so
// set cannot make the typo open would refuse.
func TestConfigWriteRefusesUnknownKey(t *testing.T) {
	dir := writeConfig(t, "name: t\n")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ConfigFile, func(d *Doc) error { return d.Set("durabilty", "relaxed") })
	if !errors.Is(err, schema.ErrInvalid) {
		t.Fatalf("Update: got %v, want schema.ErrInvalid", err)
	}
}
