package watcher

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// When inotify cannot be used (the per-user watch or instance limit is
// reached), every long-running watcher of this package (FSWatcher,
// Projection, DirWatch) polls instead, so no change is lost, only
// delayed, and says so: a TypeDegraded event in the store's journal and
// the process's degrade handler (a command prints it on stderr).

var degradeHandler atomic.Pointer[func(error)]

// SetDegradeHandler sets fn to be told of every watch of this process
// that falls back to polling (nil: nobody; the journal still records
// it). fn may be called from any goroutine and must not block.
func SetDegradeHandler(fn func(error)) {
	if fn == nil {
		degradeHandler.Store(nil)
		return
	}
	degradeHandler.Store(&fn)
}

// ReportDegraded records that a watch of the store at root falls back to
// polling because of err: a TypeDegraded event appended through j (or a
// journal opened on root when j is nil), and the degrade handler.
func ReportDegraded(j *journal.Journal, root string, err error) {
	if j == nil && root != "" {
		if jj, oerr := journal.Open(root, journal.Options{}); oerr == nil {
			defer jj.Close()
			j = jj
		}
	}
	if j != nil {
		if _, aerr := j.Append(DegradedEvent(err)); aerr != nil {
			err = errors.Join(err, aerr)
		}
	}
	if fn := degradeHandler.Load(); fn != nil {
		(*fn)(err)
	}
}

// DegradedEvent is the journal event for a watch that polls because it
// could not use inotify (err as given to FSOptions.OnDegrade).
func DegradedEvent(err error) journal.Event {
	e := journal.Event{Type: journal.TypeDegraded, Data: map[string]any{"error": err.Error(), "mode": "poll"}}
	var we *WatchError
	if errors.As(err, &we) && we.Path != "" {
		e.Data["dir"] = we.Path
	}
	return e
}

// notifyError wraps the failure to watch dir in a *WatchError that
// unwraps to ErrWatchLimit (ENOSPC) or ErrNoNotify, and to err.
func notifyError(dir string, err error) error {
	kind := ErrNoNotify
	if errors.Is(err, syscall.ENOSPC) {
		kind = ErrWatchLimit
	}
	return &WatchError{Op: "watch", Path: dir, Err: fmt.Errorf("%w: %w", kind, err)}
}

// DirWatch wakes a waiter when something may have changed in a few
// directories (each watched alone, not recursively): a blocked take, a
// tuple or message wait. Every wake-up is a hint to look again. If
// inotify cannot be used it polls (C is sent to every Poll) and reports
// the fallback (ReportDegraded).
type DirWatch struct {
	// C receives when something may have changed (wake-ups coalesce).
	C    <-chan struct{}
	c    chan struct{}
	nt   notifier
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// DirWatchOptions configure WatchDirs.
type DirWatchOptions struct {
	// Poll is the interval when polling (default 250ms).
	Poll time.Duration
	// Appear: only a file created, renamed in or written wakes (what can
	// make a new match visible); otherwise any change does.
	Appear bool
	// Name, if set, filters file names that wake (e.g. documents only).
	Name func(name string) bool
	// Journal, or a journal on Root when nil, records a fallback.
	Journal *journal.Journal
	Root    string
}

// WatchDirs starts watching dirs (absolute paths). It never fails: what
// cannot be watched is polled.
func WatchDirs(dirs []string, opt DirWatchOptions) *DirWatch {
	if opt.Poll <= 0 {
		opt.Poll = 250 * time.Millisecond
	}
	c := make(chan struct{}, 1)
	d := &DirWatch{C: c, c: c, stop: make(chan struct{})}
	wake := func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	var fail error
	nt, err := newNotifier(func(ev rawEvent) {
		if opt.Appear && ev.op&(evCreate|evMovedIn|evWrite|evCloseWrite) == 0 {
			return
		}
		if opt.Name != nil && !opt.Name(filepath.Base(ev.path)) {
			return
		}
		wake()
	}, func(error) { wake() }) // overflow or a read error: look again
	if err != nil {
		fail = notifyError(strings.Join(dirs, ","), err)
	} else {
		for _, dir := range dirs {
			if err := nt.add(dir); err != nil {
				fail = notifyError(dir, err)
				break
			}
		}
		if fail != nil {
			nt.close()
		} else {
			d.nt = nt
		}
	}
	if fail != nil {
		ReportDegraded(opt.Journal, opt.Root, fail)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			t := time.NewTicker(opt.Poll)
			defer t.Stop()
			for {
				select {
				case <-d.stop:
					return
				case <-t.C:
					wake()
				}
			}
		}()
	}
	return d
}

// Polling reports whether d polls (inotify could not be used).
func (d *DirWatch) Polling() bool { return d.nt == nil }

// Close stops watching.
func (d *DirWatch) Close() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		close(d.stop)
		if d.nt != nil {
			d.nt.close()
		}
		d.wg.Wait()
	})
}
