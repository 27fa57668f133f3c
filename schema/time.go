package schema

import (
	"fmt"
	"time"
)

// TimeLayout is FormatTime's layout: RFC 3339 in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Timestamp is a time.Time whose JSON is the engine's one timestamp format
// (FormatTime), as the documents' own times are in --json. time.Time's
// JSON (RFC 3339 with nanoseconds, trailing zeros dropped, in the value's
// zone) varies in width and does not sort as a string: "12:00:05.1Z"
// sorts after "12:00:05.12Z". Every time field of a JSON answer is a Timestamp.
// Reading accepts what time.Time's JSON accepts (files written before).
type Timestamp struct{ time.Time }

// TimeOf wraps t.
func TimeOf(t time.Time) Timestamp { return Timestamp{t} }

// MarshalJSON writes FormatTime(t), quoted. A year outside [0,9999] is an
// error, as for time.Time.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return AppendTimeJSON(make([]byte, 0, len(TimeLayout)+2), t.Time)
}

// UnmarshalJSON reads an RFC 3339 string (any precision and zone), as
// time.Time's does.
func (t *Timestamp) UnmarshalJSON(b []byte) error { return t.Time.UnmarshalJSON(b) }

// AppendTimeJSON appends t as Timestamp's JSON: FormatTime's string, quoted.
// For writers that assemble JSON by hand (the journal).
func AppendTimeJSON(b []byte, t time.Time) ([]byte, error) {
	u := t.UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("schema.Timestamp.MarshalJSON: year %d outside of range [0,9999]", y)
	}
	b = append(b, '"')
	b = appendStamp(b, u)
	return append(b, '"'), nil
}

// appendStamp appends FormatTime's string for u, in UTC with a year in
// [0,9999]. By hand: every event and every state change writes stamps,
// and AppendFormat with a layout that is not one of its RFC 3339 fast
// paths costs several times more.
func appendStamp(b []byte, u time.Time) []byte {
	y, mo, d := u.Date()
	h, mi, sec := u.Clock()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, u.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

// appendDigits appends n (0 <= n < 10^width) in exactly width digits.
func appendDigits(b []byte, n, width int) []byte {
	start := len(b)
	for i := 0; i < width; i++ {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}
