package messages

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/watcher"
)

// WaitSafetyInterval is how often WaitChannel re-checks without an event.
// Events come from fsnotify on the channel's message directory; the
// re-check covers what inotify cannot see (writes from other machines on a
// network filesystem, a dropped event queue). It is a safety net, not the
// wake-up path, hence long.
var WaitSafetyInterval = 30 * time.Second

// waitingHook, if set (by tests), runs once a waiter's first check found
// nothing and it is about to block.
var waitingHook func()

// WaitChannel calls check until it reports true, re-checking whenever the
// channel's message directory changes, and returns ctx's error when ctx is
// done first. The watch is in place before the first check, so a message
// written between the check and the wait is not missed (watcher.WaitDir;
// without inotify it polls every second).
//
// The channel must exist (CheckChannel): a wait on a typo fails at once
// and creates nothing. Its message directory is made so there is
// something to watch; the direct channel of an agent that has never had
// a message gets its channel document first, as its first message would
// give it, so no message directory is ever left without one.
func WaitChannel(ctx context.Context, s *docstore.Store, channel string, check func() (bool, error)) error {
	return waitChannel(ctx, s, channel, "", check)
}

// waitChannel is WaitChannel that also wakes when the document bookmark
// (a bookmark path, "" for none) changes: a sync marks a message late
// there (MarkLate) after writing its chunk, and only then is it unread.
func waitChannel(ctx context.Context, s *docstore.Store, channel, bookmark string, check func() (bool, error)) error {
	if err := CheckChannel(s, channel); err != nil {
		return err
	}
	if _, err := ensureChannel(s, channel); err != nil {
		return err
	}
	dir := filepath.Join(s.Root(), "messages", channel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dirs := []string{dir}
	var relevant func(fsnotify.Event) bool
	if bookmark != "" {
		bm := filepath.Join(s.Root(), filepath.FromSlash(bookmark))
		dirs = append(dirs, filepath.Dir(bm))
		relevant = func(e fsnotify.Event) bool { return filepath.Dir(e.Name) == dir || e.Name == bm }
	}
	return watcher.WaitDir(ctx, dirs, watcher.WaitDirOptions{
		Recheck:  WaitSafetyInterval,
		Poll:     time.Second,
		Waiting:  waitingHook,
		Relevant: relevant,
		Root:     s.Root(), // a poll forced by inotify's limits is journaled
	}, check)
}
