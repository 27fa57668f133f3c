package schema

import (
	"encoding/json"
	"sort"
	"testing"
	"time"
)

// TestTimestampJSON: a Timestamp's JSON is FormatTime's, in UTC, of one
// width whatever the fraction, so that the strings sort as the times do
// (time.Time's drops trailing zeros: "05.1Z" sorted after "05.12Z").
func TestTimestampJSON(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 5, 0, time.UTC)
	times := []time.Time{
		base.Add(120 * time.Millisecond),
		base.Add(100 * time.Millisecond),
		base,
		base.Add(123456789),
		base.In(time.FixedZone("x", 3600)).Add(time.Second),
	}
	var got []string
	for _, tm := range times {
		b, err := json.Marshal(struct {
			T Timestamp `json:"t"`
		}{TimeOf(tm)})
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ T string }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if len(v.T) != len("2006-01-02T15:04:05.000Z") || v.T != FormatTime(tm) {
			t.Errorf("%v: got %q, want %q", tm, v.T, FormatTime(tm))
		}
		got = append(got, v.T)
	}
	want := []string{"2026-11-25T12:00:05.000Z", "2026-11-25T12:00:05.100Z", "2026-11-25T12:00:05.120Z", "2026-11-25T12:00:05.123Z", "2026-11-25T12:00:06.000Z"}
	sort.Strings(got)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sorted: got %q, want %q", got, want)
			break
		}
	}
}

// TestTimestampRead: what time.Time's JSON wrote before (nanoseconds, a
// zone) reads back, and null leaves the zero time.
func TestTimestampRead(t *testing.T) {
	var v struct{ T Timestamp }
	if err := json.Unmarshal([]byte(`{"T":"2026-11-25T13:00:05.1234+01:00"}`), &v); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 25, 12, 0, 5, 123400000, time.UTC); !v.T.Equal(want) {
		t.Errorf("got %v, want %v", v.T, want)
	}
	v.T = Timestamp{}
	if err := json.Unmarshal([]byte(`{"T":null}`), &v); err != nil || !v.T.IsZero() {
		t.Errorf("null: got %v %v, want the zero time", v.T, err)
	}
	// omitzero sees the zero time (IsZero), as for a time.Time field.
	if b, _ := json.Marshal(struct {
		T Timestamp `json:"t,omitzero"`
	}{}); string(b) != "{}" {
		t.Errorf("omitzero: got %s, want {}", b)
	}
	if _, err := json.Marshal(TimeOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); err == nil {
		t.Error("year 10000: no error")
	}
}

// TestAppendTimeJSONLayout: the hand-written formatter writes what
// FormatTime's layout does, over the whole range of years and fractions.
func TestAppendTimeJSONLayout(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 11, 25, 9, 5, 7, 1000000, time.FixedZone("x", -5*3600)),
		time.Date(2026, 2, 3, 4, 5, 6, 999999, time.UTC),
		time.Unix(0, 0),
		time.Now(),
	} {
		got, err := AppendTimeJSON(nil, tm)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"` + tm.UTC().Format(TimeLayout) + `"`; string(got) != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
	for i := int64(0); i < 2000; i++ {
		tm := time.Unix((i*7919*86400/3+i*1000003)%253402300799, i*999983%1e9).UTC() // up to 9999-12-31
		got, _ := AppendTimeJSON(nil, tm)
		if want := `"` + FormatTime(tm) + `"`; string(got) != want {
			t.Fatalf("%v: got %s, want %s", tm, got, want)
		}
	}
}
