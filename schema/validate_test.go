package schema

import (
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestParseStampMatchesTimeParse checks the hand-written stamp parser
// against time.Parse on well-formed, edge and malformed stamps.
func TestParseStampMatchesTimeParse(t *testing.T) {
	cases := []string{
		"2026-11-22T05:34:04.123Z", "2026-11-22T05:34:04Z", "2026-11-22T05:34:04.1Z",
		"2026-11-22T05:34:04.123456789Z", "2024-02-29T00:00:00.000Z", "2025-02-29T00:00:00.000Z",
		"2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "2026-01-01T24:00:00Z",
		"2026-01-01T23:60:00Z", "2026-01-01T23:59:60Z", "2026-01-01T23:59:59.Z", "2026-01-01T23:59:59.1234567890Z",
		"2026-01-01T23:59:59+00:00", "2026-01-01 23:59:59Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
		"2026-1-01T00:00:00Z", "2026-01-01T00:00:0aZ", "+026-01-01T00:00:00Z", "2026-01-01T00:00:00.-1Z",
		"2026-01-01t00:00:00Z", "2026-01-01T00:00:00z",
	}
	for _, s := range cases {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, ok := parseStamp(s)
		if !ok {
			continue // ParseTime falls back to time.Parse: same answer by construction
		}
		if werr != nil {
			t.Errorf("parseStamp(%q) accepted what time.Parse refuses: %v", s, werr)
			continue
		}
		if !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("parseStamp(%q) = %v, want %v", s, got, want)
		}
		if !IsStamp(s) {
			t.Errorf("IsStamp(%q) = false, parseStamp accepts it", s)
		}
	}
	if _, ok := parseStamp("2026-11-22T05:34:04.123Z"); !ok {
		t.Errorf("parseStamp refused FormatTime's own form")
	}
}

// TestFormatTimeMatchesFormat checks the hand-written FormatTime against
// the layout it stands for, across zones, sub-millisecond nanoseconds
// (truncated, never rounded) and the years at and past its fast path's
// edges.
func TestFormatTimeMatchesFormat(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		time.Date(2026, 11, 22, 5, 34, 4, 123456789, time.UTC),
		time.Date(2026, 11, 22, 5, 34, 4, 999999999, east),
		time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1, east), // the day before in UTC
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999000000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(7, 3, 4, 5, 6, 7, 8000000, time.UTC),
		{},
	}
	for s := int64(0); s < 2000; s++ {
		times = append(times, time.Unix(s*987654321%253402300799, s*7919*104729%1e9))
	}
	for _, tm := range times {
		if got, want := FormatTime(tm), tm.UTC().Format(TimeLayout); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

func FuzzParseStamp(f *testing.F) {
	f.Add("2026-11-22T05:34:04.123Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseStamp(s)
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("parseStamp(%q) accepted what time.Parse refuses: %v", s, err)
		}
		if !got.Equal(want) || got.Location() != want.Location() {
			t.Fatalf("parseStamp(%q) = %v, want %v", s, got, want)
		}
	})
}

// No duration of the store may be negative; lease, default_lease and the
// other durations that mean nothing at zero must be positive. Zero
// backoff, backoff_max and lease_grace are honoured (retry, reap at once).
func TestDurationBounds(t *testing.T) {
	cases := []struct {
		k     *Kind
		field string
		value string
		ok    bool
	}{
		{Queue, "lease", "5m", true},
		{Queue, "lease", "0s", false},
		{Queue, "lease", "-2s", false},
		{Queue, "lease_grace", "0s", true},
		{Queue, "lease_grace", "-1s", false},
		{Queue, "backoff", "0s", true},
		{Queue, "backoff", "-1s", false},
		{Queue, "backoff_max", "0s", true},
		{Queue, "backoff_max", "-10m", false},
		{Config, "default_lease", "-5m", false},
		{Config, "default_lease", "0s", false},
		{Config, "default_lease", "1m", true},
		{Config, "bubble_after", "0s", true},
		{Config, "bubble_after", "-1s", false},
		{Config, "reconcile", "0s", false},
		{Config, "settle", "-1s", false},
		{Config, "external_grace", "0s", false},
		{Commitment, "timeout", "0s", false},
		{Commitment, "duration", "0s", true},
	}
	for _, c := range cases {
		var m yaml.Node
		if err := yaml.Unmarshal([]byte(c.field+": "+c.value+"\n"), &m); err != nil {
			t.Fatal(err)
		}
		var errs []*FieldError
		for _, e := range c.k.Validate(m.Content[0], false) {
			if e.Field == c.field {
				errs = append(errs, e)
			}
		}
		if got := len(errs) == 0; got != c.ok {
			t.Errorf("%s %s: %s: valid %v, want %v (%v)", c.k.Name, c.field, c.value, got, c.ok, errs)
		}
		if !c.ok && len(errs) == 1 && (errs[0].Line != 1 || errs[0].Col != len(c.field)+3) {
			t.Errorf("%s %s: %s: at %d:%d", c.k.Name, c.field, c.value, errs[0].Line, errs[0].Col)
		}
	}
}

// The config is Closed: a key it does not know is an error without
// strict validation (a typo would leave a default in force), with the
// known keys near it, and its JSON Schema says so too.
func TestClosedKindRefusesUnknownField(t *testing.T) {
	for _, tc := range []struct{ front, want string }{
		{"durabilty: relaxed\n", `unknown field (did you mean "durability"?)`},
		{"default_leese: 1m\n", `unknown field (did you mean "default_lease"?)`},
		{"engine: etcd\n", "unknown field (known: schema_version, name, durability, default_lease, default_max_attempts, chunk_size, bubble_after, reconcile, coordination, etcd, sync, settle, external_grace, created)"},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.front), &doc); err != nil {
			t.Fatal(err)
		}
		errs := Config.Validate(doc.Content[0], false)
		if len(errs) != 1 {
			t.Fatalf("%q: got %v, want one error", tc.front, errs)
		}
		if got := errs[0]; got.Msg != tc.want || got.Unknown || got.Line != 1 || got.Col != 1 {
			t.Errorf("%q: got %+v, want 1:1 %s (not Unknown: it counts without strict)", tc.front, got, tc.want)
		}
	}
	if got := Config.JSONSchema()["additionalProperties"]; got != false {
		t.Errorf("config JSON Schema additionalProperties = %v, want false", got)
	}
	if got := Agent.JSONSchema()["additionalProperties"]; got != true {
		t.Errorf("agent JSON Schema additionalProperties = %v, want true", got)
	}
}
