package queues

import (
	"context"
	"time"

	"github.com/tavernhq/tavern/watcher"
)

// dirWaiter wakes a blocked Take when something changes in the
// directories it watches: a watcher.DirWatch (inotify, or polling with a
// warning in the journal when inotify cannot be had), not a Projection:
// a Take needs a few flat directories, not a scan of the whole store.
type dirWaiter struct {
	w       *watcher.DirWatch
	recheck time.Duration // Options.Recheck
}

func (b *Broker) newDirWaiter(dirs []string) *dirWaiter {
	w := watcher.WatchDirs(dirs, watcher.DirWatchOptions{Journal: b.j, Root: b.s.Root()})
	return &dirWaiter{w: w, recheck: b.recheck}
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
	case <-d.w.C:
	case <-t.C:
	}
	return true
}

func (d *dirWaiter) Close() {
	if d != nil {
		d.w.Close()
	}
}
