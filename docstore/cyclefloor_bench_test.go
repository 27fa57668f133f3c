package docstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/docstore/storetest"
)

// BenchmarkRawQueueCycle is the floor of the queue protocol itself
// (issue 21, goal 4): the system calls a take+done needs for the
// guarantees DESIGN.md gives, made directly, with no Tavern code. Where
// BenchmarkRawDurableWritePair is two durable writes of new files, this
// is what the protocol must do around them, as "The cycle today" in
// queues/PERFORMANCE.md describes it:
//
//   - the item's lock: an flock on one of 256 stripe files, held from the
//     take to the completion (exactly-once within a machine);
//   - the take: the done/ and dead/ names checked free (a crash may have
//     left a later copy), the pending copy opened and read, the claimed
//     copy written over a spare file in .tmp/ (pwrite, ftruncate,
//     fdatasync when durable), renamed into claimed/ without replacing
//     (renameat2 RENAME_NOREPLACE), claimed/ fsynced when durable, the
//     pending copy retired into .tmp/ (a rename), a journal line appended
//     under the journal's flock;
//   - the completion: the claimed copy read back, the done copy written
//     the same way into done/, the claimed copy retired, a journal line;
//   - spares: a retired file becomes reusable after an fsync of the
//     directory it left, made once 16 wait (the engine does it in the
//     background, shared by all writers).
//
// What it leaves out is the engine's own work: parsing and rendering
// YAML, the pending index and its inotify drain, the queue's config and
// rules, the coordinator, observers. Directories are as big as
// BenchmarkQueueTakeDone's (b.N items in pending/ at the start, done/
// growing to b.N), and the cycles are the same shape, so the engine's
// figure over this one is the engine's overhead, and this one over
// SQLite's is the most a take+done made of files can do here.
// ops/s = cycles/s.
func BenchmarkRawQueueCycle(b *testing.B) {
	for _, mode := range []string{"durable", "relaxed"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode, workers), func(b *testing.B) {
				rawQueueCycle(b, workers, mode == "durable", false)
			})
		}
	}
}

// BenchmarkRawQueueCycleGuarded is BenchmarkRawQueueCycle plus the
// eleven system calls a cycle of the engine makes to keep promises
// DESIGN.md gives about what people and crashes may do to the files
// (queues/PERFORMANCE.md, round 12), still with no Tavern code:
//
//   - the queue document's stat before a take (a hand edit may have
//     paused or removed the queue);
//   - the item lock's link count (fstat) at the take and at the
//     completion, which drops and retakes the item lock (the claim's
//     liveness is its holder's lock, not the item's): a lock file
//     replaced under the process must not be trusted;
//   - an lstat before each read, and an fstat after the open (a FIFO or
//     device node put where a document was is never opened or read
//     past its size);
//   - an fstat of each spare (its size and mode), which saves the
//     floor's ftruncate when the new copy is not shorter;
//   - the journal day file's fstat under its lock, at each line (a day
//     file replaced under the process is reopened).
//
// So it is the floor of the protocol as DESIGN.md specifies it; the
// engine over this one is the cost of its YAML, index and rules alone.
func BenchmarkRawQueueCycleGuarded(b *testing.B) {
	for _, mode := range []string{"durable", "relaxed"} {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode, workers), func(b *testing.B) {
				rawQueueCycle(b, workers, mode == "durable", true)
			})
		}
	}
}

// BenchmarkRawQueueCycleWork is BenchmarkRawQueueCycleGuarded (durable,
// 8 workers) with a given amount of CPU work per cycle added under the
// item lock, half in each state change where the engine parses, edits,
// validates and renders the item: how cycles/s fall as an
// implementation's own CPU per cycle grows, to read off how little of it
// the engine may spend for a ratio it is asked for. The amounts, in
// microseconds, come from TAVERN_BENCH_WORK_US (e.g. "0,50,100,150");
// without it the benchmark is skipped, so `make bench` does not run it.
func BenchmarkRawQueueCycleWork(b *testing.B) {
	list := os.Getenv("TAVERN_BENCH_WORK_US")
	if list == "" {
		b.Skip("TAVERN_BENCH_WORK_US not set")
	}
	perUS := spinCalibrate(b)
	for _, f := range strings.Split(list, ",") {
		us, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || us < 0 {
			b.Fatalf("TAVERN_BENCH_WORK_US: %q is not a number of microseconds", f)
		}
		b.Run(fmt.Sprintf("durable/workers=8/work=%dus", us), func(b *testing.B) {
			rawQueueCycleWork(b, 8, true, true, perUS*us/2)
		})
	}
}

// spinSink keeps the compiler from removing spin's loop.
var spinSink atomic.Uint64

// spin burns CPU: n rounds of a multiply-xor hash.
func spin(n int) {
	h := uint64(14695981039346656037)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	spinSink.Add(h)
}

// spinCalibrate returns spin rounds per microsecond of this process's
// CPU time (getrusage), so the figure holds on a busy machine too.
func spinCalibrate(b *testing.B) int {
	b.Helper()
	const rounds = 20_000_000
	c0 := storetest.CPUNow(b)
	spin(rounds)
	c1 := storetest.CPUNow(b)
	us := (c1.User + c1.Sys - c0.User - c0.Sys).Microseconds()
	if us <= 0 {
		b.Fatal("spin calibration took no CPU time")
	}
	return int(rounds / us)
}

func rawQueueCycle(b *testing.B, workers int, durable, guarded bool) {
	rawQueueCycleWork(b, workers, durable, guarded, 0)
}

func rawQueueCycleWork(b *testing.B, workers int, durable, guarded bool, work int) {
	root := storetest.BenchDir(b)
	tmp := filepath.Join(root, ".tmp")
	locks := filepath.Join(root, ".locks")
	pending := filepath.Join(root, "pending")
	claimed := filepath.Join(root, "claimed")
	done := filepath.Join(root, "done")
	dead := filepath.Join(root, "dead")
	mkdirs(b, tmp, locks, pending, claimed, done, dead)
	queueDoc := filepath.Join(root, "queue.md")
	if err := os.WriteFile(queueDoc, benchDoc, 0o644); err != nil {
		b.Fatal(err)
	}
	n := b.N
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(pending, itemName(i)), benchDoc, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	journal, err := os.OpenFile(filepath.Join(root, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer journal.Close()
	dirFDs := map[string]int{}
	for _, d := range []string{tmp, pending, claimed, done, dead} {
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fd)
		dirFDs[d] = fd
	}
	// Each worker starts with spares of its own, as a warm engine has.
	pools := make([]*rawSpares, workers)
	for w := range pools {
		pools[w] = &rawSpares{tmp: tmp, dirs: dirFDs, prefix: "w" + strconv.Itoa(w) + "."}
		for k := 0; k < 32; k++ {
			name := pools[w].newName()
			if err := os.WriteFile(filepath.Join(tmp, name), benchDoc, 0o644); err != nil {
				b.Fatal(err)
			}
			pools[w].ready = append(pools[w].ready, name)
		}
	}
	claimedDoc := append(append([]byte{}, benchDoc[:4]...), []byte("claimed_by: w0\nclaim_attempt: 1\nlease_until: 2026-11-21T23:38:18Z\n")...)
	claimedDoc = append(claimedDoc, benchDoc[4:]...)
	doneDoc := append(append([]byte{}, benchDoc[:4]...), []byte("claimed_by: w0\nclaim_attempt: 1\nfinished: 2026-11-21T23:38:18Z\nresult: ok\n")...)
	doneDoc = append(doneDoc, benchDoc[4:]...)
	line := []byte(`{"ts":"2026-11-21T23:28:18.123456Z","type":"item.claimed","path":"queues/q/claimed/000000000.md","actor":"w0","rev":"0123456789abcdef"}` + "\n")
	syscall.Sync()

	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	cpu0 := storetest.CPUNow(b)
	b.ResetTimer()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(sp *rawSpares) {
			defer wg.Done()
			stripes := make([]int, 256)
			defer func() {
				for _, fd := range stripes {
					if fd > 0 {
						unix.Close(fd)
					}
				}
			}()
			buf := make([]byte, 4096)
			move := func(from, to, name string, doc []byte) error {
				// Read the copy the state change starts from.
				var st unix.Stat_t
				if guarded {
					if err := unix.Fstatat(dirFDs[from], name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
						return err
					}
				}
				fd, err := unix.Open(filepath.Join(from, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				if guarded {
					if err := unix.Fstat(fd, &st); err != nil {
						unix.Close(fd)
						return err
					}
				}
				_, err = unix.Read(fd, buf)
				unix.Close(fd)
				if err != nil {
					return err
				}
				spin(work) // where the engine parses, edits, validates, renders
				// The new copy, over a spare, durable before its name appears.
				s, err := sp.take()
				if err != nil {
					return err
				}
				fd, err = unix.Open(filepath.Join(tmp, s), unix.O_WRONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return err
				}
				if _, err := unix.Pwrite(fd, doc, 0); err != nil {
					unix.Close(fd)
					return err
				}
				truncate := true
				if guarded {
					if err := unix.Fstat(fd, &st); err != nil {
						unix.Close(fd)
						return err
					}
					truncate = st.Size > int64(len(doc))
				}
				if truncate {
					if err := unix.Ftruncate(fd, int64(len(doc))); err != nil {
						unix.Close(fd)
						return err
					}
				}
				if durable {
					if err := unix.Fdatasync(fd); err != nil {
						unix.Close(fd)
						return err
					}
				}
				unix.Close(fd)
				if err := unix.Renameat2(dirFDs[tmp], s, dirFDs[to], name, unix.RENAME_NOREPLACE); err != nil {
					return err
				}
				if durable {
					if err := unix.Fsync(dirFDs[to]); err != nil {
						return err
					}
				}
				// Retire the old copy: its file becomes a spare.
				old := sp.newName()
				if err := unix.Renameat2(dirFDs[from], name, dirFDs[tmp], old, unix.RENAME_NOREPLACE); err != nil {
					return err
				}
				sp.retired(old, from)
				// The journal line, under the journal's lock.
				if err := unix.Flock(int(journal.Fd()), unix.LOCK_EX); err != nil {
					return err
				}
				if guarded {
					if err := unix.Fstat(int(journal.Fd()), &st); err != nil {
						unix.Flock(int(journal.Fd()), unix.LOCK_UN)
						return err
					}
				}
				_, err = journal.Write(line)
				unix.Flock(int(journal.Fd()), unix.LOCK_UN)
				return err
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				name := itemName(i)
				k := i % len(stripes)
				if stripes[k] == 0 {
					fd, err := unix.Open(filepath.Join(locks, "item."+strconv.Itoa(k)+".lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
					if err != nil {
						errc <- err
						return
					}
					stripes[k] = fd
				}
				var st unix.Stat_t
				if guarded {
					if err := unix.Stat(queueDoc, &st); err != nil {
						errc <- err
						return
					}
				}
				if err := unix.Flock(stripes[k], unix.LOCK_EX); err != nil {
					errc <- err
					return
				}
				if guarded {
					if err := unix.Fstat(stripes[k], &st); err != nil {
						errc <- err
						return
					}
				}
				if unix.Fstatat(dirFDs[done], name, &st, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT ||
					unix.Fstatat(dirFDs[dead], name, &st, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT {
					errc <- fmt.Errorf("%s: already finished", name)
					return
				}
				err := move(pending, claimed, name, claimedDoc)
				if err == nil && guarded {
					// The completion retakes the item lock, as a separate call.
					unix.Flock(stripes[k], unix.LOCK_UN)
					if err = unix.Flock(stripes[k], unix.LOCK_EX); err == nil {
						err = unix.Fstat(stripes[k], &st)
					}
				}
				if err == nil {
					err = move(claimed, done, name, doneDoc)
				}
				unix.Flock(stripes[k], unix.LOCK_UN)
				if err != nil {
					errc <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}(pools[w])
	}
	wg.Wait()
	b.StopTimer()
	storetest.ReportCPU(b, cpu0, n)
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
	if left, err := os.ReadDir(pending); err != nil || len(left) != 0 {
		b.Fatalf("%d items left in pending/ (%v), want 0", len(left), err)
	}
	if got, err := os.ReadDir(done); err != nil || len(got) != n {
		b.Fatalf("%d items in done/ (%v), want %d", len(got), err, n)
	}
	storetest.ReportOpsPerSec(b, n)
}

func itemName(i int) string { return fmt.Sprintf("%09d.md", i) }

// rawSpares is one worker's pool of spare files in .tmp/: ready ones, and
// retired ones waiting for an fsync of the directory they left.
type rawSpares struct {
	tmp    string
	dirs   map[string]int
	prefix string
	seq    int
	ready  []string
	wait   []string
	left   map[string]bool // directories the waiting ones left
}

func (p *rawSpares) newName() string {
	p.seq++
	return p.prefix + strconv.Itoa(p.seq)
}

func (p *rawSpares) retired(name, from string) {
	p.wait = append(p.wait, name)
	if p.left == nil {
		p.left = map[string]bool{}
	}
	p.left[from] = true
}

// take returns a ready spare. Once 16 wait (or none is ready), the
// directories they left are fsynced and they become ready: the rule
// that keeps a crash from bringing an old name back onto new content.
func (p *rawSpares) take() (string, error) {
	if len(p.wait) >= 16 || len(p.ready) == 0 {
		for d := range p.left {
			if err := unix.Fsync(p.dirs[d]); err != nil {
				return "", err
			}
		}
		clear(p.left)
		p.ready = append(p.ready, p.wait...)
		p.wait = p.wait[:0]
	}
	s := p.ready[len(p.ready)-1]
	p.ready = p.ready[:len(p.ready)-1]
	return s, nil
}
