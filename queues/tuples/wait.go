package tuples

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tavernhq/tavern/watcher"
)

// pollFallback is the re-scan interval of a blocked call when inotify
// cannot watch the directory (out of watches or instances).
const pollFallback = 200 * time.Millisecond

// typeDirAbs returns the absolute directory of a tuple type, creating it:
// a waiter watches it before anything was ever written there. Only for
// types the caller is about to write anyway (reservations); a wait for a
// type nobody wrote yet uses awaitTypeDir, which creates nothing.
func (sp *Space) typeDirAbs(typ string) (string, error) {
	abs, err := sp.store.Abs(typeDir(typ))
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o755)
}

// awaitTypeDir returns the absolute directory of a tuple type once it
// exists, watching tuples/ while it does not, until ctx is done (then
// ctx's error). A read or take that waits for a type nobody has written
// yet is legitimate (its producer's first out makes the type), but the
// wait itself must not create it: `tuple ls` would list a type that
// names nothing.
func (sp *Space) awaitTypeDir(ctx context.Context, typ string) (string, error) {
	abs, err := sp.store.Abs(typeDir(typ))
	if err != nil {
		return "", err
	}
	exists := func() (bool, error) {
		_, err := os.Stat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	if ok, err := exists(); ok || err != nil {
		return abs, err
	}
	return abs, watcher.WaitDir(ctx, []string{filepath.Dir(abs)}, sp.waitOptions(func(ev fsnotify.Event) bool {
		return ev.Name == abs
	}, nil, nil), exists)
}

// waitOptions are the watcher.WaitDir options of a blocked call: wake on
// the events relevant says matter, at wake (a lease or expiry running
// out, the next liveness check), and at the latest every Recheck.
func (sp *Space) waitOptions(relevant func(fsnotify.Event) bool, wake func() time.Time, waiting func()) watcher.WaitDirOptions {
	return watcher.WaitDirOptions{
		Recheck:  sp.recheck,
		Poll:     pollFallback,
		Relevant: relevant,
		Wake:     wake,
		Waiting:  waiting,
		// Out of inotify watches: journaled as watch.degraded and told
		// to the process's degrade handler (a warning on stderr).
		Journal: sp.journal,
		Root:    sp.store.Root(),
	}
}

// isDoc reports whether an event is about a document of the directory
// (not a staging name such as .taken or an editor's swap file).
func isDoc(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".md")
}

// appeared keeps the events that can make a new match visible: a document
// created or renamed into the directory (engine writes, a released token
// slot, editors' safe saves) or written in place. Removals and renames
// away cannot, and under contention they are most events.
func appeared(ev fsnotify.Event) bool {
	return isDoc(ev) && ev.Op&(fsnotify.Create|fsnotify.Write) != 0
}

// anyChange keeps every event of a document: a reservation that leaves
// (unreserved, collected) frees paths, one edited by hand may too.
func anyChange(ev fsnotify.Event) bool { return isDoc(ev) }
