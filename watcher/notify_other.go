//go:build !linux

package watcher

import (
	"errors"

	"github.com/fsnotify/fsnotify"
)

// fsnotifier adapts fsnotify where inotify is not available. fsnotify
// does not say when a writer closes a file, nor tell a file created in
// place from one renamed into place (closeInfo false).
type fsnotifier struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

func newNotifier(onEvent func(rawEvent), onError func(error)) (notifier, error) {
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, err
	}
	n := &fsnotifier{w: w, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				var op evOp
				if ev.Has(fsnotify.Create) {
					op |= evMovedIn // read at once, as if complete
				}
				if ev.Has(fsnotify.Write) {
					op |= evWrite
				}
				if ev.Has(fsnotify.Remove) {
					op |= evRemove
				}
				if ev.Has(fsnotify.Rename) {
					op |= evMovedOut
				}
				if ev.Has(fsnotify.Chmod) {
					op |= evAttrib
				}
				onEvent(rawEvent{path: ev.Name, op: op})
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					err = ErrOverflow
				}
				onError(err)
			}
		}
	}()
	return n, nil
}

func (n *fsnotifier) add(dir string) error { return n.w.Add(dir) }
func (n *fsnotifier) remove(dir string)    { _ = n.w.Remove(dir) }
func (n *fsnotifier) pending() bool        { return len(n.w.Events) > 0 }
func (n *fsnotifier) closeInfo() bool      { return false }

// drain: without close information no read is ever held back for a
// writer, so there is nothing to catch up with.
func (n *fsnotifier) drain() {}
func (n *fsnotifier) close() error {
	err := n.w.Close()
	<-n.done
	return err
}
