package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tavernhq/tavern/watcher/journal"
)

// TestEventTypesRegistered holds the registry of event types (what log
// and watch --type compare a filter with) to the types the code writes:
// every dotted string constant in a file that uses the journal is a
// registered type, a file name or one of the few dotted names that are
// not event types, and every registered type is written somewhere. A new event type written without RegisterTypes fails here.
func TestEventTypesRegistered(t *testing.T) {
	notTypes := map[string]bool{ // dotted strings that are no event type
		"tls.ca": true, "tls.cert": true, "container.exec": true,
		"turn.completed": true, "thread.started": true, // codex's output
		"queues.cycles": true, // a check's name
	}
	dotted := regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`)
	file := regexp.MustCompile(`\.(md|sh|txt|html|lock|json|jsonl|pem)$`) // file names
	known := journal.KnownTypes()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") || rel == "examples" || rel == filepath.Join("cmd", "torture") || rel == filepath.Join("cmd", "benchreport") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		journals := f.Name.Name == "journal" || slices.ContainsFunc(f.Imports, func(is *ast.ImportSpec) bool {
			return strings.HasSuffix(is.Path.Value, `/watcher/journal"`)
		})
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !dotted.MatchString(s) || notTypes[s] || file.MatchString(s) {
				return true
			}
			seen[s] = true
			if journals && !slices.Contains(known, s) {
				t.Errorf("%s: %q: not a registered event type (journal.RegisterTypes in its package's eventtypes.go)", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range known {
		if !seen[k] && k != journal.TypeExternal {
			t.Errorf("%q is registered but written nowhere", k)
		}
	}
}
