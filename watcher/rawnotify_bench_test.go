package watcher_test

// Same-run baselines for the watcher benchmarks: raw fsnotify latency and a
// plain `grep -rl` scan, with no Tavern code in the way. `make bench`
// (cmd/benchreport) prints the watcher's figures as ratios of these, so the
// benchmark names and the metric units ("p50-µs", "p99-µs", "files/s") are
// part of the pairing table in cmd/benchreport/pairs.go.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tavernhq/tavern/docstore/storetest"
)

// BenchmarkRawNotify measures write-to-event latency of a bare fsnotify
// watcher on one directory, from just before the syscall to the event
// reaching the consumer goroutine (the honest upper bound: about half of
// the events arrive before the writer could read its clock after the call).
//
//   - write: write(2) of one byte to a file already in the watched dir.
//   - rename: rename(2) of a pre-created file from an unwatched sibling
//     into the watched dir (how a durable write lands; pairs with Tavern's
//     write-to-event figure).
//
// The next operation starts only after the previous event arrived, so the
// figures are latency, not throughput. Metrics: p50-µs, p99-µs.
func BenchmarkRawNotify(b *testing.B) {
	b.Run("write", func(b *testing.B) {
		dir := storetest.BenchDir(b)
		path := filepath.Join(dir, "doc.md")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		w := newWatcher(b, dir)
		lat := make([]time.Duration, 0, 1024)
		one := []byte("x")
		for b.Loop() {
			t0 := time.Now()
			if _, err := f.Write(one); err != nil {
				b.Fatal(err)
			}
			waitEvent(b, w, path, fsnotify.Write)
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat)
	})
	b.Run("rename", func(b *testing.B) {
		root := storetest.BenchDir(b)
		src := filepath.Join(root, "src")
		dst := filepath.Join(root, "dst")
		for _, d := range []string{src, dst} {
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		doc := bytes.Repeat([]byte("x"), 1024)
		for i := 0; i < b.N; i++ {
			if err := os.WriteFile(filepath.Join(src, fmt.Sprint(i)), doc, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		syscall.Sync()
		w := newWatcher(b, dst)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			name := fmt.Sprint(i)
			to := filepath.Join(dst, name)
			t0 := time.Now()
			if err := os.Rename(filepath.Join(src, name), to); err != nil {
				b.Fatal(err)
			}
			waitEvent(b, w, to, fsnotify.Create)
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		reportLatency(b, lat)
	})
}

func newWatcher(b *testing.B, dir string) *fsnotify.Watcher {
	b.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	if err := w.Add(dir); err != nil {
		b.Fatal(err)
	}
	return w
}

// waitEvent blocks until an event with op for path arrives. Other events
// are skipped; an overflow or a 10 s silence fails the benchmark.
func waitEvent(b *testing.B, w *fsnotify.Watcher, path string, op fsnotify.Op) {
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				b.Fatal("watcher closed")
			}
			if ev.Name == path && ev.Has(op) {
				return
			}
		case err := <-w.Errors:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				b.Fatal("inotify queue overflowed: latency figures would be meaningless")
			}
			b.Fatal(err)
		case <-timeout.C:
			b.Fatalf("no %v event for %s within 10s", op, path)
		}
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkRawGrep is the scan-speed baseline: `grep -rl` over a tree of
// 10,000 1 KiB documents in 100 directories, 10% of which match. The tree
// is built once per run and is warm in the page cache (a cold figure needs
// drop_caches, i.e. root, and would disturb other processes). Each
// repetition checks that grep found exactly the matching files.
// Metric: files/s (files in the tree / seconds per scan).
func BenchmarkRawGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("grep not found")
	}
	const dirs, perDir, files = 100, 100, 100 * 100
	b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
		root := storetest.BenchDir(b)
		want := 0
		for d := 0; d < dirs; d++ {
			sub := filepath.Join(root, "items", fmt.Sprintf("d%03d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < perDir; i++ {
				state := "pending"
				if (d*perDir+i)%10 == 0 {
					state, want = "done", want+1
				}
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("%03d.md", i)), grepDoc(state), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		syscall.Sync()
		for b.Loop() {
			out, err := exec.Command(grep, "-rl", "state: done", root).Output()
			if err != nil {
				b.Fatal(err)
			}
			if got := bytes.Count(out, []byte("\n")); got != want {
				b.Fatalf("grep listed %d files, want %d", got, want)
			}
		}
		b.ReportMetric(float64(files)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
	})
}

// grepDoc is a 1 KiB item document whose state field is state.
func grepDoc(state string) []byte {
	var s strings.Builder
	fmt.Fprintf(&s, "---\nschema_version: 1\nqueue: build\nstate: %s\npriority: 5\nattempt: 0\n"+
		"created: 2026-11-21T23:28:18Z\ntags: [go, bench]\nowner: alice\n---\n", state)
	for s.Len() < 1023 {
		s.WriteString("Body text of the work item, plain markdown. ")
	}
	return []byte(s.String()[:1023] + "\n")
}
