package schema

// JSONSchema returns a JSON Schema (draft 2020-12) for the kind's
// frontmatter, for editors that validate YAML against JSON Schema.
// Unknown fields are allowed, as they are in tavern, except in a Closed
// kind (the config).
func (k *Kind) JSONSchema() map[string]any {
	props := map[string]any{
		VersionField: map[string]any{"type": "integer", "maximum": k.Version, "description": "schema version of this document"},
	}
	var required []string
	for _, f := range k.Fields {
		p := map[string]any{}
		switch f.Type {
		case String:
			p["type"] = "string"
			if len(f.Enum) > 0 {
				p["enum"] = f.Enum
			}
			switch f.Pattern {
			case "kebab":
				p["pattern"] = kebab.String()
			case "name":
				p["pattern"] = `^[^./\\][^/\\]*$`
			}
		case Int:
			p["type"] = "integer"
			if f.Min != nil {
				p["minimum"] = *f.Min
			}
		case Number:
			p["type"] = "number"
			if f.Min != nil && f.ZeroWhy != "" {
				p["exclusiveMinimum"] = *f.Min
			} else if f.Min != nil {
				p["minimum"] = *f.Min
			}
		case Bool:
			p["type"] = "boolean"
		case Time:
			p["type"] = "string"
			p["format"] = "date-time"
		case Duration:
			p["type"] = "string"
			p["pattern"] = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
			if f.Min != nil && *f.Min > 0 {
				p["not"] = map[string]any{"pattern": `^(0+(\.0+)?(ns|us|µs|ms|s|m|h))+$`} // positive: no 0s
			}
		case Strings:
			p["type"] = "array"
			p["items"] = map[string]any{"type": []string{"string", "number", "boolean"}}
		case Map:
			p["type"] = "object"
		}
		if f.Doc != "" {
			p["description"] = f.Doc
		}
		if f.Default != nil {
			p["default"] = f.Default
		}
		props[f.Name] = p
		if f.Required {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "tavern " + k.Name,
		"description":          k.Doc,
		"type":                 "object",
		"properties":           props,
		"additionalProperties": !k.Closed,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}
