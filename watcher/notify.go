package watcher

// notifier is an FSWatcher's event source: a kernel notification
// interface watching directories (not recursively).
type notifier interface {
	add(dir string) error // watch the directory at this absolute path
	remove(dir string)
	pending() bool // events are queued, not yet delivered
	// drain delivers every event queued when it is called before it
	// returns (events being delivered by the reader included), so
	// whatever happened before the call is known after it. Only needed
	// with closeInfo: a read must be checked against the writes that
	// raced it.
	drain()
	// closeInfo reports whether the backend tells when a writer closes a
	// file (evCloseWrite) and a file created in place (evCreate) from one
	// renamed into place (evMovedIn). Without it a write is read after
	// the debounce, whether or not its writer is done.
	closeInfo() bool
	close() error
}

// evOp says what happened to a path; several may be set at once.
type evOp uint16

const (
	evCreate     evOp = 1 << iota // created in place (its creator has it open)
	evMovedIn                     // renamed into place (complete)
	evWrite                       // written
	evCloseWrite                  // a writer closed it
	evRemove                      // unlinked (or the watched directory itself)
	evMovedOut                    // renamed away (or the watched directory itself)
	evAttrib                      // metadata changed (chmod, touch, link count)
	evDir                         // the path is a directory
)

// rawEvent is one event from a notifier.
type rawEvent struct {
	path   string // absolute
	op     evOp
	cookie uint32 // pairs an evMovedOut with its evMovedIn (0: none)
}
