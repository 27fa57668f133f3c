package journal_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tavernhq/tavern/watcher/journal"
)

// BenchmarkJournalAppend: Journal.Append of a queue-like event (the
// Broker's item.claimed) from g goroutines sharing one Journal, as the
// Broker's workers do. ns/op is per event, whatever g.
func BenchmarkJournalAppend(b *testing.B) {
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			j, err := journal.Open(b.TempDir(), journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range g {
				n := b.N / g
				if w < b.N%g {
					n++
				}
				agent := fmt.Sprintf("worker-%d", w)
				wg.Go(func() {
					for i := range n {
						e := journal.Event{
							Type: "item.claimed", Kind: "item", Agent: agent,
							Path: "queues/q/claimed/0190a1b2-0000-7000-8000-000000000000.md",
							Rev:  "3-9f8e7d6c", Item: "0190a1b2-0000-7000-8000-000000000000", Queue: "q",
							Data: map[string]any{"attempt": i, "claim_kind": "lease"},
						}
						if _, err := j.Append(e); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
