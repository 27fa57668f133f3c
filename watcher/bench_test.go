package watcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/tavernhq/tavern/docstore"
)

// Benchmarks report the figures the issue asks for as ratios in one run:
//
//	go test -run '^$' -bench . -benchtime 1x ./watcher/
//
// TAVERN_BENCH_DOCS sets the store size for the scan benchmarks (default
// 100000; building it takes ~10 s once per run).

// BenchmarkWriteToEventLatency: time from the start of a write to the
// watcher's logical change, against the raw fsnotify event for the same
// write. Each write is a durable-style rename into place (how the engine
// writes), into a watched directory.
func BenchmarkWriteToEventLatency(b *testing.B) {
	const samples = 2000
	measure := func(b *testing.B, start func(dir string, got chan<- string) func()) []time.Duration {
		dir := b.TempDir()
		got := make(chan string, 16)
		stop := start(dir, got)
		defer stop()
		tmp := filepath.Join(dir, ".tmp")
		os.MkdirAll(tmp, 0o755)
		var lat []time.Duration
		for i := range samples {
			name := fmt.Sprintf("f%06d.md", i)
			t0 := time.Now()
			os.WriteFile(filepath.Join(tmp, name), []byte("---\na: 1\n---\n"), 0o644)
			os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name))
			for {
				select {
				case n := <-got:
					if filepath.Base(n) != name {
						continue
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no event")
				}
				break
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return lat
	}
	for range b.N {
		raw := measure(b, func(dir string, got chan<- string) func() {
			w, err := fsnotify.NewWatcher()
			if err != nil {
				b.Fatal(err)
			}
			w.Add(dir)
			go func() {
				for ev := range w.Events {
					if ev.Has(fsnotify.Create) {
						got <- ev.Name
					}
				}
			}()
			return func() { w.Close() }
		})
		ours := measure(b, func(dir string, got chan<- string) func() {
			w, err := WatchFS(dir, FSOptions{Reconcile: -1, Poll: -1, OnChange: func(cs []Change) {
				for _, c := range cs {
					got <- c.Path
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			return func() { w.Close() }
		})
		p := func(l []time.Duration, q float64) float64 {
			return float64(l[int(q*float64(len(l)-1))].Microseconds())
		}
		b.ReportMetric(p(raw, 0.5), "raw-p50-µs")
		b.ReportMetric(p(raw, 0.99), "raw-p99-µs")
		b.ReportMetric(p(ours, 0.5), "watcher-p50-µs")
		b.ReportMetric(p(ours, 0.99), "watcher-p99-µs")
		b.ReportMetric(p(ours, 0.5)/p(raw, 0.5), "p50-ratio")
		b.ReportMetric(p(ours, 0.99)/p(raw, 0.99), "p99-ratio")
	}
}

var (
	benchStoreOnce sync.Once
	benchStore     *docstore.Store
	benchStoreErr  error
	benchDocs      int
)

// benchTree builds (once per process) a store with N 1 KiB item documents
// in 100 queue directories.
func benchTree(b *testing.B) *docstore.Store { return benchTreeT(b) }

func benchTreeT(b testing.TB) *docstore.Store {
	benchStoreOnce.Do(func() {
		benchDocs = 100000
		if v, err := strconv.Atoi(os.Getenv("TAVERN_BENCH_DOCS")); err == nil && v > 0 {
			benchDocs = v
		}
		dir, err := os.MkdirTemp("", "tavern-bench-")
		if err != nil {
			benchStoreErr = err
			return
		}
		benchCleanup = append(benchCleanup, func() { os.RemoveAll(dir) })
		s, _, err := docstore.Init(filepath.Join(dir, ".tavern"), "bench")
		if err != nil {
			benchStoreErr = err
			return
		}
		pad := strings.Repeat("lorem ipsum ", 100)
		for q := range 100 {
			os.MkdirAll(filepath.Join(s.Root(), "queues", fmt.Sprintf("q%02d", q), "pending"), 0o755)
		}
		for i := range benchDocs {
			q := i % 100
			doc := fmt.Sprintf("---\nid: item-%06d\nqueue: q%02d\npriority: %d\nattempts: 0\ntitle: task number %d\nneedle: %v\n---\n%s\n",
				i, q, i%5, i, i%1000 == 0, pad[:1024-160])
			p := filepath.Join(s.Root(), "queues", fmt.Sprintf("q%02d", q), "pending", fmt.Sprintf("item-%06d.md", i))
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				benchStoreErr = err
				return
			}
		}
		benchStore = s
	})
	if benchStoreErr != nil {
		b.Fatal(benchStoreErr)
	}
	return benchStore
}

var benchCleanup []func()

// BenchmarkScan: a cold projection (no index cache, every document read
// and parsed, in parallel) against `grep -rl` over the same tree, and a
// `ls --where` served warm from the index cache against the cold one.
func BenchmarkScan(b *testing.B) {
	s := benchTree(b)
	where, _ := docstore.ParseWhere("needle=true")
	var grep, cold, warm time.Duration
	for range b.N {
		t0 := time.Now()
		out, err := exec.Command("grep", "-rl", "needle: true", filepath.Join(s.Root(), "queues")).Output()
		if err != nil {
			b.Fatal(err)
		}
		grep += time.Since(t0)
		wantHits := strings.Count(string(out), "\n")

		os.Remove(filepath.Join(s.Root(), CacheFile))
		t0 = time.Now()
		p, err := Open(s, Options{Cache: true})
		if err != nil {
			b.Fatal(err)
		}
		es, _ := p.Query(Query{Kind: "items", Where: []docstore.Cond{where}})
		cold += time.Since(t0)
		p.Close() // saves the cache (already saved by Open)
		if len(es) != wantHits {
			b.Fatalf("cold query: %d hits, grep %d", len(es), wantHits)
		}

		t0 = time.Now()
		p, err = Open(s, Options{Cache: true})
		if err != nil {
			b.Fatal(err)
		}
		es, _ = p.Query(Query{Kind: "items", Where: []docstore.Cond{where}})
		warm += time.Since(t0)
		p.Close()
		if len(es) != wantHits {
			b.Fatalf("warm query: %d hits, grep %d", len(es), wantHits)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(benchDocs), "docs")
	b.ReportMetric(grep.Seconds()/n, "grep-rl-s")
	b.ReportMetric(cold.Seconds()/n, "cold-ls-where-s")
	b.ReportMetric(warm.Seconds()/n, "warm-ls-where-s")
	b.ReportMetric(cold.Seconds()/grep.Seconds(), "cold/grep")
	b.ReportMetric(warm.Seconds()/cold.Seconds(), "warm/cold")
}

// BenchmarkFSWatcherSync: the cost of a Sync round trip on an idle tree.
func BenchmarkFSWatcherSync(b *testing.B) {
	w, err := WatchFS(b.TempDir(), FSOptions{Reconcile: -1, Poll: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for range b.N {
		if err := w.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
