package main

import (
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

func init() {
	register(&cli.Command{
		Name:      "show",
		Usage:     "print a document",
		ArgsUsage: "REF",
		Description: `REF is kind/name (agents/alice, agent/alice, items/ID, commitments/alice/ID)
or a path to the file. Text output is the file as it is on disk.

Examples:
   tavern show agents/alice
   tavern show .tavern/queues/build/pending/0001.md --json`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("show takes one REF")
			}
			s, err := openStore(c)
			if err != nil {
				return err
			}
			rel, err := resolveRef(s, c.Args().First())
			if err != nil {
				return err
			}
			d, err := s.Get(rel)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, docJSON(s, d, true))
			}
			_, err = c.App.Writer.Write(d.Bytes())
			for _, e := range d.Validate(false) {
				errf(c, "tavern: warning: %v\n", e)
			}
			return err
		},
	})
}

// resolveRef accepts kind/name references and file paths (relative to
// the working directory or absolute).
func resolveRef(s *docstore.Store, ref string) (string, error) {
	if filepath.IsAbs(ref) || filepath.Ext(ref) == ".md" {
		rel, err := s.Rel(ref)
		if err == nil {
			return rel, nil
		}
		if filepath.IsAbs(ref) {
			return "", err // an absolute path outside the store is not a kind/name
		}
	}
	return s.Resolve(ref)
}

// docObject is the JSON shape of a document (show --json, ls --json).
type docObject struct {
	Path   string         `json:"path"` // absolute path of the file
	Rel    string         `json:"rel"`  // path relative to the .tavern directory
	Kind   string         `json:"kind"`
	Name   string         `json:"name"`
	Rev    string         `json:"rev"`
	Valid  bool           `json:"valid"`
	State  string         `json:"state,omitempty"` // an item's state: its directory
	Errors []string       `json:"errors,omitempty"`
	Fields map[string]any `json:"fields"`
	Body   *string        `json:"body,omitempty"`
}

func docJSON(s *docstore.Store, d *docstore.Doc, withBody bool) *docObject {
	o := &docObject{
		Path:   filepath.Join(s.Root(), filepath.FromSlash(d.Path)),
		Rel:    d.Path,
		Name:   d.Name,
		Rev:    d.Rev,
		Fields: d.View().Fields(), // as the current schema sees it, like ls
		Valid:  true,
	}
	if d.Kind != nil {
		o.Kind = d.Kind.Name
	}
	o.State = itemState(o.Kind, d.Path)
	for _, e := range d.Validate(false) {
		o.Valid = false
		o.Errors = append(o.Errors, e.Error())
	}
	if withBody {
		b := string(d.Body())
		o.Body = &b
	}
	return o
}

// itemState is the state of an item, which is its directory
// (queues/<q>/<state>/<id>.md), or "" for other kinds.
func itemState(kind, rel string) string {
	if kind != schema.Item.Name {
		return ""
	}
	if parts := strings.Split(rel, "/"); len(parts) == 4 {
		return parts[2]
	}
	return ""
}
