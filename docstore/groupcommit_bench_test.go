package docstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/docstore/storetest"
)

// groupSync makes every write made before a call to wait durable, with a
// syncfs(2) shared by the callers that wait at the same time: a caller
// waits for a syncfs that started after it called (the pattern of
// docstore's directory syncer).
type groupSync struct {
	fd        int
	mu        sync.Mutex
	cond      *sync.Cond
	started   uint64
	completed uint64
	running   bool
	err       error
	calls     atomic.Int64
}

func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	target := g.started + 1
	for g.completed < target {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := unix.Syncfs(g.fd)
		g.calls.Add(1)
		g.mu.Lock()
		g.running = false
		g.completed = gen
		if err != nil {
			g.err = err
		}
		g.cond.Broadcast()
	}
	return g.err
}

// BenchmarkRawGroupCommitPair is BenchmarkRawDurableWritePair with the
// workers' flushes shared: each write, then each rename, waits for a
// syncfs(2) that started after it (one flush of the whole filesystem for
// every writer waiting at the time), instead of its own fsync. No
// Tavern code: it measures whether a group commit of the content flushes
// (issue 21, goal 4) could pay on this disk. Eight workers only: one
// worker has nobody to share a flush with.
func BenchmarkRawGroupCommitPair(b *testing.B) {
	for _, workers := range []int{8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			root := storetest.BenchDir(b)
			tmp := filepath.Join(root, ".tmp")
			claimed := filepath.Join(root, "claimed")
			done := filepath.Join(root, "done")
			mkdirs(b, tmp, claimed, done)
			syscall.Sync()
			rf, err := os.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			defer rf.Close()
			g := &groupSync{fd: int(rf.Fd())}
			g.cond = sync.NewCond(&g.mu)
			write := func(dirPath, name string, i int) error {
				tp := filepath.Join(tmp, fmt.Sprintf("%s.%d", name, i))
				if err := os.WriteFile(tp, benchDoc, 0o644); err != nil {
					return err
				}
				if err := g.wait(); err != nil {
					return err
				}
				if err := os.Rename(tp, filepath.Join(dirPath, name)); err != nil {
					return err
				}
				return g.wait()
			}
			writePairs(b, workers, func() (func(name string, i int) error, func(), error) {
				pair := func(name string, i int) error {
					if err := write(claimed, name, 2*i); err != nil {
						return err
					}
					return write(done, name, 2*i+1)
				}
				return pair, func() {}, nil
			})
			b.ReportMetric(float64(g.calls.Load())/float64(b.N), "syncfs/op")
		})
	}
}
