package kit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A JSON document edited in place: setup merges its hooks into the tools'
// settings files, which people also edit, so it keeps every key, the
// order of keys and numbers as written. Values are *jsonObject, []any,
// string, json.Number, bool or nil.

type jsonObject struct {
	keys []string
	vals map[string]any
}

func newObject() *jsonObject { return &jsonObject{vals: map[string]any{}} }

func (o *jsonObject) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// set replaces a key's value in place, or appends the key.
func (o *jsonObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *jsonObject) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

func (o *jsonObject) len() int { return len(o.keys) }

// parseJSON decodes data keeping key order (comments are allowed, as in
// jsonedit.go). A syntax error carries the line and column (1-based) of
// the offending byte.
func parseJSON(data []byte) (any, error) {
	d, err := parseJSONDoc(string(data))
	if err != nil {
		return nil, err
	}
	return d.root.plain(), nil
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// formatJSON writes v indented by two spaces, with a final newline.
func formatJSON(v any) []byte {
	var b strings.Builder
	writeJSONValue(&b, v, "")
	b.WriteString("\n")
	return []byte(b.String())
}

func writeJSONValue(b *strings.Builder, v any, indent string) {
	switch t := v.(type) {
	case *jsonObject:
		if t.len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			b.WriteString(indent + "  ")
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSONValue(b, t.vals[k], indent+"  ")
			if i < len(t.keys)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, x := range t {
			b.WriteString(indent + "  ")
			writeJSONValue(b, x, indent+"  ")
			if i < len(t)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "]")
	case string:
		writeJSONString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case int:
		fmt.Fprintf(b, "%d", t)
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	default:
		data, _ := json.Marshal(t)
		b.Write(data)
	}
}

func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
}
