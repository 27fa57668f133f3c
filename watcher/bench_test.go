package watcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/docstore/storetest"
	"github.com/tavernhq/tavern/watcher"
)

// The watcher's benchmarks, paired with the same-run baselines in
// rawnotify_bench_test.go by cmd/benchreport (make bench):
//
//   - BenchmarkWatchLatency (p50-µs, p99-µs) vs BenchmarkRawNotify/rename
//   - BenchmarkScan/files=N (files/s) vs BenchmarkRawGrep/files=10000
//   - BenchmarkQueryIndexed/files=N (files/s) vs BenchmarkScan/files=N
//
// N is 10,000; TAVERN_BENCH_DOCS adds a second size (e.g. 100000).

// BenchmarkWatchLatency: a document renamed into a watched directory (how
// every engine write lands), from just before rename(2) to the watcher's
// logical change: event, re-stat, read, hash, compare, delivery.
func BenchmarkWatchLatency(b *testing.B) {
	root := storetest.BenchDir(b)
	src := filepath.Join(root, ".tmp") // engine-private: not watched
	dst := filepath.Join(root, "docs")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	doc := grepDoc("pending")
	for i := 0; i < b.N; i++ {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("d%d.md", i)), doc, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync()
	got := make(chan string, 64)
	w, err := watcher.WatchFS(root, watcher.FSOptions{Reconcile: -1, Poll: -1, OnChange: func(cs []watcher.Change) {
		for _, c := range cs {
			got <- c.Path
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("d%d.md", i)
		want := "docs/" + name
		t0 := time.Now()
		if err := os.Rename(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			b.Fatal(err)
		}
	wait:
		for {
			select {
			case p := <-got:
				if p == want {
					break wait
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("no change for %s within 10s", want)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

func benchSizes() []int {
	sizes := []int{10000}
	if v, err := strconv.Atoi(os.Getenv("TAVERN_BENCH_DOCS")); err == nil && v > 0 && v != 10000 {
		sizes = append(sizes, v)
	}
	return sizes
}

// benchStore builds a store with n 1 KiB item documents in 100 queues,
// 10% of them with state: done (the same documents RawGrep scans).
func benchStore(b *testing.B, n int) (*docstore.Store, int) {
	b.Helper()
	s, _, err := docstore.Init(filepath.Join(storetest.BenchDir(b), ".tavern"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	want := 0
	for q := range 100 {
		if err := os.MkdirAll(filepath.Join(s.Root(), "queues", fmt.Sprintf("q%02d", q), "pending"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		state := "pending"
		if i%10 == 0 {
			state, want = "done", want+1
		}
		p := filepath.Join(s.Root(), "queues", fmt.Sprintf("q%02d", i%100), "pending", fmt.Sprintf("%06d.md", i))
		if err := os.WriteFile(p, grepDoc(state), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync()
	return s, want
}

func lsWhere(b *testing.B, s *docstore.Store, cache bool, want int) {
	where, err := docstore.ParseWhere("state=done")
	if err != nil {
		b.Fatal(err)
	}
	// Scoped to the kind, as `tavern ls items` opens it.
	p, err := watcher.Open(s, watcher.Options{Cache: cache, Kinds: []string{"items"}})
	if err != nil {
		b.Fatal(err)
	}
	es, err := p.Query(watcher.Query{Kind: "items", Where: []docstore.Cond{where}})
	if err != nil {
		b.Fatal(err)
	}
	p.Close()
	if len(es) != want {
		b.Fatalf("ls --where state=done: %d documents, want %d", len(es), want)
	}
}

// BenchmarkScan: `ls --where` with no index cache: every document read,
// hashed and parsed (in parallel). Metric: files/s.
func BenchmarkScan(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			s, want := benchStore(b, n)
			for b.Loop() {
				lsWhere(b, s, false, want)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// BenchmarkQueryIndexed: the same `ls --where` answered from a valid index
// cache (.tavern/.index): only stat calls touch the documents. Metric:
// files/s.
func BenchmarkQueryIndexed(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			s, want := benchStore(b, n)
			lsWhere(b, s, true, want) // builds the cache
			// Entries read within racyWindow of their mtime are re-read
			// once more; one more run makes the cache settle.
			time.Sleep(2 * time.Second) // watcher racyWindow
			lsWhere(b, s, true, want)
			b.ResetTimer()
			for b.Loop() {
				lsWhere(b, s, true, want)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// BenchmarkQueryIndexedAgents: `ls agents --where state=working` from a
// valid index cache in a store of N items and 100 agents: a kind with few
// documents next to one with many. Only the agents are stat'ed and only
// their cache section is read. Metric: queries/s.
func BenchmarkQueryIndexedAgents(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			s, _ := benchStore(b, n)
			for i := range 100 {
				state := []string{"idle", "working"}[i%2]
				doc := fmt.Sprintf("---\nschema_version: 1\nname: a%03d\nstate: %s\n---\n", i, state)
				if err := os.WriteFile(filepath.Join(s.Root(), "agents", fmt.Sprintf("a%03d.md", i)), []byte(doc), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			where, err := docstore.ParseWhere("state=working")
			if err != nil {
				b.Fatal(err)
			}
			ls := func() {
				p, err := watcher.Open(s, watcher.Options{Cache: true, Kinds: []string{"agents"}})
				if err != nil {
					b.Fatal(err)
				}
				es, err := p.Query(watcher.Query{Kind: "agents", Where: []docstore.Cond{where}})
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
				if len(es) != 50 {
					b.Fatalf("ls agents --where state=working: %d, want 50", len(es))
				}
			}
			ls()
			time.Sleep(2 * time.Second) // watcher racyWindow
			ls()
			b.ResetTimer()
			for b.Loop() {
				ls()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// BenchmarkSync: one Sync round trip on an idle watched tree.
func BenchmarkSync(b *testing.B) {
	w, err := watcher.WatchFS(storetest.BenchDir(b), watcher.FSOptions{Reconcile: -1, Poll: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		if err := w.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRescan: a full reconcile (FSWatcher.Rescan) of a watched
// directory of N unchanged documents, as the watching processes run one
// every reconcile period. Nothing changed, so nothing is read: the cost
// is listing and lstat'ing, and the garbage it leaves (B/op, allocs/op)
// is what a long-running process's resident size peaks with.
func BenchmarkRescan(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			root := storetest.BenchDir(b)
			dir := filepath.Join(root, "agents")
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			doc := grepDoc("idle")
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("agent-%06d.md", i)), doc, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			// Read once past the racy window, so the rescans only lstat.
			time.Sleep(2 * time.Second) // watcher racyWindow
			w, err := watcher.WatchFS(root, watcher.FSOptions{Reconcile: -1, Poll: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.Rescan(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := w.Rescan(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}
