package docstore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// plainByte is plainWord's rule for one byte, written out.
func plainByte(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }

func TestPlainWord(t *testing.T) {
	// Every byte value at every position, among plain and among
	// borderline neighbours (a borrow from one byte must not hide
	// another).
	for _, fill := range []byte{'a', ' ', '~', '!', '#', '[', ']'} {
		for pos := range 8 {
			for v := range 256 {
				w := bytes.Repeat([]byte{fill}, 8)
				w[pos] = byte(v)
				if got, want := plainWord(word(w)), plainByte(byte(v)); got != want {
					t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var w [8]byte
		want := true
		for i := range w {
			w[i] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				w[i] = byte(0x1e + r.IntN(0x64)) // around the edges: 0x1e..0x81
			}
			want = want && plainByte(w[i])
		}
		if got := plainWord(word(w[:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
		}
	}
}

// jsonString is encoding/json's quoting of s, HTML not escaped.
func jsonString(tb testing.TB, s string) string {
	tb.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		tb.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{
		"", "a", "plain ascii, longer than eight bytes", "quote\" in the middle of a long run",
		"back\\slash after eight", "\x00\x01\x1f\x7f", "tab\tnewline\nreturn\r", "ünïcödé and more ascii",
		"\u2028\u2029 separators", "bad \xff utf-8 \xc3", "12345678\"", "1234567\\8", "<html> & 'quotes'",
	} {
		if got, want := string(AppendJSONString(nil, s)), jsonString(t, s); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain ascii, longer than eight bytes")
	f.Add("12345678\"\\\x00\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendJSONString(nil, s)), jsonString(t, s); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func word(b []byte) uint64 {
	var x uint64
	for i := 7; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x
}
