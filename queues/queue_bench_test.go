package queues_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/queues"
)

// payload is the body of every benchmark item, here and in
// BenchmarkSQLiteQueue.
var payload = strings.Repeat("x", 1024)

// BenchmarkQueueTakeDone measures durable take+done cycles per second:
// workers goroutines share one Broker, each loops Take (HoldLock, the
// pool path) then Complete until the queue is empty. Enqueueing b.N
// items is setup (done with relaxed durability, then sync(2), then the
// store is reopened durable). Names and the ops/s metric pair with
// BenchmarkSQLiteQueue and BenchmarkRawDurableRename in `make bench`
// (cmd/benchreport/pairs.go).
func BenchmarkQueueTakeDone(b *testing.B) {
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { benchTakeDone(b, w, "durable") })
	}
}

// BenchmarkQueueTakeDoneRelaxed is the same with `durability: relaxed`
// (no fsync; still atomic), paired with SQLite synchronous=NORMAL.
func BenchmarkQueueTakeDoneRelaxed(b *testing.B) {
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { benchTakeDone(b, w, "relaxed") })
	}
}

func benchTakeDone(b *testing.B, workers int, durability string) {
	dir := filepath.Join(storetest.BenchDir(b), ".tavern")
	s, _, err := docstore.Init(dir, "bench")
	if err != nil {
		b.Fatal(err)
	}
	setDurability(b, s, "relaxed")
	s, err = docstore.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	br, err := queues.Open(s, queues.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateQueue("q", queues.QueueOptions{}); err != nil {
		b.Fatal(err)
	}
	body := []byte(payload)
	for i := 0; i < b.N; i++ {
		if _, err := br.Add("q", queues.AddOptions{Title: "item", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	br.Close()
	setDurability(b, s, durability)
	syscall.Sync()
	s, err = docstore.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if got := s.Durable(); got != (durability == "durable") {
		b.Fatalf("store durable = %v, want %v", got, durability == "durable")
	}
	br, err = queues.Open(s, queues.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()

	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	counts := make([]int, workers)
	cpu0 := storetest.CPUNow(b)
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := br.Take(ctx, queues.TakeOptions{Queues: []string{"q"}, Liveness: queues.HoldLock, As: fmt.Sprintf("w%d", w)})
				if err != nil {
					if isEmpty(err) {
						return
					}
					errc <- err
					return
				}
				if _, err := c.Complete("ok"); err != nil {
					errc <- err
					return
				}
				counts[w]++
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	storetest.ReportCPU(b, cpu0, b.N)
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != b.N {
		b.Fatalf("completed %d items, want %d", total, b.N)
	}
	storetest.ReportOpsPerSec(b, b.N)
}
