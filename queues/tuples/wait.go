package tuples

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/tavernhq/tavern/watcher"
)

// dirWatch wakes a blocked Rd/In/Acquire when a document may have appeared
// in one directory (tuples/<type>/): a watcher.DirWatch, which polls (and
// says so in the journal) when inotify cannot be had. The watch is added
// before the caller's first scan, so nothing written after that scan is
// missed, and every wake-up is only a hint to re-scan.
type dirWatch struct {
	w *watcher.DirWatch
}

func (sp *Space) watchDir(rel string) (*dirWatch, error) {
	abs, err := sp.store.Abs(rel)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	w := watcher.WatchDirs([]string{abs}, watcher.DirWatchOptions{
		Poll:    200 * time.Millisecond,
		Appear:  true, // removals and renames away cannot make a new match
		Name:    func(n string) bool { return !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".md") },
		Journal: sp.journal, Root: sp.store.Root(),
	})
	return &dirWatch{w: w}, nil
}

// Wait returns when a .md file may have been created or rewritten in the
// directory, when max has passed (the safety net), or with ctx's error.
func (dw *dirWatch) Wait(ctx context.Context, max time.Duration) error {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-dw.w.C:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (dw *dirWatch) Close() { dw.w.Close() }
