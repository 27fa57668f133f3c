package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tavernhq/tavern/schema"
)

// TestTail checks Tail against Read on a journal of two days whose last
// day spans several tail blocks, with a malformed line and a line still
// being written at the end.
func TestTail(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	day := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	pad := strings.Repeat("x", 300) // ~400-byte lines: 2000 of them are 3 blocks
	for i := range 2000 {
		typ := "a.even"
		if i%2 == 1 {
			typ = "a.odd"
		}
		at := day
		if i >= 10 {
			at = day.Add(24 * time.Hour)
		}
		if _, err := j.Append(Event{Type: typ, Time: schema.TimeOf(at.Add(time.Duration(i) * time.Millisecond)), Data: map[string]any{"i": i, "pad": pad}}); err != nil {
			t.Fatal(err)
		}
	}
	last := filepath.Join(root, Dir, "2026-11-21.jsonl")
	f, err := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not json\n")
	f.WriteString(`{"id":"0190a1b2-0000-7000-8000-000000000000","type":"a.half"`) // no newline yet
	f.Close()

	var all []Event
	if _, err := Read(root, Filter{}, func(e Event, err error) bool {
		if err == nil {
			all = append(all, e)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	end, err := End(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    int
		f    Filter
	}{
		{"last 5", 5, Filter{}},
		{"across blocks", 1500, Filter{}},
		{"across days", 1995, Filter{}},
		{"more than there is", 5000, Filter{}},
		{"filtered", 700, Filter{Types: []string{"a.odd"}}},
		{"none", 0, Filter{}},
		{"since", 5000, Filter{Since: day.Add(24 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cur, err := Tail(root, tc.n, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if cur != end {
				t.Errorf("cursor: got %+v, want %+v (End)", cur, end)
			}
			var want []Event
			for _, e := range all {
				if tc.f.Match(e) {
					want = append(want, e)
				}
			}
			want = want[max(len(want)-tc.n, 0):]
			if len(got) != len(want) {
				t.Fatalf("got %d events, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID {
					t.Fatalf("event %d: got %s (%v), want %s (%v)", i, got[i].ID, got[i].Data["i"], want[i].ID, want[i].Data["i"])
				}
			}
		})
	}
	if _, cur, err := Tail(t.TempDir(), 10, Filter{}); err != nil || cur != (Cursor{}) {
		t.Errorf("empty journal: got %+v, %v", cur, err)
	}
}

// TestTailSinceStops checks that a Since window stops the backwards read:
// a line it must not reach (malformed would be skipped, so use an event
// whose type the filter wants but whose time is far outside the window
// and after an old event) is not returned, and events in the window are.
func TestTailSinceStops(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	base := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	// An out-of-order event before an old one: a full scan with the
	// filter's Since would return it, a read that stops at the old event
	// does not.
	for _, e := range []Event{
		{Type: "x", Time: schema.TimeOf(base.Add(50 * time.Minute))},
		{Type: "x", Time: schema.TimeOf(base)},
		{Type: "x", Time: schema.TimeOf(base.Add(55 * time.Minute))},
		{Type: "x", Time: schema.TimeOf(base.Add(56 * time.Minute))},
	} {
		if _, err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := Tail(root, 100, Filter{Since: base.Add(30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d events, want the 2 after the old one", len(got))
	}
}
