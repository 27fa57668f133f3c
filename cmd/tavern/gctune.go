package main

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// oneShotMemory: most commands live for milliseconds and allocate a few
// megabytes, so collecting garbage is wasted work (a tenth of ls over
// 2,000 documents, and of a warm ls over 100k). The collector waits for
// five times the live heap (GOGC=400), under a soft limit of 112 MiB that
// keeps a big command (building the index of 100k documents) near what it
// needs. Long-running commands set their own (longRunningMemory); GOGC
// and GOMEMLIMIT in the environment win.
func oneShotMemory() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(112 << 20)
		debug.SetGCPercent(400)
	}
}

// longRunningMemory tunes the garbage collector of a process that keeps
// a projection for hours (watch, serve, ui, the daemon, pools). With the
// default GOGC=100 the heap grows to twice what is live before a
// collection, and memory freed after a burst of edits is returned to the
// system slowly: a 100k-document projection with 105 MB live ran at
// 170-250 MB resident, growing with edits. A soft memory limit a little
// above the live heap (re-set every few seconds, so a growing store is
// never squeezed: the limit follows it) makes the collector and the
// scavenger keep the resident size near what is live. The start-up
// garbage (the index file, the journal's checkpoint) is returned once the
// projection is built, or trimAfter later: a view's first pages are asked
// for right after it is ready, and the forced collection cost them ~50 ms.
// Only views wait: delayed in the daemon, the trim left it ~20 MiB larger
// after 30,000 edits (BenchmarkProjectionMemory, 121-131 against 109 MiB,
// two runs each). What a burst of edits leaves behind is returned once
// the burst is over (idleTrim). GOGC or GOMEMLIMIT in the environment
// leave the runtime as they set it.
func longRunningMemory(trimAfter time.Duration) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	memOnce.Do(func() {
		debug.SetGCPercent(100) // oneShotMemory raised it
		go func() {
			time.Sleep(trimAfter)
			debug.FreeOSMemory()
			var idle idleTrim
			for {
				m := readHeap()
				if m.live > 0 {
					debug.SetMemoryLimit(int64(m.live + m.live/4 + 16<<20))
				}
				if idle.due(m, time.Now()) {
					debug.FreeOSMemory()
				}
				time.Sleep(memTick)
			}
		}()
	})
}

// memTick is how often a long-running process re-reads its heap.
const memTick = 2 * time.Second

// heapFigures are the runtime's figures longRunningMemory decides on.
type heapFigures struct {
	live   uint64 // marked live by the last collection
	held   uint64 // heap memory not returned to the system: objects, free and unused spans
	cycles uint64 // collections so far
}

func readHeap() heapFigures {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return heapFigures{live: u(0), held: u(1) + u(2) + u(3), cycles: u(4)}
}

// idleTrim decides when a long-running process returns a burst's
// garbage. Under the soft limit the collector runs only when the heap
// reaches it, so after a burst of edits (or a query over every entry, or
// a save of the index) the process kept the garbage it made since its
// last collection, and the free pages, up to the limit (a third more
// than live at 100k documents) until the next burst. Once a whole tick
// passed without a collection (the burst is over) and the heap holds
// more than live + live/16 + 4 MiB, one forced collection and scavenge
// brings the resident size back to what is live. A process that
// allocates slowly without ever collecting would cross that line every
// few ticks: such small trims come at most once per idleTrimEvery. A
// burst's worth (more than live + live/8 + 8 MiB) is trimmed at the
// first quiet tick whenever it comes, or a burst right after a trim kept
// its garbage for the interval.
type idleTrim struct {
	cycles  uint64
	ticked  bool
	trimmed time.Time
}

const idleTrimEvery = 10 * time.Second

func (t *idleTrim) due(m heapFigures, now time.Time) bool {
	quiet := t.ticked && m.cycles == t.cycles
	t.cycles, t.ticked = m.cycles, true
	if !quiet || m.live == 0 || m.held <= m.live+m.live/16+4<<20 {
		return false
	}
	if m.held <= m.live+m.live/8+8<<20 && now.Sub(t.trimmed) < idleTrimEvery {
		return false
	}
	t.trimmed = now
	return true
}

var memOnce sync.Once

// viewTrimAfter is how long serve and ui wait before trimming their
// start-up garbage (see longRunningMemory).
const viewTrimAfter = time.Second

// longRunningStart lifts the one-shot soft memory limit for a long-running
// command's start-up: it builds a heap (the projection of the store) that
// lives as long as the process, and under the limit the collector ran over
// and over while it grew (0.4 s of serve's 1.4 s start-up on 100k
// documents). longRunningMemory sets the limit from the live heap once
// it is built.
func longRunningStart() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(math.MaxInt64)
}
