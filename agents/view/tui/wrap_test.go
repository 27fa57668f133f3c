package tui

import (
	"testing"
	"time"
)

// TestWrapNarrow checks that an error wraps on a line narrower than one
// of its letters (a wide one, 界, on a status line one cell wide) without
// hanging: each line takes at least one letter.
func TestWrapNarrow(t *testing.T) {
	tests := []struct {
		s    string
		w, n int
	}{
		{"界", 1, 3},
		{"ab 界界 cd", 1, 3},
		{"failed: 界界界 kept in /tmp/x", 3, 3},
		{"plain words that wrap", 5, 3},
	}
	for _, tt := range tests {
		done := make(chan []string, 1)
		go func() { done <- wrap(tt.s, tt.w, tt.n) }()
		select {
		case got := <-done:
			if len(got) == 0 || len(got) > tt.n {
				t.Errorf("wrap(%q, %d, %d) = %q: want 1 to %d lines", tt.s, tt.w, tt.n, got, tt.n)
			}
			for _, l := range got[:len(got)-1] {
				if l == "" {
					t.Errorf("wrap(%q, %d, %d) = %q: an empty line before the last", tt.s, tt.w, tt.n, got)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("wrap(%q, %d, %d) did not return", tt.s, tt.w, tt.n)
		}
	}
}
