package watcher

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tavernhq/tavern/watcher/journal"
)

// WaitDirOptions tune WaitDir. The zero value wakes on every event in the
// directories and re-checks every 10 s without one.
type WaitDirOptions struct {
	// Recheck is the safety net: check runs again after this long even
	// without an event (an event inotify cannot see: a write from
	// another machine, a lock dropped by a dying process, a dropped
	// queue). Default 10s.
	Recheck time.Duration
	// Poll is the re-check interval when a directory cannot be watched
	// (no inotify instance or watch left, or the directory is missing).
	// Default 1s; never longer than Recheck.
	Poll time.Duration
	// Relevant, if set, says which events may make check succeed; others
	// are ignored. Nil: every event wakes.
	Relevant func(fsnotify.Event) bool
	// Wake, if set, is asked after each check that did not succeed for a
	// time at which to check again without an event (a lease that runs
	// out). The zero time: none.
	Wake func() time.Time
	// Waiting, if set, runs once, when the first check did not succeed
	// and WaitDir is about to block (to journal a waiter; tests).
	Waiting func()
	// Degraded, if set, is told once why WaitDir polls a directory
	// instead of watching it (e.g. inotify's watch limit, ENOSPC).
	Degraded func(dir string, err error)
	// Journal, or a journal opened on Root when nil, records a poll
	// forced by inotify's limits (out of watches or instances) as a
	// journal.TypeDegraded event, also told to the process's degrade
	// handler (ReportDegraded): a wait never polls silently.
	Journal *journal.Journal
	Root    string
}

// WaitDir runs check until it reports true or fails, running it again
// whenever a file in one of dirs (absolute paths, not recursive) may have
// changed, and at the latest every Recheck. It returns check's error, or
// ctx's error when ctx is done first. The watches are in place before the
// first check, so nothing written after that check is missed; an event is
// only a hint, a burst of them costs one check.
//
// It is the one directory wait of the engine: a blocked queue take, tuple
// rd/in, token acquire, reservation and message receive all use it.
func WaitDir(ctx context.Context, dirs []string, opt WaitDirOptions, check func() (bool, error)) error {
	if opt.Recheck <= 0 {
		opt.Recheck = 10 * time.Second
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	opt.Poll = min(opt.Poll, opt.Recheck)
	interval := opt.Recheck
	// The events of the same inotify layer as FSWatcher (notify.go),
	// handed to Relevant in fsnotify's terms.
	events := make(chan fsnotify.Event, 64)
	errs := make(chan error, 1)
	degrade := func(dir string, err error) {
		interval = opt.Poll
		if opt.Degraded != nil {
			opt.Degraded(dir, err)
		}
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			ReportDegraded(opt.Journal, opt.Root, notifyError(dir, err))
		}
	}
	nt, err := newNotifier(func(ev rawEvent) {
		select {
		case events <- fsnotifyEvent(ev):
		default: // full: the check that follows covers it
			select {
			case errs <- ErrOverflow:
			default:
			}
		}
	}, func(err error) {
		select {
		case errs <- err:
		default:
		}
	})
	if err != nil {
		degrade("", err)
	} else {
		defer nt.close()
		for _, d := range dirs {
			if err := nt.add(d); err != nil {
				degrade(d, err)
			}
		}
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for first := true; ; first = false {
		ok, err := check()
		if err != nil || ok {
			return err
		}
		if first && opt.Waiting != nil {
			opt.Waiting()
		}
		next := interval
		if opt.Wake != nil {
			if at := opt.Wake(); !at.IsZero() {
				next = min(next, max(time.Until(at), time.Millisecond))
			}
		}
		t.Reset(next)
		if err := wait(ctx, events, errs, t.C, opt.Relevant); err != nil {
			return err
		}
	}
}

// wait blocks until a relevant event, a watcher error (an overflow: events
// were lost, so look), the timer or ctx's end, then drains what else is
// queued: the one check that follows covers it.
func wait(ctx context.Context, events <-chan fsnotify.Event, errs <-chan error, timer <-chan time.Time, relevant func(fsnotify.Event) bool) error {
	for woke := false; !woke; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-events:
			woke = relevant == nil || relevant(ev)
		case <-errs:
			woke = true
		case <-timer:
			woke = true
		}
	}
	for {
		select {
		case <-events:
		case <-errs:
		default:
			return nil
		}
	}
}

// fsnotifyEvent says what a notifier event is in fsnotify's terms.
func fsnotifyEvent(ev rawEvent) fsnotify.Event {
	e := fsnotify.Event{Name: ev.path}
	if ev.op&(evCreate|evMovedIn) != 0 {
		e.Op |= fsnotify.Create
	}
	if ev.op&(evWrite|evCloseWrite) != 0 {
		e.Op |= fsnotify.Write
	}
	if ev.op&evRemove != 0 {
		e.Op |= fsnotify.Remove
	}
	if ev.op&evMovedOut != 0 {
		e.Op |= fsnotify.Rename
	}
	if ev.op&evAttrib != 0 {
		e.Op |= fsnotify.Chmod
	}
	return e
}
