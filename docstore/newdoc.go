package docstore

import (
	"time"

	"github.com/tavernhq/tavern/schema"
)

// Template describes a new document for NewDoc.
type Template struct {
	// ID is the id field, where the kind has one; "" stamps a fresh NewID.
	ID string
	// Name is written as the name field, where the kind has one.
	Name string
	// Fields follow schema_version, id and name, in order.
	Fields []Field
	// Defaults adds the kind's defaults of the fields not in Fields (and
	// not name), after Fields.
	Defaults bool
	// Body is the markdown after the frontmatter; one blank line is put
	// before it unless it starts with one.
	Body []byte
	// Now stamps created and updated, where the kind has them; zero is
	// time.Now().
	Now time.Time
}

// NewDoc returns a new document of kind k: schema_version, id, name, the
// template's fields, the defaults, then created and updated. It is the
// one constructor of documents with the engine's stamps (`tavern new`,
// CreateEntry); New builds a document from exactly the fields given.
func NewDoc(k *schema.Kind, t Template) (*Doc, error) {
	now := t.Now
	if now.IsZero() {
		now = time.Now()
	}
	given := map[string]bool{}
	for _, f := range t.Fields {
		given[f.Key] = true
	}
	fields := []Field{{Key: schema.VersionField, Value: k.Version}}
	if k.Field("id") != nil && !given["id"] {
		id := t.ID
		if id == "" {
			id = NewID()
		}
		fields = append(fields, Field{Key: "id", Value: id})
	}
	if k.Field("name") != nil && t.Name != "" && !given["name"] {
		fields = append(fields, Field{Key: "name", Value: t.Name})
	}
	fields = append(fields, t.Fields...)
	if t.Defaults {
		for _, f := range k.Fields {
			if f.Default != nil && f.Name != "name" && !given[f.Name] {
				fields = append(fields, Field{Key: f.Name, Value: f.Default})
			}
		}
	}
	if k.Field("created") != nil && !given["created"] {
		fields = append(fields, Field{Key: "created", Value: now}, Field{Key: "updated", Value: now})
	}
	body := t.Body
	if len(body) == 0 || body[0] != '\n' {
		body = append([]byte("\n"), body...)
	}
	return New(k, fields, body)
}
