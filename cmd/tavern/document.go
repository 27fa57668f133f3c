package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
)

// resolveRef accepts kind/name references and file paths (relative to
// the working directory or absolute). An item's file path names the item
// wherever it has moved since (queues.ItemNow), as for the item commands.
func resolveRef(s *docstore.Store, ref string) (string, error) {
	rel, err := resolveNamed(s, ref)
	if err == nil {
		if now, ok := queues.ItemNow(s, rel); ok {
			return now, nil
		}
	}
	return rel, err
}

// resolveNamed is resolveRef without following a moved item.
func resolveNamed(s *docstore.Store, ref string) (string, error) {
	if k, err := schema.Lookup(strings.TrimSuffix(filepath.ToSlash(ref), "/")); err == nil && k.NameParts() > 0 {
		// show agents: a kind names its documents, not one (it said
		// `invalid name "": empty name`).
		return "", usageErr("%s is a kind, not a document: `tavern ls %s` lists its documents; name one as %s/NAME", ref, k.Plural, k.Plural)
	}
	if filepath.IsAbs(ref) || filepath.Ext(ref) == ".md" {
		rel, err := s.Rel(ref)
		if err == nil {
			return rel, nil
		}
		if filepath.IsAbs(ref) {
			return "", err // an absolute path outside the store is not a kind/name
		}
	}
	if slash := filepath.ToSlash(ref); strings.HasPrefix(slash, ".tavern/") || strings.Contains(slash, "/.tavern/") {
		// A path to the store's file without its .md (as ls prints a
		// document's name): the file it names.
		if rel, err := s.Rel(ref + ".md"); err == nil {
			return rel, nil
		}
	}
	rel, err := s.Resolve(ref)
	var ke *schema.UnknownKindError
	if _, ok := queues.IDPriority(ref); ok && !strings.Contains(ref, "/") && errors.As(err, &ke) {
		// A bare item id (as queue add and take print it): no kind is
		// named p00-..., so it can mean only the item.
		return s.Resolve("items/" + ref)
	}
	if errors.As(err, &ke) && len(ke.Near) == 0 && !strings.Contains(ref, "/") {
		// A bare name (show alice): the documents that have it.
		if named := docsNamed(s, ref); len(named) > 0 {
			return "", usageErr("%s: a document is named KIND/NAME; did you mean %s?", ref, schema.NearList(named))
		}
	}
	if errors.As(err, &ke) && strings.Contains(ref, "/") {
		// A name as ls prints it, without its kind: an item's QUEUE/ID
		// names the item (as the item commands take it), any other the
		// documents that have it.
		if queue, id, _ := strings.Cut(ref, "/"); !strings.Contains(id, "/") {
			if _, ok := queues.IDPriority(id); ok && isDirectory(s, "queues/"+queue) {
				return s.Resolve("items/" + ref)
			}
		}
		if named := docsNamedParts(s, ref); len(named) > 0 {
			return "", usageErr("%s: a document is named KIND/NAME; did you mean %s?", ref, schema.NearList(named))
		}
	}
	return rel, err
}

// isDirectory reports whether rel is a directory of the store.
func isDirectory(s *docstore.Store, rel string) bool {
	fi, err := statRel(s, rel)
	return err == nil && fi.IsDir()
}

// isFile reports whether rel is a regular file of the store.
func isFile(s *docstore.Store, rel string) bool {
	fi, err := statRel(s, rel)
	return err == nil && fi.Mode().IsRegular()
}

func statRel(s *docstore.Store, rel string) (os.FileInfo, error) {
	abs, err := s.Abs(rel)
	if err != nil {
		return nil, err
	}
	return os.Stat(abs)
}

// docsNamedParts lists the KIND/NAME references of the documents named
// name in kinds whose names have that many parts (commitments/bob/ID).
func docsNamedParts(s *docstore.Store, name string) []string {
	n := strings.Count(name, "/") + 1
	var out []string
	for _, k := range schema.Kinds() {
		if k.NameParts() != n {
			continue
		}
		rel, err := s.Resolve(k.Plural + "/" + name) // names a path, there or not
		if err != nil {
			continue
		}
		if isFile(s, rel) {
			out = append(out, k.Plural+"/"+name)
		}
	}
	return out
}

// docsNamed lists the KIND/NAME references of the documents named name
// in kinds whose names are one part (agents/alice, channels/general).
func docsNamed(s *docstore.Store, name string) []string {
	var out []string
	for _, k := range schema.Kinds() {
		if k.NameParts() != 1 {
			continue
		}
		rel, err := k.Path(name, nil)
		if err != nil {
			continue
		}
		if isFile(s, rel) {
			out = append(out, k.Plural+"/"+name)
		}
	}
	return out
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
	Errors []string       `json:"errors"`          // [] for a valid document
	Fields map[string]any `json:"fields"`
	Body   *string        `json:"body,omitempty"`

	// entry, when set, holds the fields instead of Fields: still encoded
	// as a query left them (appendDoc writes them; encoding/json would
	// not see them).
	entry *watcher.Entry
}

// docJSON is the JSON of a document with its fields as the current schema
// sees them (migrated in memory, as ls shows them).
func docJSON(s *docstore.Store, d *docstore.Doc, withBody bool) *docObject {
	o := &docObject{
		Path:   filepath.Join(s.Root(), filepath.FromSlash(d.Path)),
		Rel:    d.Path,
		Name:   d.Name,
		Rev:    d.Rev,
		Fields: d.View().Fields(),
		Valid:  true,
		Errors: []string{},
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

// entryJSON is docJSON for an entry of the projection (ls). Fields a
// query left encoded stay so: only appendDoc can write the result, and
// it reads them from e, which must outlive the result.
func entryJSON(s *docstore.Store, e *watcher.Entry, withBody bool) (*docObject, error) {
	o := &docObject{
		Path:   docPath(s.Root(), e.Path),
		Rel:    e.Path,
		Kind:   e.Kind,
		Name:   e.Name,
		Rev:    e.Rev,
		Fields: e.Fields,
		Valid:  e.Valid,
		State:  itemState(e.Kind, e.Path),
		Errors: []string{},
	}
	if e.Fields == nil && e.Parsed() {
		o.entry = e
	}
	for _, pr := range e.Errors {
		o.Errors = append(o.Errors, pr.Msg)
	}
	if withBody {
		d, err := s.Get(e.Path)
		if err != nil {
			return nil, err
		}
		b := string(d.Body())
		o.Body = &b
	}
	return o, nil
}

// docPath is filepath.Join(root, rel) for the clean slash-separated rel
// of a projection's entry, without Join's cleaning where root is clean
// too (ls writes a path for each of thousands of documents).
func docPath(root, rel string) string {
	if filepath.Separator == '/' && len(root) > 1 && root[0] == '/' && root[len(root)-1] != '/' && filepath.Clean(root) == root {
		return root + "/" + rel
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

// itemState is the state of an item, which is its directory (the {state}
// of the item's path pattern), or "" for other kinds.
func itemState(kind, rel string) string {
	if kind != schema.Item.Name {
		return ""
	}
	// queues/{queue}/{state}/{id}.md: the third segment, when the path is
	// an item's at all (an entry of kind item always is); this runs for
	// every listed item, where KindOfPath tried every kind's pattern.
	if rest, ok := strings.CutPrefix(rel, "queues/"); ok {
		if _, rest, ok = strings.Cut(rest, "/"); ok {
			if state, id, ok := strings.Cut(rest, "/"); ok && !strings.Contains(id, "/") && slices.Contains(schema.ItemStates, state) {
				return state
			}
		}
	}
	_, caps, err := schema.KindOfPath(rel)
	if err != nil {
		return ""
	}
	return caps["state"]
}
