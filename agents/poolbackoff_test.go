package agents

import (
	"testing"
	"time"
)

// The crash backoff's rule: crashes count in a row only while no drone
// reports and no item is completed. One crash is replaced at once; from
// the second the wait doubles (1s, 2s, 4s...) up to maxCrashWait; a
// report or a completed item (progressed) ends the streak, and what
// follows starts again from one crash. pool_crash_progress.txtar drives
// the same rule through tavern pool run.
func TestCrashBackoff(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var c crashBackoff
	crash := func(want time.Duration) {
		t.Helper()
		if got := c.exited(true, now); got != want {
			t.Fatalf("crash %d: wait %s, want %s", c.streak, got, want)
		}
		if c.holding(now) != (want > 0) || c.holding(now.Add(want)) {
			t.Fatalf("crash %d: holding %v at once, %v after %s", c.streak, c.holding(now), c.holding(now.Add(want)), want)
		}
	}
	crash(0)
	crash(time.Second)
	crash(2 * time.Second)
	// A drone of the pool completed an item (its wrapper may have died
	// after): the crashes so far are no loop; the next is replaced at once.
	c.progressed()
	if c.holding(now) {
		t.Fatal("progressed: launches still held")
	}
	crash(0)
	crash(time.Second)
	// A truly crash-looping pool: the wait grows up to maxCrashWait.
	for _, w := range []time.Duration{2, 4, 8, 16, 32, 60, 60} {
		crash(w * time.Second)
	}
	// A drone that reports (done, failed, released, no work) ends it too.
	if got := c.exited(false, now); got != 0 || c.streak != 0 || c.holding(now) {
		t.Fatalf("report: wait %s, streak %d, holding %v", got, c.streak, c.holding(now))
	}
	crash(0)
}
