package watcher

import (
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// TestMatchRawAgreesWithMatch: conditions evaluated on encoded fields
// give what docstore.Cond.Match gives on the decoded ones, or defer to it.
func TestMatchRawAgreesWithMatch(t *testing.T) {
	docs := []map[string]any{
		nil,
		{},
		{"state": "working", "priority": 2, "attempts": int64(3), "big": uint64(1 << 40), "ratio": 0.5,
			"ok": true, "off": false, "none": nil, "tags": []any{"a", "b"}, "meta": map[string]any{"x": "y"},
			"empty": "", "when": "2026-01-02T03:04:05.000Z", "neg": -7},
		{"state": "idle", "priority": 10, "ratio": 1e21, "when": "2026-01-01T00:00:00Z", "name": "Working Agent"},
	}
	var exprs []string
	for _, f := range []string{"state", "priority", "attempts", "big", "ratio", "ok", "off", "none", "tags", "meta", "meta.x", "empty", "when", "neg", "name", "missing"} {
		for _, v := range []string{"working", "idle", "2", "3", "10", "1099511627776", "0.5", "true", "false", "", "a", "y", "2026-01-01T12:00:00Z", "-7", "work", "1e21"} {
			for _, op := range []string{"=", "!=", "<", "<=", ">", ">=", "~"} {
				exprs = append(exprs, f+op+v)
			}
		}
		exprs = append(exprs, f+"?")
	}
	decided := 0
	for i, fields := range docs {
		var f any
		if fields != nil {
			f = fields
		}
		var enc encoder
		if err := enc.value(f); err != nil {
			t.Fatal(err)
		}
		raw := string(enc.b)
		for _, x := range exprs {
			c, err := docstore.ParseWhere(x)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := matchRaw(raw, []docstore.Cond{c})
			if !ok {
				continue
			}
			decided++
			want := decodeFields(raw) != nil && c.Match(decodeFields(raw))
			if got != want {
				t.Errorf("doc %d, %s: matchRaw %v, Match %v", i, x, got, want)
			}
		}
	}
	if decided < len(exprs) {
		t.Errorf("matchRaw decided only %d cases", decided)
	}
}
