package schema

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Editor is the view of a document a migration edits. docstore's Doc
// implements it with line-preserving edits, so a written-back migration
// shows in `git diff` as exactly the lines it changed.
type Editor interface {
	Get(key string) *yaml.Node
	SetNode(key string, v *yaml.Node) error
	Delete(key string) error
	Rename(oldKey, newKey string) error
}

// Migration upgrades a document from schema version From to From+1.
type Migration struct {
	From  int
	Doc   string
	Apply func(Editor) error
}

// DocVersion reads schema_version; a document without one is version 0.
func DocVersion(e Editor) (int, error) {
	n := e.Get(VersionField)
	if n == nil || isNull(n) {
		return 0, nil
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", VersionField, n.Value)
	}
	return v, nil
}

// Migrate brings a document up to the kind's current version. It reports
// whether anything changed. Documents from a newer version are left alone
// (validation reports them).
func (k *Kind) Migrate(e Editor) (bool, error) {
	v, err := DocVersion(e)
	if err != nil || v >= k.Version {
		return false, err
	}
	for _, m := range k.Migrations {
		if m.From < v {
			continue
		}
		if err := m.Apply(e); err != nil {
			return false, fmt.Errorf("migrate %s from version %d: %w", k.Name, m.From, err)
		}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(k.Version)}
	return true, e.SetNode(VersionField, n)
}

// renameField is a migration step for a key that changed its name.
func renameField(oldKey, newKey string) func(Editor) error {
	return func(e Editor) error {
		if e.Get(oldKey) == nil || e.Get(newKey) != nil {
			return nil
		}
		return e.Rename(oldKey, newKey)
	}
}
