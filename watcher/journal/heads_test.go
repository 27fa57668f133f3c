package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHeads: what a path's records say, in the order the states were
// current, whatever the order of the lines.
func TestHeads(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{Writer: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	t0 := time.Now().UTC().Add(-time.Minute)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	seen := func(s int) string { return at(s).Format(time.RFC3339Nano) }
	for _, e := range []Event{
		{Type: TypeCreated, Path: "a.md", Rev: "r1", Time: at(1)},
		{Type: TypeUpdated, Path: "a.md", Rev: "r2", Time: at(3)},
		// A hand edit seen at 2 s, journaled after the engine's r2: it
		// happened, but r2 stays the head.
		{Type: TypeExternal, Path: "a.md", Rev: "h", Time: at(4), Data: map[string]any{"op": TypeUpdated, "seen": seen(2)}},
		{Type: TypeMoved, Path: "b.md", Time: at(5), Data: map[string]any{"from": "a.md"}},
		{Type: TypeExternal, Path: "c.md", Rev: "bad", Time: at(6), Data: map[string]any{"op": TypeInvalid, "seen": seen(6)}},
		{Type: TypeExternal, Path: "c.md", Rev: "good", Time: at(7), Data: map[string]any{"op": TypeCreated, "seen": seen(7)}},
		{Type: TypeUpdated, Path: "d.md", Rev: "r9", Time: at(8)},
		{Type: "tuple.in", Path: "f.md", Rev: "r7", Time: at(8)}, // a domain event: no head
		{Type: "queue.created", Path: "e.md", Time: at(8)},       // no revision: no head
	} {
		if _, err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want Head
		ok   bool
	}{
		{"a.md", Head{Rev: "", Present: false, At: at(5)}, true},
		{"b.md", Head{Rev: "r2", Present: true, Valid: true, At: at(5), LastValid: "r2"}, true},
		{"c.md", Head{Rev: "good", Present: true, Valid: true, At: at(7), LastValid: "good"}, true},
		{"d.md", Head{Rev: "r9", Present: true, Valid: true, At: at(8), LastValid: "r9"}, true},
		{"e.md", Head{}, false},
		{"f.md", Head{}, false},
	} {
		got, ok := h.Get(tc.path)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		path, rev string
		present   bool
		after     time.Time
		want      bool
	}{
		{"b.md", "r2", true, time.Time{}, true},  // the head
		{"a.md", "", false, time.Time{}, true},   // removed (moved away)
		{"a.md", "h", true, at(1), true},         // the hand edit, recorded after 1s
		{"a.md", "r1", true, at(2), false},       // r1 was before 2s
		{"a.md", "r1", true, at(0), true},        // but after 0s
		{"x.md", "", false, time.Time{}, true},   // never recorded, not there
		{"x.md", "r", true, time.Time{}, false},  // never recorded, there
		{"c.md", "bad", true, at(6), false},      // recorded at 6s, not after
		{"c.md", "bad", true, at(5), true},       // after 5s
		{"d.md", "r8", true, time.Time{}, false}, // another revision
	} {
		if got := h.Explained(tc.path, tc.rev, tc.present, tc.after); got != tc.want {
			t.Errorf("Explained(%s, %q, %v, +%v): got %v, want %v", tc.path, tc.rev, tc.present, tc.after.Sub(t0), got, tc.want)
		}
	}
	// The state when a change was seen: later records do not count.
	if got, ok := h.HeadAt("a.md", at(2)); !ok || got.Rev != "h" || got.LastValid != "h" {
		t.Errorf("HeadAt(a.md, 2s): got %+v %v, want h", got, ok)
	}
	if got, ok := h.HeadAt("c.md", at(6)); !ok || got.Valid || got.LastValid != "" {
		t.Errorf("HeadAt(c.md, 6s): got %+v %v, want invalid, never valid", got, ok)
	}
	if _, ok := h.HeadAt("d.md", at(7)); ok {
		t.Errorf("HeadAt(d.md, 7s): a head before its first record")
	}

	// A checkpoint gives the same heads, and reads only what follows.
	h.SetFields("b.md", "r2", map[string]any{"state": "idle", "n": 3})
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(Event{Type: TypeRemoved, Path: "d.md", Time: at(9)}); err != nil {
		t.Fatal(err)
	}
	h2, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h2.Get("b.md"); got.Rev != "r2" {
		t.Errorf("b.md after a checkpoint: %+v", got)
	}
	if got, _ := h2.Get("d.md"); got.Present {
		t.Errorf("d.md after a checkpoint and a removal: %+v", got)
	}
	d, ok := h2.FieldsOf("b.md", "r2")
	if !ok {
		t.Fatal("fields digest lost by the checkpoint")
	}
	if ch := d.Changed(map[string]any{"state": "working", "n": 3, "role": "x"}); len(ch) != 2 || ch[0] != "role" || ch[1] != "state" {
		t.Errorf("Changed: got %v, want [role state]", ch)
	}

	// A journal that no longer matches its checkpoint (cut short, or
	// another file) is read from the start: only its first line is left.
	day := filepath.Join(root, Dir, at(1).Format(time.DateOnly)+".jsonl")
	data, err := os.ReadFile(day)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:bytes.IndexByte(data, '\n')+1]
	if err := os.WriteFile(day, first, 0o644); err != nil {
		t.Fatal(err)
	}
	h3, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := h3.Get("a.md"); !ok || got.Rev != "r1" {
		t.Errorf("a.md from the cut journal: %+v %v, want r1", got, ok)
	}
	if got, ok := h3.Get("b.md"); ok {
		t.Errorf("b.md from the cut journal: %+v (the stale checkpoint was used)", got)
	}
}
