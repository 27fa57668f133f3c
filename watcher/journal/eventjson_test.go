package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tavernhq/tavern/schema"
)

// marshalCompare fails tb unless appendEvent(e) is byte-identical to
// json.Marshal(e), or both fail.
func marshalCompare(tb testing.TB, e Event) {
	tb.Helper()
	want, werr := json.Marshal(e)
	got, gerr := appendEvent([]byte("prefix"), &e) // appends, never overwrites
	if werr != nil || gerr != nil {
		if (werr == nil) != (gerr == nil) {
			tb.Fatalf("event %#v: appendEvent error %v, json.Marshal error %v", e, gerr, werr)
		}
		return
	}
	if got, ok := bytes.CutPrefix(got, []byte("prefix")); !ok || !bytes.Equal(got, want) {
		tb.Fatalf("event %#v:\ngot  %s\nwant %s", e, got, want)
	}
}

type named string

type point struct {
	X, Y int
	Tag  string `json:"tag,omitempty"`
}

type html struct{}

func (html) MarshalJSON() ([]byte, error) { return []byte(`{"h":"<b>"}`), nil }

func TestEventJSON(t *testing.T) {
	base := time.Date(2026, 11, 22, 13, 4, 5, 123456789, time.UTC)
	nasty := []string{
		"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>",
		"tab\tnl\nret\rbs\bff\f", "\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028 and \u2029",
		"bad utf8 \xff\xfe end", "truncated \xe6\x97", "\xed\xa0\x80 surrogate", "\ufffd replacement",
		strings.Repeat("long ", 300),
	}
	var events []Event
	for _, s := range nasty {
		events = append(events,
			Event{ID: s, Time: schema.TimeOf(base), Type: s},
			Event{ID: "id", Time: schema.TimeOf(base), Writer: s, Seq: 7, Type: "t", Kind: s, Path: s, Rev: s,
				Agent: s, Parent: s, Item: s, Queue: s, Data: map[string]any{s: s, "k" + s: []any{s, nil}}},
		)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := map[string]any{"leaf": 1}
	for range 40 {
		deep = map[string]any{"d": deep, "s": []any{"x", 1}}
	}
	datas := []map[string]any{
		nil,
		{},
		{"attempt": 1, "claim_kind": "lease"},
		{"int": -42, "int8": int8(-8), "int16": int16(16), "int32": int32(-32), "int64": int64(math.MinInt64),
			"uint": uint(1), "uint8": uint8(255), "uint16": uint16(65535), "uint32": uint32(1 << 31), "uint64": uint64(math.MaxUint64)},
		{"f0": 0.0, "fneg0": math.Copysign(0, -1), "f1": 1.5, "fsmall": 1e-7, "fedge": 1e-6, "fbig": 1e21, "fbelow": 1e20,
			"fmax": math.MaxFloat64, "fmin": math.SmallestNonzeroFloat64, "fneg": -123.456e-9, "f32": float32(0.1)},
		{"t": true, "f": false, "nil": nil, "nilmap": map[string]any(nil), "nilslice": []any(nil), "empty": map[string]any{}},
		{"nested": map[string]any{"b": []any{1, "x", map[string]any{"<": ">"}}, "a": 2}},
		{"dur": time.Second, "named": named("n<"), "num": json.Number("12.5"), "time": base, "bytes": []byte("hi"),
			"strs": []string{"a", "&"}, "struct": point{1, 2, "<>"}, "ptr": &point{X: 3}, "marshaler": html{}, "intmap": map[int]string{2: "b", 1: "a"}},
		{"nan": math.NaN()},
		{"inf": math.Inf(-1)},
		{"chan": make(chan int)},
		{"func": func() {}},
		{"cyclic": cyclic},
		{"deep": deep},
		{"z": 1, "a": 2, "m": 3, "A": 4, "_": 5, "é": 6, "": 7, "<": 8},
	}
	for _, d := range datas {
		events = append(events, Event{ID: "0190a1b2-0000-7000-8000-000000000000", Time: schema.TimeOf(base), Writer: "h/1/abc", Seq: 1, Type: "item.claimed", Data: d})
	}
	for _, tm := range []time.Time{
		{}, base, base.Truncate(time.Second), base.Truncate(time.Millisecond), time.Unix(0, 1).UTC(),
		base.In(time.FixedZone("x", -7*3600)), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), // with a monotonic reading
	} {
		events = append(events, Event{ID: "x", Time: schema.TimeOf(tm), Type: "t", Seq: math.MaxUint64})
	}
	for _, e := range events {
		marshalCompare(t, e)
	}
}

// TestJournalLinesMatchMarshal: what Append writes (assembled from the
// caller's body and the leader's id, writer and seq) is json.Marshal of
// the event Append returns.
func TestJournalLinesMatchMarshal(t *testing.T) {
	root := t.TempDir()
	j, err := Open(root, Options{Writer: "host/1/<&>\u2028"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var want [][]byte
	for i, s := range []string{"a", "<b>", "é\x00\u2029", "\xff"} {
		e, err := j.Append(Event{Type: "t." + s, Path: s, Data: map[string]any{"i": i, "s": s, "f": float64(i) / 3}})
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(e)
		want = append(want, append(line, '\n'))
	}
	day := time.Now().UTC().Format(time.DateOnly)
	got, err := os.ReadFile(filepath.Join(root, Dir, day+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if w := bytes.Join(want, nil); !bytes.Equal(got, w) {
		t.Errorf("file:\n%s\nwant:\n%s", got, w)
	}
	if _, err := j.Append(Event{Type: "t", Data: map[string]any{"bad": math.NaN()}}); err == nil {
		t.Errorf("Append of NaN data: got nil error")
	}
	var ue *json.UnsupportedValueError
	if _, err := j.Append(Event{Type: "t", Data: map[string]any{"bad": math.Inf(1)}}); !errors.As(err, &ue) {
		t.Errorf("Append of Inf data: got %v, want a *json.UnsupportedValueError", err)
	}
}

func FuzzEventJSON(f *testing.F) {
	f.Add("item.claimed", "queues/q/claimed/a.md", "agent-1", "attempt", "lease", int64(2), 1.5, true, int64(1795000000123456789), uint64(1))
	f.Add("<script>", "a&b", "\u2028\u2029", "\x00", "\xff\xfe", int64(-1), 1e-7, false, int64(0), uint64(0))
	f.Add("", "", "", "", "", int64(math.MaxInt64), 1e21, false, int64(-62135596800000000), uint64(math.MaxUint64))
	f.Add("é日本🎉", "\\\"/", "\t\n\r\b\f", "k", "\x7f", int64(math.MinInt64), -0.0, true, int64(253402300800000000), uint64(7))
	f.Fuzz(func(t *testing.T, typ, path, agent, key, sval string, ival int64, fval float64, b bool, nsec int64, seq uint64) {
		// nsec spans more than int64 nanoseconds allow: scale so years
		// beyond 9999 (an error for both encoders) are reachable.
		tm := time.Unix(nsec/1e9*100, nsec%1e9).UTC()
		e := Event{ID: agent, Time: schema.TimeOf(tm), Writer: path, Seq: seq, Type: typ, Kind: sval, Path: path, Rev: key,
			Agent: agent, Parent: typ, Item: sval, Queue: key}
		if key != "" || b {
			e.Data = map[string]any{
				key: sval, key + "i": ival, key + "f": fval, key + "b": b, key + "n": nil,
				"nested": map[string]any{sval: []any{ival, fval, sval, map[string]any{}}},
				"named":  named(sval), "u": uint64(ival),
			}
		}
		marshalCompare(t, e)
		if got, want := appendJSONString(nil, sval), mustMarshal(t, sval); !bytes.Equal(got, want) {
			t.Fatalf("string %q: got %s, want %s", sval, got, want)
		}
	})
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkEventJSON: encoding one queue-like event, the journal's
// encoder against json.Marshal.
func BenchmarkEventJSON(b *testing.B) {
	e := Event{
		ID: "0190a1b2-0000-7000-8000-000000000000", Time: schema.TimeOf(time.Date(2026, 11, 22, 13, 4, 5, 123456789, time.UTC)),
		Writer: "host/12345/abcdef", Seq: 12345, Type: "item.claimed", Kind: "item", Agent: "worker-3",
		Path: "queues/q/claimed/0190a1b2-0000-7000-8000-000000000000.md",
		Rev:  "3-9f8e7d6c", Item: "0190a1b2-0000-7000-8000-000000000000", Queue: "q",
		Data: map[string]any{"attempt": 2, "claim_kind": "lease"},
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendEvent(buf[:0], &e)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(e)
		}
	})
}

// TestPlain8 holds the 8-byte fast path to the byte table: every byte
// value at every position, and random mixes of the edge values.
func TestPlain8(t *testing.T) {
	check := func(w []byte) {
		t.Helper()
		want := true
		for _, c := range w {
			want = want && c < utf8.RuneSelf && asciiEscape[c] == ""
		}
		if got := plain8(string(w)); got != want {
			t.Fatalf("plain8(%q) = %v, want %v", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			check(w)
		}
	}
	edges := []byte{0, 1, 0x1f, ' ', '!', '"', '#', '%', '&', '\'', ';', '<', '=', '>', '?', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0xc3, 0xff, 'a'}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var w [8]byte
		for i := range w {
			w[i] = edges[rnd.IntN(len(edges))]
		}
		check(w[:])
	}
}
