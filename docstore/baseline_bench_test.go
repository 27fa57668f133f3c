package docstore_test

// Same-run baselines for the docstore benchmarks: what the disk and yaml.v3
// can do with no Tavern code in the way. `make bench` (cmd/benchreport)
// prints each Tavern figure as a ratio of these, so the names and metric
// units here are part of the pairing table in cmd/benchreport/pairs.go.
//
// Trees live on the work disk, not in TMPDIR (which may be tmpfs, where
// fsync is free): see storetest.BenchDir. Trees are never deleted and recreated
// between repetitions, because a mass delete slows creates in the same
// filesystem for about a minute (ext4 skips recently freed inodes);
// `make bench` removes .bench/tmp once at the end of the run.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/docstore/storetest"
)

// benchDoc is a 1 KiB item document: ~270 B frontmatter with 11 fields
// (two timestamps, two lists), the shape the baselines were first
// measured with.
var benchDoc = func() []byte {
	fm := `---
schema_version: 1
id: 0193a1f2-7c4e-7b1a-9d2e-3f4a5b6c7d8e
queue: build
state: pending
priority: 5
attempt: 0
created: 2026-11-21T23:28:18Z
lease_until: 2026-11-21T23:33:18Z
tags: [go, docstore, bench]
depends_on:
  - 0193a1f2-7c4e-7b1a-9d2e-000000000001
owner: alice
---
`
	var b strings.Builder
	b.WriteString(fm)
	for b.Len() < 1024-1 {
		b.WriteString("Body text of the work item, plain markdown. ")
	}
	s := b.String()[:1024-1] + "\n"
	return []byte(s)
}()

// BenchmarkRawDurableWrite is the ceiling for one durable document replace
// (store.Update / WriteFile): create a temp file in a staging dir on the same
// filesystem, write 1 KiB, fsync, rename over the existing document, fsync
// the directory. One writer. ops/s = writes/s.
func BenchmarkRawDurableWrite(b *testing.B) {
	root := storetest.BenchDir(b)
	tmp := filepath.Join(root, ".tmp")
	docs := filepath.Join(root, "items")
	mkdirs(b, tmp, docs)
	target := filepath.Join(docs, "doc.md")
	if err := os.WriteFile(target, benchDoc, 0o644); err != nil {
		b.Fatal(err)
	}
	dirf, err := os.Open(docs)
	if err != nil {
		b.Fatal(err)
	}
	defer dirf.Close()
	syscall.Sync() // setup writeback must not be charged to the timed loop

	b.SetBytes(int64(len(benchDoc)))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tp := filepath.Join(tmp, fmt.Sprintf("doc.md.%d", i))
		f, err := os.OpenFile(tp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(benchDoc); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tp, target); err != nil {
			b.Fatal(err)
		}
		if err := dirf.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	storetest.ReportOpsPerSec(b, b.N)
}

// BenchmarkRawDurableRename is the ceiling for a durable claim: rename
// pending/X → claimed/X, then fsync both directories. Files are pre-created
// in fresh directories and synced before the timer starts. Workers take
// disjoint items from a shared counter, so there are no lost races: this is
// the disk's rate, not a contended claim protocol. ops/s = claims/s.
func BenchmarkRawDurableRename(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			root := storetest.BenchDir(b)
			pending := filepath.Join(root, "pending")
			claimed := filepath.Join(root, "claimed")
			mkdirs(b, pending, claimed)
			n := b.N
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("%09d.md", i)
				if err := os.WriteFile(filepath.Join(pending, names[i]), benchDoc, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			syscall.Sync()

			var next atomic.Int64
			var claimedCount atomic.Int64
			var wg sync.WaitGroup
			errc := make(chan error, workers)
			b.ResetTimer()
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Each worker has its own dir fds, as separate processes would.
					pd, err := os.Open(pending)
					if err != nil {
						errc <- err
						return
					}
					defer pd.Close()
					cd, err := os.Open(claimed)
					if err != nil {
						errc <- err
						return
					}
					defer cd.Close()
					for {
						i := int(next.Add(1)) - 1
						if i >= n {
							return
						}
						name := names[i]
						if err := os.Rename(filepath.Join(pending, name), filepath.Join(claimed, name)); err != nil {
							errc <- err
							return
						}
						if err := cd.Sync(); err != nil {
							errc <- err
							return
						}
						if err := pd.Sync(); err != nil {
							errc <- err
							return
						}
						claimedCount.Add(1)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errc)
			for err := range errc {
				b.Fatal(err)
			}
			if got := claimedCount.Load(); got != int64(n) {
				b.Fatalf("claimed %d items, want %d", got, n)
			}
			left, err := os.ReadDir(pending)
			if err != nil {
				b.Fatal(err)
			}
			if len(left) != 0 {
				b.Fatalf("%d items left in pending/, want 0", len(left))
			}
			storetest.ReportOpsPerSec(b, n)
		})
	}
}

// BenchmarkRawDurableWritePair is the physical floor of a durable
// take+done (issue 21): two content changes, each made durable before its
// name appears, as two raw writes: write a new copy in .tmp/, fsync it,
// rename it to claimed/X, fsync claimed/; then the same into done/X, fsync
// done/. No engine, no locks, no journal; workers take disjoint items.
// ops/s = pairs/s.
func BenchmarkRawDurableWritePair(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			root := storetest.BenchDir(b)
			tmp := filepath.Join(root, ".tmp")
			claimed := filepath.Join(root, "claimed")
			done := filepath.Join(root, "done")
			mkdirs(b, tmp, claimed, done)
			syscall.Sync()
			write := func(dir *os.File, dirPath, name string, i int) error {
				tp := filepath.Join(tmp, fmt.Sprintf("%s.%d", name, i))
				f, err := os.OpenFile(tp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
				if err != nil {
					return err
				}
				if _, err := f.Write(benchDoc); err != nil {
					f.Close()
					return err
				}
				if err := f.Sync(); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				if err := os.Rename(tp, filepath.Join(dirPath, name)); err != nil {
					return err
				}
				return dir.Sync()
			}
			writePairs(b, workers, func() (func(name string, i int) error, func(), error) {
				cd, err := os.Open(claimed)
				if err != nil {
					return nil, nil, err
				}
				dd, err := os.Open(done)
				if err != nil {
					cd.Close()
					return nil, nil, err
				}
				pair := func(name string, i int) error {
					if err := write(cd, claimed, name, 2*i); err != nil {
						return err
					}
					return write(dd, done, name, 2*i+1)
				}
				return pair, func() { cd.Close(); dd.Close() }, nil
			})
		})
	}
}

// writePairs runs b.N write pairs (the item names 000000000.md...) on
// workers goroutines, each with the pair function and cleanup newWorker
// gives it, timed from the first pair to the last. ops/s = pairs/s.
func writePairs(b *testing.B, workers int, newWorker func() (pair func(name string, i int) error, cleanup func(), err error)) {
	b.Helper()
	n := b.N
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	b.ResetTimer()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pair, cleanup, err := newWorker()
			if err != nil {
				errc <- err
				return
			}
			defer cleanup()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := pair(fmt.Sprintf("%09d.md", i), i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	storetest.ReportOpsPerSec(b, n)
}

// BenchmarkRawParse is the ceiling for reading a document: split the
// frontmatter off a 1 KiB document and decode it with yaml.v3 into a node
// tree (what a round-trip-preserving parser must build). One goroutine.
// ops/s = documents/s; MB/s counts the whole document.
func BenchmarkRawParse(b *testing.B) {
	delim := []byte("---\n")
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if !bytes.HasPrefix(benchDoc, delim) {
			b.Fatal("no opening fence")
		}
		rest := benchDoc[len(delim):]
		end := bytes.Index(rest, []byte("\n---\n"))
		if end < 0 {
			b.Fatal("no closing fence")
		}
		var n yaml.Node
		if err := yaml.Unmarshal(rest[:end+1], &n); err != nil {
			b.Fatal(err)
		}
		if n.Kind != yaml.DocumentNode || len(n.Content) != 1 || len(n.Content[0].Content) != 2*11 {
			b.Fatalf("decoded %d top-level nodes, want one mapping of 11 fields", len(n.Content))
		}
	}
	storetest.ReportOpsPerSec(b, b.N)
}

func mkdirs(tb testing.TB, dirs ...string) {
	tb.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
}
