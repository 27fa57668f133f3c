package journal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/tavernhq/tavern/schema"
)

// openHeadsJournal opens a journal in a fresh store root, closed when
// the test ends.
func openHeadsJournal(tb testing.TB) (string, *Journal) {
	tb.Helper()
	root := tb.TempDir()
	j, err := Open(root, Options{Writer: "w"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { j.Close() })
	return root, j
}

// TestHeads: what a path's records say, in the order the states were
// current, whatever the order of the lines.
func TestHeads(t *testing.T) {
	root, j := openHeadsJournal(t)
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond) // the journal keeps milliseconds
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	seen := func(s int) string { return at(s).Format(time.RFC3339Nano) }
	for _, e := range []Event{
		{Type: TypeCreated, Path: "a.md", Rev: "r1", Time: schema.TimeOf(at(1))},
		{Type: TypeUpdated, Path: "a.md", Rev: "r2", Time: schema.TimeOf(at(3))},
		// A hand edit seen at 2 s, journaled after the engine's r2: it
		// happened, but r2 stays the head.
		{Type: TypeExternal, Path: "a.md", Rev: "h", Time: schema.TimeOf(at(4)), Data: map[string]any{"op": TypeUpdated, "seen": seen(2)}},
		{Type: TypeMoved, Path: "b.md", Time: schema.TimeOf(at(5)), Data: map[string]any{"from": "a.md"}},
		{Type: TypeExternal, Path: "c.md", Rev: "bad", Time: schema.TimeOf(at(6)), Data: map[string]any{"op": TypeInvalid, "seen": seen(6)}},
		{Type: TypeExternal, Path: "c.md", Rev: "good", Time: schema.TimeOf(at(7)), Data: map[string]any{"op": TypeCreated, "seen": seen(7)}},
		{Type: TypeUpdated, Path: "d.md", Rev: "r9", Time: schema.TimeOf(at(8))},
		{Type: "tuple.in", Path: "f.md", Rev: "r7", Time: schema.TimeOf(at(8))}, // a domain event: no head
		{Type: "queue.created", Path: "e.md", Time: schema.TimeOf(at(8))},       // no revision: no head
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
	if _, err := j.Append(Event{Type: TypeRemoved, Path: "d.md", Time: schema.TimeOf(at(9))}); err != nil {
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

// TestHeadsCheckpointRoundTrip: heads loaded from a checkpoint answer
// Get, HeadAt, Explained and FieldsOf as the heads that wrote it, also
// after both take the same later records; a checkpoint with a flipped
// byte is not used (the heads are read from the journal).
func TestHeadsCheckpointRoundTrip(t *testing.T) {
	root, j := openHeadsJournal(t)
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond) // the journal keeps milliseconds
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var paths []string
	for i := range 40 {
		p := fmt.Sprintf("agents/a%d.md", i)
		paths = append(paths, p)
		evs := []Event{{Type: TypeCreated, Path: p, Rev: fmt.Sprintf("r%d-1", i), Time: schema.TimeOf(at(1))}}
		switch i % 4 {
		case 1:
			evs = append(evs, Event{Type: TypeInvalid, Path: p, Rev: fmt.Sprintf("r%d-bad", i), Time: schema.TimeOf(at(2))})
		case 2:
			evs = append(evs, Event{Type: TypeRemoved, Path: p, Time: schema.TimeOf(at(2))})
		case 3:
			evs = append(evs, Event{Type: TypeUpdated, Path: p, Rev: fmt.Sprintf("r%d-2", i), Time: schema.TimeOf(at(3))})
		}
		for _, e := range evs {
			if _, err := j.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		if i%3 == 0 {
			hd, _ := h.Get(p)
			h.SetFields(p, hd.Rev, map[string]any{"state": "idle", "n": i})
		}
	}
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}
	h2, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint keeps each path's head, not its history: from the
	// head's time on, both answer alike.
	for _, p := range paths {
		a, aok := h.Get(p)
		b, bok := h2.Get(p)
		if a != b || aok != bok {
			t.Errorf("Get(%s): %+v %v, loaded %+v %v", p, a, aok, b, bok)
		}
		for s := 3; s <= 6; s++ {
			x, xok := h.HeadAt(p, at(s))
			y, yok := h2.HeadAt(p, at(s))
			if x != y || xok != yok {
				t.Errorf("HeadAt(%s, %ds): %+v %v, loaded %+v %v", p, s, x, xok, y, yok)
			}
			for _, rev := range []string{"", a.Rev, a.LastValid, "other"} {
				for _, present := range []bool{true, false} {
					if x, y := h.Explained(p, rev, present, at(s)), h2.Explained(p, rev, present, at(s)); x != y {
						t.Errorf("Explained(%s, %q, %v, %ds): %v, loaded %v", p, rev, present, s, x, y)
					}
				}
			}
		}
		da, aok := h.FieldsOf(p, a.Rev)
		db, bok := h2.FieldsOf(p, a.Rev)
		if aok != bok || fmt.Sprint(da) != fmt.Sprint(db) {
			t.Errorf("FieldsOf(%s): %v %v, loaded %v %v", p, da, aok, db, bok)
		}
	}
	// Later records fold on the loaded head: just before a new record,
	// the state is the loaded one; a record older than the head (journaled
	// late) leaves it the head but is remembered.
	for i, p := range paths {
		loaded, _ := h2.Get(p)
		e := Event{Type: TypeUpdated, Path: p, Rev: fmt.Sprintf("r%d-5", i), Time: schema.TimeOf(at(5))}
		if i%2 == 0 {
			e.Time.Time = at(0)
		}
		h2.Apply(e)
		if i%2 == 1 {
			if got, ok := h2.HeadAt(p, at(4)); !ok || got != loaded {
				t.Errorf("HeadAt(%s, 4s) after a record at 5s: %+v %v, want the loaded head %+v", p, got, ok, loaded)
			}
			if got, _ := h2.Get(p); got.Rev != e.Rev {
				t.Errorf("Get(%s) after a record at 5s: %+v", p, got)
			}
		} else {
			if got, _ := h2.Get(p); got != loaded {
				t.Errorf("Get(%s) after a late record: %+v, want the loaded head %+v", p, got, loaded)
			}
			if !h2.Explained(p, e.Rev, true, at(-1)) {
				t.Errorf("Explained(%s, %s) after a late record: false", p, e.Rev)
			}
		}
	}

	file := filepath.Join(root, Dir, HeadsFile)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 0x40
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h3, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		a, _ := h.Get(p)
		b, _ := h3.Get(p)
		if a != b {
			t.Errorf("after a corrupt checkpoint: Get(%s) %+v, want %+v (from the journal)", p, b, a)
		}
	}
}

// TestDecodeHeadsCopies: nothing a loaded checkpoint keeps points into
// the checkpoint's bytes. A revision once stayed a substring of them
// (`rev + "" + ""` is rev itself), and kept the whole body alive: 15 MB
// for the life of a `tavern watch` at 100k documents.
func TestDecodeHeadsCopies(t *testing.T) {
	root, j := openHeadsJournal(t)
	at := time.Now().UTC().Add(-time.Minute)
	for i := range 12 {
		p := fmt.Sprintf("agents/a%d.md", i)
		evs := []Event{{Type: TypeCreated, Path: p, Rev: fmt.Sprintf("r%d-1", i), Time: schema.TimeOf(at)}}
		if i%2 == 1 { // LastValid other than Rev
			evs = append(evs, Event{Type: TypeInvalid, Path: p, Rev: fmt.Sprintf("r%d-bad", i), Time: schema.TimeOf(at.Add(time.Second))})
		}
		for _, e := range evs {
			if _, err := j.Append(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if i%3 == 0 {
			p := fmt.Sprintf("agents/a%d.md", i)
			hd, _ := h.Get(p)
			h.SetFields(p, hd.Rev, map[string]any{"state": "idle"})
		}
	}
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, Dir, HeadsFile))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := bytes.Cut(raw, []byte{'\n'})
	s := string(body)
	paths, err := decodeHeads(s, 12)
	if err != nil {
		t.Fatal(err)
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	hi := lo + uintptr(len(s))
	inside := func(v string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(v)))
		return v != "" && p >= lo && p < hi
	}
	if len(paths) != 12 {
		t.Fatalf("decoded %d paths, want 12", len(paths))
	}
	for p, st := range paths {
		for name, v := range map[string]string{"path": p, "rev": st.Rev, "last valid": st.LastValid, "fields rev": st.fieldsRev, "fields": st.fields} {
			if inside(v) {
				t.Errorf("%s: its %s %q points into the checkpoint", p, name, v)
			}
		}
	}
}

// TestHeadsRecordAppliedOnce: a record AppendIf applies and CatchUp
// then reads back is one mark, not two. The duplicate cost each edited
// path a mark and a doubled slice for markKeep (8 MB of `tavern watch`
// after 27,000 hand edits at 100k documents).
func TestHeadsRecordAppliedOnce(t *testing.T) {
	root, j := openHeadsJournal(t)
	at := time.Now().UTC().Add(-time.Minute)
	if _, err := j.Append(Event{Type: TypeCreated, Path: "a.md", Rev: "r1", Time: schema.TimeOf(at)}); err != nil {
		t.Fatal(err)
	}
	h, err := LoadHeads(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Save(); err != nil {
		t.Fatal(err)
	}
	if h, err = LoadHeads(root); err != nil { // a loaded base, as at start-up
		t.Fatal(err)
	}
	seen := at.Add(time.Second).Format(time.RFC3339Nano)
	ext := Event{Type: TypeExternal, Path: "a.md", Rev: "r2", Time: schema.TimeOf(at.Add(2 * time.Second)), Data: map[string]any{"op": TypeUpdated, "seen": seen}}
	if _, err := j.AppendIf(h, []Event{ext}, func(*Event) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := h.CatchUp(); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	got := slices.Clone(h.paths["a.md"].recent)
	h.mu.Unlock()
	if len(got) != 2 || got[0].rev != "r1" || got[1].rev != "r2" {
		t.Fatalf("marks of a.md: %+v, want r1 (the loaded head) and r2 once", got)
	}
	if hd, _ := h.HeadAt("a.md", at.Add(1500*time.Millisecond)); hd.Rev != "r2" {
		t.Errorf("HeadAt after the edit: %+v, want r2", hd)
	}
	if !h.Explained("a.md", "r1", true, at.Add(-time.Second)) || !h.Explained("a.md", "r2", true, at) {
		t.Error("Explained lost a record")
	}
}

// TestMarkTime: marks keep unix nanoseconds, in the order of the times,
// the zero time first and times UnixNano cannot hold at the ends.
func TestMarkTime(t *testing.T) {
	now := time.Now()
	times := []time.Time{
		{},
		time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC),
		now.Add(-time.Nanosecond),
		now,
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		if a, b := markTime(times[i-1]), markTime(times[i]); a >= b {
			t.Errorf("markTime(%v) = %d, not before markTime(%v) = %d", times[i-1], a, times[i], b)
		}
	}
	for _, tm := range []time.Time{{}, times[2], now, now.In(time.FixedZone("x", 3600))} {
		got := mark{at: markTime(tm)}.time()
		if !got.Equal(tm) || (!tm.IsZero() && got.Location() != time.UTC) {
			t.Errorf("mark time of %v: %v, want the same instant in UTC", tm, got)
		}
	}
}

// TestHeadsLateCreate: a writer journals its create after the file is
// visible, so a consumer woken by it (tuple in --wait, queue take
// --wait) can move the file away and journal that first, as seen in the
// journal of a real `tuple in --wait` racing `tuple out`. The late
// doc.created is the creation the removal undid: the path stays removed
// (it was reported as present, and a watcher started later journaled an
// external removal of it), and the creation is still accounted for.
// Paths the journal had seen, and creations long after the removal,
// are real re-creations.
func TestHeadsLateCreate(t *testing.T) {
	root, j := openHeadsJournal(t)
	t0 := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, e := range []Event{
		// The race, as journaled: the consumer's move, then the creation.
		{Type: TypeMoved, Path: "tuples/job/.taken/a.md", Time: schema.TimeOf(ms(0)), Data: map[string]any{"from": "tuples/job/a.md"}},
		{Type: TypeCreated, Path: "tuples/job/a.md", Rev: "ra", Time: schema.TimeOf(ms(1))},
		// The same with a removal (queue take) and an equal time.
		{Type: TypeRemoved, Path: "queues/q/pending/b.md", Time: schema.TimeOf(ms(2))},
		{Type: TypeCreated, Path: "queues/q/pending/b.md", Rev: "rb", Time: schema.TimeOf(ms(2))},
		// A path journaled before: removed, then made again.
		{Type: TypeCreated, Path: "c.md", Rev: "c1", Time: schema.TimeOf(ms(3))},
		{Type: TypeRemoved, Path: "c.md", Time: schema.TimeOf(ms(4))},
		{Type: TypeCreated, Path: "c.md", Rev: "c2", Time: schema.TimeOf(ms(5))},
		// A removal of a file nobody journaled (made by hand), and a
		// creation long after it.
		{Type: TypeRemoved, Path: "d.md", Time: schema.TimeOf(ms(6))},
		{Type: TypeCreated, Path: "d.md", Rev: "d1", Time: schema.TimeOf(ms(10006))},
		// A creation stamped before the removal it was undone by (its
		// writer read the clock first) but journaled after it.
		{Type: TypeRemoved, Path: "e.md", Time: schema.TimeOf(ms(8))},
		{Type: TypeCreated, Path: "e.md", Rev: "e1", Time: schema.TimeOf(ms(7))},
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
		path, rev string
		present   bool
	}{
		{"tuples/job/a.md", "", false},
		{"queues/q/pending/b.md", "", false},
		{"c.md", "c2", true},
		{"d.md", "d1", true},
		{"e.md", "", false},
	} {
		got, _ := h.Get(tc.path)
		if got.Present != tc.present || got.Rev != tc.rev {
			t.Errorf("%s: got %+v, want present %v rev %q", tc.path, got, tc.present, tc.rev)
		}
	}
	// The creation happened: a watcher that saw the file is answered.
	for _, p := range []struct{ path, rev string }{{"tuples/job/a.md", "ra"}, {"queues/q/pending/b.md", "rb"}} {
		if !h.Explained(p.path, p.rev, true, ms(-1000)) {
			t.Errorf("Explained(%s, %s, present): the late creation is not accounted for", p.path, p.rev)
		}
		if !h.Explained(p.path, "", false, ms(-1000)) {
			t.Errorf("Explained(%s, removed): got false", p.path)
		}
	}
	// Applied twice (AppendIf's Apply, then CatchUp reading it back):
	// the same answer.
	h.Apply(Event{Type: TypeCreated, Path: "tuples/job/a.md", Rev: "ra", Time: schema.TimeOf(ms(1))})
	if got, _ := h.Get("tuples/job/a.md"); got.Present {
		t.Errorf("tuples/job/a.md after the record applied again: %+v", got)
	}
}
