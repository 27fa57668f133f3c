package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	register(&cli.Command{
		Name:      "check",
		Usage:     "validate the store or the given files",
		ArgsUsage: "[PATH...]",
		Description: `Parses and validates every document (or the given files and directories) and
lists every problem as path:line:col: field: message. Exit 5 if any document is
invalid. Unknown fields are reported only with --strict.

Examples:
   tavern check
   tavern check --strict .tavern/agents
   tavern check --json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strict", Usage: "also report fields the schema does not know"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			s, err := openStore(c)
			if err != nil {
				return err
			}
			var paths []string
			if c.NArg() == 0 {
				paths, err = storeFiles(s, s.Root())
				if err != nil {
					return err
				}
			}
			for _, a := range c.Args().Slice() {
				abs, err := filepath.Abs(a)
				if err != nil {
					return err
				}
				fi, err := os.Stat(abs)
				if errors.Is(err, fs.ErrNotExist) {
					// Not a file here: a REF (agents/alice) or a path
					// inside the store (agents/alice.md), as show takes.
					if rel, rerr := resolveRef(s, a); rerr == nil {
						if full, aerr := s.Abs(rel); aerr == nil {
							abs = full
							fi, err = os.Stat(abs)
						}
					}
				}
				if err != nil {
					return err
				}
				if fi.IsDir() {
					more, err := storeFiles(s, abs)
					if err != nil {
						return err
					}
					paths = append(paths, more...)
					continue
				}
				rel, err := s.Rel(abs)
				if err != nil {
					return err
				}
				paths = append(paths, rel)
			}
			var problems []problem
			for _, rel := range paths {
				problems = append(problems, checkDoc(s, rel, c.Bool("strict"))...)
			}
			if c.Bool("json") {
				if problems == nil {
					problems = []problem{}
				}
				if err := printJSON(c, map[string]any{"checked": len(paths), "problems": problems}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					errf(c, "%s\n", p.Message)
				}
				if len(problems) == 0 {
					outf(c, "%d documents checked, all valid\n", len(paths))
				} else {
					errf(c, "%d documents checked, %d problem(s)\n", len(paths), len(problems))
				}
			}
			for _, p := range problems {
				if !p.Unknown {
					return withCode(exitInvalid, errSilent)
				}
			}
			if len(problems) > 0 && c.Bool("strict") {
				return withCode(exitInvalid, errSilent)
			}
			return nil
		},
	})
}

// checkHooks add semantic checks beyond the schema (package agents: an
// agent state edited by hand to an illegal transition).
var checkHooks []func(*docstore.Doc) error

type problem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Field   string `json:"field,omitempty"`
	Error   string `json:"error"`
	Message string `json:"message"`
	Unknown bool   `json:"unknown_field,omitempty"`
}

func checkDoc(s *docstore.Store, rel string, strict bool) []problem {
	d, err := s.Get(rel)
	if err != nil {
		path, line, col := docstore.Position(err)
		if path == "" {
			path = rel
		}
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = rel + ": " + pe.Err.Error()
		}
		return []problem{{Path: path, Line: line, Col: col, Error: msg, Message: msg}}
	}
	var out []problem
	for _, e := range d.Validate(strict) {
		out = append(out, problem{Path: e.Path, Line: e.Line, Col: e.Col, Field: e.Field, Error: e.Msg, Message: e.Error(), Unknown: e.Unknown})
	}
	for _, hook := range checkHooks {
		if err := hook(d); err != nil {
			out = append(out, problem{Path: rel, Error: err.Error(), Message: err.Error()})
		}
	}
	return out
}

// storeFiles lists the document files under dir: every .md file outside
// engine-private directories and the event journal.
func storeFiles(s *docstore.Store, dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			out = append(out, p) // reported by checkDoc
			return nil
		}
		name := e.Name()
		if e.Type()&fs.ModeSymlink != 0 && !strings.HasPrefix(name, ".") {
			// WalkDir does not follow symlinks. One that leaves the store
			// (or dangles) is a problem to report, not a file to skip;
			// checkDoc refuses to read through it and says so.
			if real, err := filepath.EvalSymlinks(p); err != nil || !insideDir(s.Root(), real) {
				out = append(out, p)
				return nil
			}
		}
		if e.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || (filepath.Dir(p) == s.Root() && name == "events")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
			return nil
		}
		if rel, err := filepath.Rel(s.Root(), p); err == nil && schema.PlainFile(filepath.ToSlash(rel)) {
			return nil
		}
		out = append(out, p)
		return nil
	})
	for i, p := range out {
		if rel, err := filepath.Rel(s.Root(), p); err == nil {
			out[i] = filepath.ToSlash(rel)
		}
	}
	return out, err
}

func insideDir(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}
