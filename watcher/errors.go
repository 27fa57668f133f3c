package watcher

import "errors"

// ErrSymlink is returned (inside a *WatchError) when a path under the root
// is a symbolic link. Links are never followed: a link can leave the store
// or form a loop, and the store's invariant is that every document is a
// regular file inside it.
var ErrSymlink = errors.New("symbolic link not followed")

// ErrNotRegular is returned (inside a *WatchError) when a path under the
// root is neither a regular file nor a directory (FIFO, socket, device).
var ErrNotRegular = errors.New("not a regular file or directory")

// ErrClosed is returned by methods called on a closed watcher.
var ErrClosed = errors.New("watcher closed")

// ErrWatchLimit is reported (inside a *WatchError, to FSOptions.OnDegrade
// and as an OpError change) when the kernel refused a directory watch
// because the per-user limit is reached (inotify_add_watch: ENOSPC,
// fs.inotify.max_user_watches). The watcher then polls the whole tree.
var ErrWatchLimit = errors.New("inotify watch limit reached (raise fs.inotify.max_user_watches); polling instead")

// ErrNoNotify is reported like ErrWatchLimit when no notification
// instance could be had at all (inotify_init1: EMFILE,
// fs.inotify.max_user_instances).
var ErrNoNotify = errors.New("file notifications unavailable (raise fs.inotify.max_user_instances); polling instead")

// ErrOverflow is reported when the kernel event queue overflowed (or the
// backend reported any other error) and a full rescan was started to
// reconcile with the disk. It is informational: no change is lost.
var ErrOverflow = errors.New("event queue overflow: full rescan")

// WatchError is the error carried by an OpError change. It names the
// operation that failed and the store-relative path, and unwraps to the
// underlying cause (fs.ErrPermission, ErrSymlink, ...), in the style of
// *fs.PathError.
type WatchError struct {
	Op   string // "read", "readdir", "watch", "lstat", ...
	Path string // slash-separated, relative to the watched root
	Err  error
}

func (e *WatchError) Error() string {
	p := e.Path
	if p == "" {
		p = "."
	}
	return e.Op + " " + p + ": " + e.Err.Error()
}

func (e *WatchError) Unwrap() error { return e.Err }

// ErrOutOfScope is returned by Query and WaitFor for a kind that a
// projection opened with Options.Kinds does not cover.
var ErrOutOfScope = errors.New("kind not covered by this projection")
