package main

import (
	"testing"
	"time"
)

// TestIdleTrim: a long-running process returns a burst's garbage once a
// tick passed without a collection, only when the heap holds clearly
// more than is live, and at most once per idleTrimEvery.
func TestIdleTrim(t *testing.T) {
	const mib = 1 << 20
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	type tick struct {
		after  time.Duration // since t0
		m      heapFigures
		want   bool
		reason string
	}
	for _, tc := range []struct {
		name  string
		ticks []tick
	}{
		{"a burst, then quiet", []tick{
			{0, heapFigures{live: 100 * mib, held: 140 * mib, cycles: 10}, false, "first tick: nothing to compare with"},
			{2 * time.Second, heapFigures{live: 100 * mib, held: 140 * mib, cycles: 14}, false, "collections ran: still busy"},
			{4 * time.Second, heapFigures{live: 100 * mib, held: 140 * mib, cycles: 14}, true, "quiet, 40 MiB over live"},
			{6 * time.Second, heapFigures{live: 100 * mib, held: 101 * mib, cycles: 15}, false, "the trim's own collection"},
			{8 * time.Second, heapFigures{live: 100 * mib, held: 101 * mib, cycles: 15}, false, "nothing held to return"},
		}},
		{"quiet but near live", []tick{
			{0, heapFigures{live: 100 * mib, held: 115 * mib, cycles: 3}, false, "first tick"},
			{2 * time.Second, heapFigures{live: 100 * mib, held: 110 * mib, cycles: 3}, false, "within live/16 + 4 MiB"},
		}},
		{"slow allocation without collections", []tick{
			{0, heapFigures{live: 100 * mib, held: 130 * mib, cycles: 3}, false, "first tick"},
			{2 * time.Second, heapFigures{live: 100 * mib, held: 130 * mib, cycles: 3}, true, "quiet, over"},
			{4 * time.Second, heapFigures{live: 100 * mib, held: 125 * mib, cycles: 4}, false, "collected"},
			{6 * time.Second, heapFigures{live: 100 * mib, held: 118 * mib, cycles: 4}, false, "over again, but trimmed 4 s ago"},
			{2*time.Second + idleTrimEvery, heapFigures{live: 100 * mib, held: 118 * mib, cycles: 4}, true, "an interval later"},
		}},
		{"a burst right after a trim", []tick{
			{0, heapFigures{live: 100 * mib, held: 140 * mib, cycles: 7}, false, "first tick"},
			{2 * time.Second, heapFigures{live: 100 * mib, held: 140 * mib, cycles: 7}, true, "quiet, over"},
			{4 * time.Second, heapFigures{live: 100 * mib, held: 135 * mib, cycles: 9}, false, "a query over every entry: collecting"},
			{6 * time.Second, heapFigures{live: 100 * mib, held: 135 * mib, cycles: 9}, true, "quiet again with a burst's worth held: no need to wait"},
		}},
		{"no live figure yet", []tick{
			{0, heapFigures{held: 30 * mib}, false, "first tick"},
			{2 * time.Second, heapFigures{held: 30 * mib}, false, "no collection has measured the live heap"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var it idleTrim
			for i, tk := range tc.ticks {
				if got := it.due(tk.m, t0.Add(tk.after)); got != tk.want {
					t.Errorf("tick %d (%s): due = %v, want %v", i, tk.reason, got, tk.want)
				}
			}
		})
	}
}
