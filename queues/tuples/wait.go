package tuples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// dirWatch wakes a blocked Rd/In/Acquire when a document may have appeared
// in one directory.
//
// TODO(watcher): this is the stand-in for watcher.WaitFor(ctx, kind,
// predicate), which is not on the watcher branch yet. It watches a single,
// flat directory (tuples/<type>/), which is all a tuple wait needs: the
// watch is added before the caller's first scan, so nothing written after
// that scan is missed, and every wake-up is only a hint to re-scan.
type dirWatch struct {
	w *fsnotify.Watcher // nil: inotify unavailable, fall back to polling
}

// pollFallback is the re-scan interval when fsnotify cannot be used (out
// of inotify watches or instances).
const pollFallback = 200 * time.Millisecond

func (sp *Space) watchDir(rel string) (*dirWatch, error) {
	abs, err := sp.store.Abs(rel)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return &dirWatch{}, nil
	}
	if err := w.Add(abs); err != nil {
		w.Close()
		return &dirWatch{}, nil
	}
	return &dirWatch{w: w}, nil
}

// Wait returns when a .md file may have been created or rewritten in the
// directory, when max has passed (the safety net), or with ctx's error.
func (dw *dirWatch) Wait(ctx context.Context, max time.Duration) error {
	if dw.w == nil {
		max = min(max, pollFallback)
	}
	t := time.NewTimer(max)
	defer t.Stop()
	var events chan fsnotify.Event
	var errs chan error
	if dw.w != nil {
		events, errs = dw.w.Events, dw.w.Errors
	}
	for {
		select {
		case ev := <-events:
			if relevant(ev) {
				dw.drain()
				return nil
			}
		case <-errs:
			// An overflow or a read error: events were lost, re-scan.
			return nil
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// relevant keeps the events that can make a new match visible: a document
// created or renamed into the directory (engine writes and editors' safe
// saves) or written in place. Removals and renames away cannot.
func relevant(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".md") {
		return false
	}
	return ev.Op&(fsnotify.Create|fsnotify.Write) != 0
}

// drain discards events already queued: one re-scan covers them all.
func (dw *dirWatch) drain() {
	for {
		select {
		case <-dw.w.Events:
		default:
			return
		}
	}
}

func (dw *dirWatch) Close() {
	if dw.w != nil {
		dw.w.Close()
	}
}
