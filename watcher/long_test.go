//go:build long

package watcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// Soak variants of the burst and journal tests (make test-long).

func TestLongBurstPollAndWatch(t *testing.T) {
	for _, mode := range []string{"fsnotify", "poll"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			opt := FSOptions{Reconcile: -1, Poll: -1}
			if mode == "poll" {
				opt.Poll = 200 * time.Millisecond
			}
			var mu sync.Mutex
			seen := map[string]bool{}
			opt.OnChange = func(cs []Change) {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range cs {
					if c.Op == OpCreate {
						seen[c.Path] = true
					}
				}
			}
			w, err := WatchFS(root, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const n = 200000
			var wg sync.WaitGroup
			for p := range 4 {
				wg.Add(1)
				cmd := helper(t, "burst", filepath.Join(root, fmt.Sprintf("p%d", p)), strconv.Itoa(n/4))
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() {
					defer wg.Done()
					if err := cmd.Wait(); err != nil {
						t.Errorf("helper: %v", err)
					}
				}()
			}
			wg.Wait()
			syncW(t, w)
			mu.Lock()
			if len(seen) != n {
				t.Errorf("created: got %d, want %d", len(seen), n)
			}
			mu.Unlock()
			assertStateMatchesDisk(t, w)
		})
	}
}

func TestLongJournal(t *testing.T) {
	const procs, goroutines, each = 8, 4, 12500 // 50000 events a process, appended in groups
	root := t.TempDir()
	for p := range procs {
		c := helper(t, "journal", root, strconv.Itoa(each), strconv.Itoa(p), strconv.Itoa(goroutines))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Wait(); err != nil {
				t.Errorf("worker: %v", err)
			}
		}()
	}
	// Checked after every worker exits (deferred waits run first).
	t.Cleanup(func() {
		total := 0
		last := map[string]uint64{}
		journal.Read(root, journal.Filter{}, func(e journal.Event, err error) bool {
			if err != nil {
				t.Errorf("malformed: %v", err)
				return true
			}
			if e.Seq != last[e.Writer]+1 {
				t.Errorf("%s: seq %d after %d", e.Writer, e.Seq, last[e.Writer])
			}
			last[e.Writer] = e.Seq
			total++
			return true
		})
		if total != procs*goroutines*each {
			t.Errorf("events: got %d, want %d", total, procs*goroutines*each)
		}
	})
	_ = os.Getpid
}
