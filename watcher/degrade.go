package watcher

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/tavernhq/tavern/watcher/journal"
)

// When inotify cannot be used (the per-user watch or instance limit is
// reached), every long-running watcher of this package (FSWatcher,
// Projection, WaitDir) polls instead, so no change is lost, only
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
