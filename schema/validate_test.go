package schema

import (
	"testing"
	"time"
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
	}
	if _, ok := parseStamp("2026-11-22T05:34:04.123Z"); !ok {
		t.Errorf("parseStamp refused FormatTime's own form")
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
