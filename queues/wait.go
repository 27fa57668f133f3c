package queues

import (
	"context"
	"time"

	"github.com/fsnotify/fsnotify"
)

// dirWaiter wakes a blocked Take when something changes in the directories
// it watches. It uses fsnotify directly rather than a watcher Projection:
// a Take needs a few flat directories, not a scan of the whole store.
type dirWaiter struct {
	w       *fsnotify.Watcher
	recheck time.Duration // Options.Recheck
}

func newDirWaiter(dirs []string, recheck time.Duration) (*dirWaiter, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	return &dirWaiter{w: w, recheck: recheck}, nil
}

// wait blocks until an event (or a watch error, which means "rescan"),
// until wake (if set), or the recheck interval passes. It returns false when ctx
// is done.
func (d *dirWaiter) wait(ctx context.Context, wake time.Time) bool {
	timeout := d.recheck
	if !wake.IsZero() {
		if until := time.Until(wake); until < timeout {
			timeout = max(until, time.Millisecond)
		}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-d.w.Events:
	case <-d.w.Errors:
	case <-t.C:
	}
	// Coalesce a burst: whatever else is queued is covered by the rescan.
	for {
		select {
		case <-d.w.Events:
		case <-d.w.Errors:
		default:
			return true
		}
	}
}

func (d *dirWaiter) Close() {
	if d != nil {
		d.w.Close()
	}
}
