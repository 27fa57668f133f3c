package view

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// Readers of projected frontmatter fields (docstore.Doc.Fields: strings,
// numbers, bools, lists and maps; timestamps as the text the file holds).
// A missing or mistyped field reads as the zero value: an invalid document
// is listed under Invalid with its problem, not hidden.

func fstr(f map[string]any, key string) string {
	switch v := f[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

func fint(f map[string]any, key string) int {
	switch v := f[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case uint64:
		return int(v)
	case float64:
		return int(v)
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

func ffloat(f map[string]any, key string) float64 {
	switch v := f[key].(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float64:
		return v
	case string:
		n, _ := strconv.ParseFloat(v, 64)
		return n
	}
	return 0
}

func fbool(f map[string]any, key string) bool {
	switch v := f[key].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}

func ftime(f map[string]any, key string) time.Time {
	switch v := f[key].(type) {
	case time.Time:
		return v
	case string:
		t, err := schema.ParseTime(v)
		if err == nil {
			return t
		}
	}
	return time.Time{}
}

func fstrings(f map[string]any, key string) []string {
	switch v := f[key].(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if x != nil {
				out = append(out, fmt.Sprint(x))
			}
		}
		return out
	case []string:
		return v
	case string:
		if v != "" {
			return []string{v}
		}
	}
	return nil
}
