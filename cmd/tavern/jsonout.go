package main

import (
	"strconv"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
)

// JSON of documents without reflection. `ls --json` over a few thousand
// documents spent a third of its time in encoding/json (reflection over
// map[string]any, then re-indenting the whole output). appendDocs writes
// the bytes printJSON would write for a []*docObject (two-space indent,
// no HTML escaping, map keys sorted), which TestAppendDocsLikeEncodingJSON
// checks; values of other types than the frontmatter's (strings, numbers,
// booleans, lists, maps) go through encoding/json (docstore.AppendJSON).
// Fields a query left encoded (watcher.Query.Encoded) are written from
// their encoding (watcher.AppendFieldsJSON), never decoded into maps.

// appendDocs appends the indented JSON array of docs and a newline.
func appendDocs(b []byte, docs []*docObject) ([]byte, error) {
	if len(docs) == 0 {
		return append(b, "[]\n"...), nil
	}
	var err error
	for i, d := range docs {
		if b, err = appendDocAt(b, i, d); err != nil {
			return nil, err
		}
	}
	return append(b, "\n]\n"...), nil
}

// appendDocAt appends d as element i of the array appendDocs writes: the
// opening bracket or a comma, then the document on its own line. The
// closing "\n]\n" follows the last.
func appendDocAt(b []byte, i int, d *docObject) ([]byte, error) {
	if i == 0 {
		b = append(b, '[')
	} else {
		b = append(b, ',')
	}
	b = append(b, "\n  "...)
	return appendDoc(b, d, "  ")
}

// appendDoc appends one document object starting on a line indented by
// indent.
func appendDoc(b []byte, d *docObject, indent string) ([]byte, error) {
	in := indent + "  "
	b = append(b, '{')
	b = appendKeyString(b, in, `"path": `, d.Path, true)
	b = appendKeyString(b, in, `"rel": `, d.Rel, false)
	b = appendKeyString(b, in, `"kind": `, d.Kind, false)
	b = appendKeyString(b, in, `"name": `, d.Name, false)
	b = appendKeyString(b, in, `"rev": `, d.Rev, false)
	b = append(b, ",\n"...)
	b = append(b, in...)
	b = append(b, "\"valid\": "...)
	b = strconv.AppendBool(b, d.Valid)
	if d.State != "" {
		b = appendKeyString(b, in, `"state": `, d.State, false)
	}
	b = append(b, ",\n"...)
	b = append(b, in...)
	b = append(b, "\"errors\": ["...)
	for j, e := range d.Errors {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, in...)
		b = append(b, "  "...)
		b = docstore.AppendJSONString(b, e)
	}
	if len(d.Errors) > 0 {
		b = append(b, '\n')
		b = append(b, in...)
	}
	b = append(b, ']')
	b = append(b, ",\n"...)
	b = append(b, in...)
	b = append(b, "\"fields\": "...)
	var err error
	switch {
	case d.entry != nil:
		b, err = watcher.AppendFieldsJSON(b, d.entry, in)
	case d.Fields == nil:
		b = append(b, "null"...)
	default:
		b, err = docstore.AppendJSON(b, d.Fields, in)
	}
	if err != nil {
		return nil, err
	}
	if d.Body != nil {
		b = appendKeyString(b, in, `"body": `, *d.Body, false)
	}
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, '}'), nil
}

// appendKeyString appends a member whose key is a constant, quoted and
// followed by ": " (the keys need no escaping), with a string value.
func appendKeyString(b []byte, indent, quotedKey, val string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '\n')
	b = append(b, indent...)
	b = append(b, quotedKey...)
	return docstore.AppendJSONString(b, val)
}
