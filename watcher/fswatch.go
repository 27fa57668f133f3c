package watcher

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for FSOptions.
const (
	DefaultReconcile = 30 * time.Second
	DefaultDebounce  = 2 * time.Millisecond
	DefaultPoll      = time.Second
	DefaultSettle    = time.Second

	// racyWindow: a file whose mtime or ctime is this close to (or after)
	// the moment its content was read may have been rewritten within the
	// same timestamp tick, so a stat-only comparison cannot prove it is
	// unchanged and its content is re-read (git's "racy" rule). Two seconds
	// also covers client/server clock skew on network filesystems.
	racyWindow = 2 * time.Second

	// maxBatch bounds how many read results are held before they are
	// delivered, so a scan of a large store does not hold every file.
	maxBatch = 2048
)

// ChangeOp is the kind of a logical file change.
type ChangeOp uint8

const (
	OpCreate ChangeOp = iota + 1 // a file appeared
	OpUpdate                     // a known file's content changed
	OpRemove                     // a known file disappeared
	OpError                      // a path could not be read or watched; Err says why
)

func (o ChangeOp) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpUpdate:
		return "update"
	case OpRemove:
		return "remove"
	case OpError:
		return "error"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// FileState is what the watcher knows about one file: its identity on disk
// and the hash of the content last read. Two states with the same Hash are
// the same document content, whatever their inode or mtime.
type FileState struct {
	Dev   uint64   `json:"dev,omitempty"`
	Ino   uint64   `json:"ino,omitempty"`
	Size  int64    `json:"size"`
	MTime int64    `json:"mtime"`           // unix ns
	CTime int64    `json:"ctime,omitempty"` // unix ns
	Hash  [32]byte `json:"hash"`            // sha256 of the content
	Seen  int64    `json:"seen"`            // unix ns just before the content was read
}

// SameStat reports whether s and o have the same on-disk identity (device,
// inode, size, mtime, ctime). It says nothing about content.
func (s FileState) SameStat(o FileState) bool {
	return s.Dev == o.Dev && s.Ino == o.Ino && s.Size == o.Size &&
		s.MTime == o.MTime && s.CTime == o.CTime
}

// Racy reports whether the file was modified so close to the moment it was
// read that an unchanged stat does not prove unchanged content.
func (s FileState) Racy() bool {
	t := max(s.MTime, s.CTime)
	return t >= s.Seen-int64(racyWindow)
}

// Change is one logical change: emitted only when a file's content really
// differs from what was known (or a path starts or stops failing).
type Change struct {
	Op    ChangeOp
	Path  string    // slash-separated, relative to the root
	State FileState // new state (Create, Update)
	Prev  FileState // previous state (Update, Remove)
	Data  []byte    // the content read (Create, Update); owned by the receiver
	Err   error     // *WatchError (Error)
}

// FSOptions configure WatchFS.
type FSOptions struct {
	// Poll > 0 forces polling at that interval. Zero selects fsnotify unless
	// the root is on a filesystem where inotify cannot see other clients'
	// writes (NFS, SMB, FUSE, ...), which is then polled every DefaultPoll.
	// Poll < 0 forces fsnotify.
	Poll time.Duration
	// Reconcile is the interval of the full rescan that catches anything
	// events missed. Zero means DefaultReconcile; negative disables it.
	Reconcile time.Duration
	// Debounce is how long a path must be quiet before it is re-checked
	// (default 2ms, at most 20x that under a steady stream of events; a
	// batch of Create events only waits Debounce/8, or with the default
	// just until no further event is queued), so
	// multi-step editor saves are usually seen as one change. It adds to
	// every event's latency, which is why it is short: engine writes are
	// atomic renames and never need it. Correctness does not depend on it:
	// every check compares the content with what is known.
	Debounce time.Duration
	// Ignore, if set, hides additional paths (beyond Ignored) from the
	// watcher. rel is slash-separated; dir says whether it is a directory.
	Ignore func(rel string, dir bool) bool
	// Known seeds the watcher with states from a previous run (an index
	// cache). Files whose stat still matches (and is not racy) are not
	// read and produce no change; the others are reported as usual.
	// WatchFS takes the map over: the caller must not use it afterwards.
	Known map[string]FileState
	// LoadKnown, if set (instead of Known), is called once by WatchFS for
	// the known states after it has armed its watches on the tree and
	// listed and stat'ed it: a caller that loads them from disk (an index
	// of 100k files) does so in parallel with the scan's system calls.
	LoadKnown func() map[string]FileState
	// OnChange receives every batch of changes, sorted by path, from a
	// single goroutine. It must not call back into the watcher's methods
	// other than State (and must not block for long: events queue up).
	OnChange func([]Change)
	// OnRestat, if set, receives (like OnChange) the paths whose stat
	// changed while their content did not (a touch, a racy re-read): no
	// change for OnChange, but saved states (Known) are out of date.
	OnRestat func([]string)
	// Workers is the number of parallel readers for scans (default 8).
	Workers int
	// Settle bounds how long a path may be in the middle of a change
	// before it is reported as it is (default DefaultSettle, 1s). A file
	// a writer created or wrote in place is read once the writer closes
	// it (Linux: IN_CLOSE_WRITE), or after Settle if it keeps it open
	// (if it is still empty then, after ten Settles: no document is
	// empty, and a writer stalled between its open and its write on a
	// loaded machine would have it reported invalid); a
	// known file or directory that disappears is reported removed only if
	// it is still gone after Settle, so a save that replaces it (vim's
	// rename and rewrite, git's unlink and create) is one update. A path
	// renamed within the tree is removed at once.
	Settle time.Duration
	// OnDegrade, if set, is called once if the watcher cannot use the
	// kernel's notifications (out of inotify watches or instances) and
	// polls instead; err is a *WatchError wrapping ErrWatchLimit or
	// ErrNoNotify. Called from the watcher's goroutine or from WatchFS;
	// it must not call the watcher's methods. Mode says "poll (...)" from
	// then on.
	OnDegrade func(err error)
}

// FSWatcher watches a directory tree and reports logical file changes.
type FSWatcher struct {
	root      string
	opt       FSOptions
	nt        notifier // nil when polling; set before the goroutines start
	closeInfo bool     // nt says when writers close files
	polling   atomic.Bool
	poll      atomic.Int64 // poll interval (ns) when polling
	mode      atomic.Pointer[string]
	debounce  time.Duration
	settle    time.Duration

	// pending work, fed by the event drain and the API.
	pmu         sync.Mutex
	dirty       map[string]struct{}
	firstAt     time.Time // first event of the pending batch
	lastAt      time.Time // latest event of the pending batch
	slow        bool      // the batch holds a write, remove or rename
	full        bool
	syncs       []chan struct{}
	markers     map[string]syncReq
	forceSync   bool // a queued sync decides settling paths as of now
	markerSeq   uint64
	kick        chan struct{}
	backendErrs []error
	// Paths in the middle of a change (see FSOptions.Settle): writing
	// holds files a writer created or wrote in place and has not closed
	// (since when), gone known paths found missing (since when), moved
	// the sources of renames within the tree (their removal is final),
	// cookies the sources of recent renames away, by cookie.
	writing map[string]time.Time
	gone    map[string]time.Time
	// overdue holds files whose writer kept them open past Settle: they
	// are read as they are (not held back by further writes) until
	// closed. raced collects, while reads are under way (reading), the
	// files whose writer opened or closed them meanwhile: a read that
	// raced its writer is dropped (see readPending).
	overdue map[string]bool
	// emptyOpen holds files read empty while their writer kept them open
	// past Settle (since when): no document is empty, so the writer is
	// most likely stalled between its open and its write (git checkout
	// on a loaded machine). They are read again at its close, and
	// reported empty only after emptyHold settle times.
	emptyOpen map[string]time.Time
	raced     map[string]bool
	reading   bool
	moved     map[string]bool
	cookies   map[uint32]string
	cookieQ   []uint32
	// degrade: the notifier failed (out of watches); process switches
	// to polling.
	degrade error

	// state, written only by the processing goroutine (and WatchFS).
	smu   sync.RWMutex
	files map[string]FileState
	dirs  map[string]*dirEntry
	// dirByIno finds the watched directory path of an inode: a directory
	// renamed within the tree keeps its inode (and its inotify watch), so
	// the old path's watch must go before the new path is watched.
	dirByIno map[[2]uint64]string
	errs     map[string]string
	out      []Change
	restat   []string // see FSOptions.OnRestat
	stats    []string // known files to lstat before deciding to read them
	statBuf  statScratch
	early    bool // this batch was taken before its settle time
	reads    []string
	pre      *prescan // the first scan's listings and stats, see WatchFS
	// emptyOnce holds files read empty once: no document is empty, so an
	// empty file is most likely created and not yet written (a plain
	// os.WriteFile, seen between its open and its write when the machine
	// is busy). It is looked at again after the settle time before it is
	// reported (as invalid, if it is still empty).
	emptyOnce map[string]bool
	// eventBatch: this batch only follows file events. Scans, rescans and
	// Sync answers report what is on disk now, empty files included.
	eventBatch bool
	// force: this batch answers Sync or Rescan: a path found missing is
	// removed now, without waiting for it to come back.
	force bool
	// starting: this batch is the first scan, in WatchFS.
	starting bool

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	closed    atomic.Bool
	ntMu      sync.Mutex // guards closing nt (Close and a degrade may race)
	ntClosed  bool

	// test hooks
	dropEvents atomic.Bool                    // drain discards events (simulates loss)
	openHook   func(string) (*os.File, error) // replaces os.OpenFile when set
}

// detectRemote is remoteFS, replaceable in tests.
var detectRemote = remoteFS

// testOpenHook, when set, replaces os.OpenFile for every watcher (tests).
var testOpenHook func(string) (*os.File, error)

type dirEntry struct {
	dev, ino uint64
	watched  bool
	children map[string]struct{} // names of known child files and dirs
}

// WatchFS starts watching root. Before it returns it has scanned the whole
// tree and delivered the initial changes (relative to opt.Known) to
// opt.OnChange; afterwards changes are delivered as they happen.
func WatchFS(root string, opt FSOptions) (*FSWatcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "watch", Path: abs, Err: syscall.ENOTDIR}
	}
	if opt.OnChange == nil {
		opt.OnChange = func([]Change) {}
	}
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	w := &FSWatcher{
		root:     abs,
		opt:      opt,
		debounce: opt.Debounce,
		dirty:    map[string]struct{}{},
		dirByIno: map[[2]uint64]string{},
		markers:  map[string]syncReq{},
		kick:     make(chan struct{}, 1),
		files:    map[string]FileState{},
		dirs:     map[string]*dirEntry{},
		errs:     map[string]string{},
		done:     make(chan struct{}),

		emptyOnce: map[string]bool{},
		writing:   map[string]time.Time{},
		gone:      map[string]time.Time{},
		overdue:   map[string]bool{},
		emptyOpen: map[string]time.Time{},
		raced:     map[string]bool{},
		moved:     map[string]bool{},
		cookies:   map[uint32]string{},
	}
	if w.debounce <= 0 {
		w.debounce = DefaultDebounce
	}
	w.settle = opt.Settle
	if w.settle <= 0 {
		w.settle = DefaultSettle
	}
	switch {
	case opt.Poll > 0:
		w.setPolling(opt.Poll, "poll")
	case opt.Poll == 0:
		if fsType := detectRemote(abs); fsType != "" {
			w.setPolling(DefaultPoll, "poll ("+fsType+")")
		}
	}
	if !w.polling.Load() {
		w.nt, err = newNotifier(w.onEvent, w.watchError)
		if err != nil {
			// Out of inotify instances: polling still gives right
			// answers, and the caller is told.
			werr := &WatchError{Op: "watch", Err: fmt.Errorf("%w: %w", ErrNoNotify, err)}
			w.setPolling(DefaultPoll, "poll ("+werr.Err.Error()+")")
			w.out = append(w.out, Change{Op: OpError, Err: werr})
			if opt.OnDegrade != nil {
				opt.OnDegrade(werr)
			}
		} else {
			w.closeInfo = w.nt.closeInfo()
			m := "fsnotify" // the name for kernel notifications, whatever the backend
			w.mode.Store(&m)
		}
	}
	// Seed the known state so the initial scan only reports differences.
	var prescanned chan *prescan
	if opt.LoadKnown != nil {
		// The listings and stats are taken after each directory's watch
		// is armed, as the first reconcile would take them: a change
		// after them is an event, one before is in them. The prescan
		// touches only the notifier and the files, not w's state.
		prescanned = make(chan *prescan, 1)
		go func() { prescanned <- w.prescan() }()
		if known := opt.LoadKnown(); known != nil {
			w.files = known
		}
		w.opt.LoadKnown = nil
	} else if opt.Known != nil {
		w.files = opt.Known // taken over: saves copying a big store's map
		w.opt.Known = nil
	}
	dropIgnored(w, w.files)
	for p := range w.files {
		w.ensureDirs(p)
	}
	if prescanned != nil {
		w.pre = <-prescanned
	}
	w.dirs[""] = w.dirEntry("")
	// The notifier's reader drains events into the dirty set from now
	// on: a long first scan must not let the kernel queue overflow.
	w.smu.Lock()
	w.force = true // the first scan reports what is there now
	w.starting = true
	w.reconcile("")
	w.force, w.starting = false, false
	w.pre = nil
	w.smu.Unlock()
	w.applyDegrade()
	w.flush()
	w.wg.Add(1)
	go w.process()
	return w, nil
}

// Root returns the absolute path of the watched directory.
func (w *FSWatcher) Root() string { return w.root }

// Mode describes how changes are detected: "fsnotify" (kernel
// notifications: inotify on Linux), "poll", "poll (nfs)", "poll (inotify
// watch limit reached...)", ...
func (w *FSWatcher) Mode() string { return *w.mode.Load() }

// Polling reports whether the watcher polls (by choice, because the
// filesystem needs it, or because notifications were unavailable).
func (w *FSWatcher) Polling() bool { return w.polling.Load() }

func (w *FSWatcher) setPolling(every time.Duration, mode string) {
	w.poll.Store(int64(every))
	w.mode.Store(&mode)
	w.polling.Store(true)
}

// closeNotifier stops the notifier, once.
func (w *FSWatcher) closeNotifier() error {
	w.ntMu.Lock()
	defer w.ntMu.Unlock()
	if w.nt == nil || w.ntClosed {
		return nil
	}
	w.ntClosed = true
	return w.nt.close()
}

// State returns a copy of every known file state, keyed by relative path.
func (w *FSWatcher) State() map[string]FileState {
	w.smu.RLock()
	defer w.smu.RUnlock()
	m := make(map[string]FileState, len(w.files))
	for k, v := range w.files {
		m[k] = v
	}
	return m
}

// withState runs fn with the states (read-only, not copied) under the
// watcher's lock.
func (w *FSWatcher) withState(fn func(map[string]FileState)) {
	w.smu.RLock()
	defer w.smu.RUnlock()
	fn(w.files)
}

// Close stops watching. OnChange is not called after Close returns.
func (w *FSWatcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.done)
		err = w.closeNotifier()
		w.wg.Wait()
		w.pmu.Lock()
		for _, c := range w.syncs {
			close(c)
		}
		w.syncs = nil
		w.pmu.Unlock()
	})
	return err
}

// Rescan requests a full reconcile with the disk and waits for it.
// Paths in the middle of a change are decided as they are now (a missing
// file is removed), except files a writer still has open.
func (w *FSWatcher) Rescan(ctx context.Context) error { return w.rescan(ctx, true) }

func (w *FSWatcher) rescan(ctx context.Context, force bool) error {
	ch := make(chan struct{})
	w.pmu.Lock()
	w.full = true
	w.syncs = append(w.syncs, ch)
	w.forceSync = w.forceSync || force
	w.pmu.Unlock()
	w.poke()
	return w.wait(ctx, ch)
}

// syncReq is a Sync waiting for its marker's event.
type syncReq struct {
	ch    chan struct{}
	force bool
}

// Sync waits until every change made to the tree before the call has been
// processed and delivered. With fsnotify it writes a marker file (a dot file,
// invisible to documents) into the root and waits for its event: the kernel
// queue is ordered, so every earlier event has been read by then. When
// polling it runs a full reconcile. Paths in the middle of a change are
// decided as they are now, as with Rescan.
func (w *FSWatcher) Sync(ctx context.Context) error { return w.sync(ctx, true) }

// sync is Sync; with force false, paths in the middle of a change keep
// settling (tests look at the settle logic this way).
func (w *FSWatcher) sync(ctx context.Context, force bool) error {
	if w.closed.Load() {
		return ErrClosed
	}
	if w.polling.Load() {
		return w.rescan(ctx, force)
	}
	ch := make(chan struct{})
	w.pmu.Lock()
	if w.polling.Load() {
		// A degrade came in between: its rescan answers.
		w.pmu.Unlock()
		return w.rescan(ctx, force)
	}
	w.markerSeq++
	name := fmt.Sprintf(".tavern-sync.%d.%p.%d", os.Getpid(), w, w.markerSeq)
	w.markers[name] = syncReq{ch, force}
	w.pmu.Unlock()
	full := filepath.Join(w.root, name)
	if err := os.WriteFile(full, nil, 0o600); err != nil {
		w.pmu.Lock()
		delete(w.markers, name)
		w.pmu.Unlock()
		return err
	}
	err := w.wait(ctx, ch)
	os.Remove(full)
	w.pmu.Lock()
	delete(w.markers, name)
	w.pmu.Unlock()
	return err
}

func (w *FSWatcher) wait(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
		if w.closed.Load() {
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return ErrClosed
	}
}

func (w *FSWatcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *FSWatcher) rel(abs string) (string, bool) {
	if abs == w.root {
		return "", true
	}
	if !strings.HasPrefix(abs, w.root+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(abs[len(w.root)+1:]), true
}

func (w *FSWatcher) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

// dropIgnored deletes the known files that the watcher ignores. It reads
// only the options: it may run beside the scan.
func dropIgnored(w *FSWatcher, known map[string]FileState) {
	for p := range known {
		if w.ignored(p, false) {
			delete(known, p)
		}
	}
}

func (w *FSWatcher) ignored(rel string, dir bool) bool {
	if rel == "" {
		return false
	}
	if Ignored(rel) {
		return true
	}
	return w.opt.Ignore != nil && w.opt.Ignore(rel, dir)
}

// onEvent moves a kernel event into the dirty set, as fast as events
// come (called by the notifier's reader), so slow processing never
// overflows the kernel queue. It also keeps the settle state: which
// files a writer has open, and which paths were renamed within the tree.
func (w *FSWatcher) onEvent(ev rawEvent) {
	rel, ok := w.rel(ev.path)
	if !ok {
		return
	}
	w.pmu.Lock()
	if r, ok := w.markers[rel]; ok {
		delete(w.markers, rel)
		w.syncs = append(w.syncs, r.ch)
		w.forceSync = w.forceSync || r.force
		w.pmu.Unlock()
		w.poke()
		return
	}
	if w.dropEvents.Load() || Ignored(rel) {
		w.pmu.Unlock()
		return
	}
	if ino, ok := tmpfileIno(rel); ok && ev.op&evDir == 0 && w.closeInfo {
		// The unnamed file (O_TMPFILE) of a writer that linked it in
		// place: the kernel names its events "#<inode>", so the close
		// that completes the linked name comes under this one.
		done := ev.op&evCloseWrite != 0 && w.linkedClosed(path.Dir(rel), ino)
		w.pmu.Unlock()
		if done {
			w.poke()
		}
		return
	}
	if ev.op&evDir == 0 && w.closeInfo {
		switch {
		case ev.op&(evCloseWrite|evMovedIn) != 0:
			delete(w.writing, rel) // complete
			delete(w.overdue, rel)
			w.raceWith(rel)
		case ev.op&(evCreate|evWrite) != 0:
			if ev.op&evCreate != 0 {
				delete(w.overdue, rel) // a new file
			}
			if _, ok := w.writing[rel]; !ok {
				w.writing[rel] = time.Now()
				if !w.overdue[rel] { // past the bound it is read as it is
					w.raceWith(rel)
				}
			}
		}
	}
	if ev.cookie != 0 {
		switch {
		case ev.op&evMovedOut != 0:
			w.cookies[ev.cookie] = rel
			w.cookieQ = append(w.cookieQ, ev.cookie)
			if len(w.cookieQ) > 256 {
				delete(w.cookies, w.cookieQ[0])
				w.cookieQ = w.cookieQ[1:]
			}
		case ev.op&evMovedIn != 0:
			if src, ok := w.cookies[ev.cookie]; ok {
				// Renamed within the tree: the source's removal is
				// final, whatever comes next at its name.
				delete(w.cookies, ev.cookie)
				w.moved[src] = true
				w.markDirty(src, false)
			}
		}
	}
	// A file renamed into place or closed by its writer is complete: read
	// it soon. Anything else may be a step of a longer save.
	w.markDirty(rel, ev.op&(evMovedIn|evCloseWrite|evCreate) == 0)
	w.pmu.Unlock()
	w.poke()
}

// tmpfileIno parses the name the kernel gives the events of an unnamed
// file (O_TMPFILE): "#" and its inode number.
func tmpfileIno(rel string) (uint64, bool) {
	name, ok := strings.CutPrefix(path.Base(rel), "#")
	if !ok || name == "" {
		return 0, false
	}
	ino, err := strconv.ParseUint(name, 10, 64)
	return ino, err == nil
}

// linkedClosed completes the file of directory dir whose writer holds
// open with inode ino: docstore writes a new document as an unnamed
// file, links it in place (a create event of its name) and then closes
// it, and the close comes under the unnamed file's name. Without this the
// name waits out the settle time (a second) as if its writer kept it
// open. It reports whether it found the file. pmu is held.
func (w *FSWatcher) linkedClosed(dir string, ino uint64) bool {
	if dir == "." {
		dir = ""
	}
	for rel := range w.writing {
		if path.Dir(rel) != dir && !(dir == "" && !strings.Contains(rel, "/")) {
			continue
		}
		fi, err := os.Lstat(w.abs(rel))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(st.Ino) != ino {
			continue
		}
		delete(w.writing, rel)
		delete(w.overdue, rel)
		w.raceWith(rel)
		w.markDirty(rel, false)
		return true
	}
	return false
}

// raceWith notes that a writer opened or closed rel while reads are
// under way: a read of rel may have seen it half written. pmu is held.
func (w *FSWatcher) raceWith(rel string) {
	if w.reading {
		w.raced[rel] = true
	}
}

// markDirty records an event for rel; pmu is held. A batch of only Create
// events (how a rename into place, the engine's only way of writing,
// looks) settles after Debounce/8 of quiet; a write, remove or rename
// suggests an editor's multi-step save and waits the full Debounce. The
// whole batch is taken at once, so bursts are processed in bulk.
func (w *FSWatcher) markDirty(rel string, slow bool) {
	now := time.Now()
	if len(w.dirty) == 0 {
		w.firstAt = now
		w.slow = false
	}
	w.lastAt = now
	w.slow = w.slow || slow
	w.dirty[rel] = struct{}{}
}

// watchError handles an error from the event backend: whatever it was,
// events may have been lost, so the answer is a full reconcile.
func (w *FSWatcher) watchError(err error) {
	w.pmu.Lock()
	w.full = true
	if !errors.Is(err, ErrOverflow) {
		w.backendErrs = append(w.backendErrs, err)
	}
	// A marker's event may be among the lost ones: the syncs waiting for
	// one get the full reconcile instead, which starts after they were
	// registered and so sees every change made before them.
	for name, r := range w.markers {
		delete(w.markers, name)
		w.syncs = append(w.syncs, r.ch)
		w.forceSync = w.forceSync || r.force
	}
	w.pmu.Unlock()
	w.poke()
}

func (w *FSWatcher) process() {
	defer w.wg.Done()
	var tick <-chan time.Time
	var ticker *time.Ticker
	every := time.Duration(-1) // the ticker's interval
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		// The interval changes when a degrade switches to polling.
		interval := w.opt.Reconcile
		if interval == 0 {
			interval = DefaultReconcile
		}
		if w.polling.Load() {
			interval = time.Duration(w.poll.Load())
		}
		if interval != every {
			if ticker != nil {
				ticker.Stop()
				ticker, tick = nil, nil
			}
			if interval > 0 {
				ticker = time.NewTicker(interval)
				tick = ticker.C
			}
			every = interval
		}
		select {
		case <-w.done:
			return
		case <-w.kick:
		case <-timer.C:
		case <-tick:
			w.pmu.Lock()
			w.full = true
			w.pmu.Unlock()
		}
		w.pmu.Lock()
		full := w.full
		syncs := w.syncs
		force := w.forceSync
		berrs := w.backendErrs
		var dirty []string
		take := full || len(syncs) > 0
		early := false // taken before the settle time: see apply
		now := time.Now()
		next := w.fluxDue(now) // paths whose settle time is up are dirty again
		if !take && len(w.dirty) > 0 {
			settle := w.debounce
			if !w.slow {
				settle = w.debounce / 8
			}
			left := min(settle-now.Sub(w.lastAt), 20*w.debounce-now.Sub(w.firstAt))
			switch {
			case left <= 0:
				take = true
			case !w.slow && settle < time.Millisecond && !w.polling.Load():
				// Timers shorter than a millisecond round up to one (the
				// poller's resolution), which would be most of an engine
				// write's latency. A batch of complete files is taken as
				// soon as no further event is waiting: an editor's write
				// after its create is normally already queued behind it.
				if !w.nt.pending() {
					take, early = true, true
				} else {
					// The reader pokes us for the next event unless it is
					// ignored: the timer is the backstop.
					next = minDue(next, now.Add(left))
				}
			default:
				next = minDue(next, now.Add(left))
			}
		}
		if take {
			dirty = make([]string, 0, len(w.dirty)+len(w.gone))
			for p := range w.dirty {
				dirty = append(dirty, p)
			}
			clear(w.dirty)
			if force {
				// Sync and Rescan report what is there now: removals
				// that were settling are decided.
				for p := range w.gone {
					dirty = append(dirty, p)
				}
			}
		}
		w.full = false
		w.syncs = nil
		w.forceSync = false
		w.backendErrs = nil
		w.pmu.Unlock()
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
		if !full && len(syncs) == 0 && len(dirty) == 0 && len(berrs) == 0 {
			continue
		}

		w.smu.Lock()
		w.early = early
		w.eventBatch = !full && len(syncs) == 0
		w.force = force
		for _, err := range berrs {
			// Not deduplicated: each backend error is its own incident.
			w.out = append(w.out, Change{Op: OpError, Err: &WatchError{Op: "watch", Err: err}})
		}
		if full {
			w.reconcile("")
		} else {
			paths := dirty
			slices.Sort(paths)
			paths = slices.Compact(paths)
			for _, p := range paths {
				w.check(p)
			}
			w.readPending()
		}
		w.early, w.eventBatch, w.force = false, false, false
		w.smu.Unlock()
		w.applyDegrade()
		w.flush()
		for _, c := range syncs {
			close(c)
		}
		// Poke once more: a degrade or settle may have queued work.
		w.pmu.Lock()
		again := len(w.dirty) > 0 || w.full
		w.pmu.Unlock()
		if again {
			w.poke()
		}
	}
}

func minDue(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// fluxDue marks dirty the paths whose settle time is up (a writer that
// keeps its file open, a path still gone) and returns the next such
// time, or zero. pmu is held.
func (w *FSWatcher) fluxDue(now time.Time) time.Time {
	var next time.Time
	due := func(p string, since time.Time) bool {
		at := since.Add(w.settle)
		if at.After(now) {
			next = minDue(next, at)
			return false
		}
		if _, dirty := w.dirty[p]; !dirty {
			w.markDirty(p, false)
		}
		return true
	}
	for p, since := range w.writing {
		if due(p, since) {
			delete(w.writing, p) // the bound is reached: read it as it is
			w.overdue[p] = true
		}
	}
	for p, since := range w.gone {
		due(p, since) // check decides, and forgets it
	}
	return next
}

// expireSettles makes the settle time of every path in the middle of a
// change up (tests).
func (w *FSWatcher) expireSettles() {
	w.pmu.Lock()
	past := time.Now().Add(-2 * w.settle)
	for p := range w.writing {
		w.writing[p] = past
	}
	for p := range w.gone {
		w.gone[p] = past
	}
	w.pmu.Unlock()
}

// stillWriting reports whether a writer has rel open since less than the
// settle time (then it is not read yet).
func (w *FSWatcher) stillWriting(rel string) bool {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	since, ok := w.writing[rel]
	return ok && time.Since(since) < w.settle
}

// racedWriter reports whether the read of rel just made must be
// dropped because a writer had it open (raced: opened or closed it while
// the read was under way). It is then checked again. smu is held.
func (w *FSWatcher) racedWriter(rel string, raced bool) bool {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	_, open := w.writing[rel]
	if !raced && (!open || w.overdue[rel]) {
		// Past its settle bound a file is read as it is, whatever its
		// writer does meanwhile.
		return false
	}
	w.markDirty(rel, false) // its close or settle bound decides
	w.poke()
	return true
}

// settling reports whether the removal of rel, found missing, waits for
// the settle time (rel may come back: a save that replaces it). smu is
// held.
func (w *FSWatcher) settling(rel string) bool {
	if rel == "" {
		return false
	}
	if _, ok := w.files[rel]; !ok && w.dirs[rel] == nil {
		return false // nothing known to remove
	}
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if w.moved[rel] || w.force {
		delete(w.moved, rel)
		delete(w.gone, rel)
		return false
	}
	since, ok := w.gone[rel]
	if !ok {
		w.gone[rel] = time.Now()
		w.poke() // arm the timer for its settle time
		return true
	}
	if time.Since(since) < w.settle {
		return true
	}
	delete(w.gone, rel)
	return false
}

// present notes that rel exists: a removal it was settling is off. smu
// is held.
func (w *FSWatcher) present(rel string) {
	w.pmu.Lock()
	delete(w.gone, rel)
	delete(w.moved, rel)
	w.pmu.Unlock()
}

// applyDegrade switches to polling if the notifier failed (out of
// watches) during the last batch, and reports it.
func (w *FSWatcher) applyDegrade() {
	w.pmu.Lock()
	err := w.degrade
	w.degrade = nil
	w.pmu.Unlock()
	if err == nil || w.polling.Load() {
		return
	}
	_ = w.closeNotifier()
	w.setPolling(DefaultPoll, "poll ("+err.Error()+")")
	w.smu.Lock()
	for _, d := range w.dirs {
		d.watched = false
	}
	clear(w.dirByIno)
	w.out = append(w.out, Change{Op: OpError, Err: err})
	w.smu.Unlock()
	w.pmu.Lock()
	clear(w.writing) // no close events any more
	clear(w.overdue)
	clear(w.emptyOpen)
	w.full = true // what happened since the failed watch
	// Syncs waiting for their marker's event get the rescan instead.
	for name, r := range w.markers {
		delete(w.markers, name)
		w.syncs = append(w.syncs, r.ch)
		w.forceSync = w.forceSync || r.force
	}
	w.pmu.Unlock()
	w.poke()
	if w.opt.OnDegrade != nil && !w.closed.Load() {
		w.opt.OnDegrade(err)
	}
}

// flush delivers the collected changes. Called without smu held.
func (w *FSWatcher) flush() {
	w.smu.Lock()
	out, restat := w.out, w.restat
	w.out, w.restat = nil, nil
	w.smu.Unlock()
	w.emit(out)
	if len(restat) > 0 && w.opt.OnRestat != nil && !w.closed.Load() {
		w.opt.OnRestat(restat)
	}
}

func (w *FSWatcher) emit(out []Change) {
	if len(out) == 0 || w.closed.Load() {
		return
	}
	slices.SortStableFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	w.opt.OnChange(out)
}

// check re-examines one path that may have changed. smu is held.
func (w *FSWatcher) check(rel string) {
	// Only name rules here: Options.Ignore needs to know whether rel is a
	// directory, which the lstat below tells.
	if rel != "" && Ignored(rel) {
		return
	}
	if rel != "" {
		if parent := parentOf(rel); w.dirs[parent] == nil {
			// The parent is new to us: reconciling it covers rel.
			w.check(parent)
			return
		}
	}
	fi, err := os.Lstat(w.abs(rel))
	switch {
	case err != nil && isGone(err):
		if !w.settling(rel) {
			w.removePath(rel)
		}
		return
	case err != nil:
		w.reportErr(rel, "lstat", err)
		return
	}
	w.present(rel)
	switch m := fi.Mode(); {
	case m.IsDir():
		if w.ignored(rel, true) {
			w.removePath(rel)
			return
		}
		if _, ok := w.files[rel]; ok {
			w.removeFile(rel)
		}
		w.reconcile(rel)
	case w.ignored(rel, false):
		w.removePath(rel) // a directory before, perhaps
	case m.IsRegular():
		if w.dirs[rel] != nil {
			w.removeDir(rel)
		}
		if w.stillWriting(rel) {
			return // read when its writer closes it (or after Settle)
		}
		w.reads = append(w.reads, rel)
	case m&fs.ModeSymlink != 0:
		w.notWriting(rel)
		w.forget(rel)
		w.reportErr(rel, "lstat", ErrSymlink)
	default:
		w.notWriting(rel)
		w.forget(rel)
		w.reportErr(rel, "lstat", ErrNotRegular)
	}
}

// notWriting forgets that a writer created rel: it is not a regular
// file (a FIFO or a link created in place), nothing will close it.
func (w *FSWatcher) notWriting(rel string) {
	w.pmu.Lock()
	delete(w.writing, rel)
	delete(w.overdue, rel)
	w.pmu.Unlock()
}

// reconcile makes the known state under dir equal to the disk: it watches
// every directory, reads every file whose stat changed (or is racy), and
// removes what is gone. smu is held.
func (w *FSWatcher) reconcile(dir string) {
	w.walk(dir)
	w.statPending()
	w.readPending()
}

// statPending lstats known files in parallel and queues for reading those
// whose stat changed or that could not be stat'ed (readFile reports why,
// or finds them gone). smu is held.
func (w *FSWatcher) statPending() {
	paths := w.stats
	w.stats = nil
	if len(paths) == 0 {
		return
	}
	sts, ok := lstatAll(w.root, paths, w.opt.Workers, &w.statBuf)
	for i, p := range paths {
		if !ok[i] || !sts[i].SameStat(w.files[p]) {
			w.reads = append(w.reads, p)
		}
	}
	// The next batch reuses the array (cleared: it must not keep the
	// paths alive).
	clear(paths)
	if w.stats == nil {
		w.stats = paths[:0]
	}
	if len(w.reads) >= maxBatch {
		w.readPending()
	}
}

// parallel runs fn(0..n-1) on up to workers goroutines.
func parallel(n, workers int, fn func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func (w *FSWatcher) walk(dir string) {
	fi, err := os.Lstat(w.abs(dir))
	if err != nil {
		if isGone(err) {
			if !w.settling(dir) {
				w.removePath(dir)
			}
		} else {
			w.reportErr(dir, "lstat", err)
		}
		return
	}
	if !fi.IsDir() {
		w.check(dir)
		return
	}
	l, replaced := w.pre.listing(dir, fi)
	if replaced && !w.polling.Load() {
		// The prescan's watch follows the directory that was here.
		w.nt.remove(w.abs(dir))
	}
	d := w.dirEntry(dir)
	w.watchDir(dir, d, fi)
	// Read the directory only after the watch exists: anything created
	// from now on produces an event, anything before is in the listing.
	var ents []dirent
	if l != nil {
		ents = l.ents
	} else {
		ents, err = readDir(w.abs(dir), len(d.children))
	}
	if err != nil {
		if isGone(err) {
			if !w.settling(dir) {
				w.removePath(dir)
			}
		} else {
			// Keep what we knew: a transient EACCES must not look like
			// every document under dir was deleted.
			w.reportErr(dir, "readdir", err)
		}
		return
	}
	w.clearErr(dir)
	// No need to sort ents: the changes are sorted when emitted. Ignored
	// entries are dropped from ents as it goes (kept counts the rest), so
	// that ents[:kept] is what the directory holds for the removals below.
	kept := 0
	for i, e := range ents {
		name := e.Name()
		t := e.Type()
		var child string
		if l != nil { // a prescan listing: filtered already
			child = l.rels[i]
		} else {
			child = joinRel(dir, name)
			// dir is not ignored, so of the name rules only the last
			// segment's can hide child.
			if IgnoredName(name) || (w.opt.Ignore != nil && w.opt.Ignore(child, t.IsDir())) {
				continue
			}
		}
		ents[kept] = e
		kept++
		switch {
		case t.IsDir():
			if _, ok := w.files[child]; ok {
				w.removeFile(child)
			}
			w.present(child)
			w.walk(child)
		case t.IsRegular():
			if w.dirs[child] != nil {
				w.removeDir(child)
			}
			w.present(child)
			old, known := w.files[child]
			if w.stillWriting(child) {
				// Its writer has it open: read when it is closed.
				if known {
					d.children[name] = struct{}{}
				}
				continue
			}
			if known && w.errs[child] == "" && !old.Racy() {
				// Probably unchanged: lstat it (in parallel, later) and
				// read it only if its stat differs.
				d.children[name] = struct{}{}
				if st, ok := l.stat(i); ok {
					if !st.SameStat(old) {
						w.reads = append(w.reads, child)
						if len(w.reads) >= maxBatch {
							w.readPending()
						}
					}
					continue
				}
				w.stats = append(w.stats, child)
				if len(w.stats) >= 4*maxBatch {
					w.statPending()
				}
				continue
			}
			w.reads = append(w.reads, child)
			if len(w.reads) >= maxBatch {
				w.readPending()
			}
		case t&fs.ModeSymlink != 0:
			w.forget(child)
			w.reportErr(child, "lstat", ErrSymlink)
		default:
			w.forget(child)
			w.reportErr(child, "lstat", ErrNotRegular)
		}
	}
	ents = ents[:kept]
	// A known child the listing does not show is gone. Listed names are
	// distinct, so when as many of them are known children as there are
	// known children, none is missing: the set of listed names is built
	// only when one is (a rescan of a big directory would otherwise make
	// a map of all its names every reconcile period).
	var seen map[string]struct{}
	listed := func() map[string]struct{} {
		if seen == nil {
			seen = make(map[string]struct{}, len(ents))
			for _, e := range ents {
				seen[e.name] = struct{}{}
			}
		}
		return seen
	}
	known := 0
	for _, e := range ents {
		if _, ok := d.children[e.name]; ok {
			known++
		}
	}
	if known != len(d.children) {
		for name := range d.children {
			if _, ok := listed()[name]; !ok {
				if child := joinRel(dir, name); !w.settling(child) {
					w.removePath(child)
				}
			}
		}
	}
	// Errors on names that no longer exist are resolved.
	for p := range w.errs {
		if p != dir && parentOf(p) == dir {
			if _, ok := listed()[p[strings.LastIndexByte(p, '/')+1:]]; !ok {
				delete(w.errs, p)
			}
		}
	}
}

func (w *FSWatcher) watchDir(rel string, d *dirEntry, fi fs.FileInfo) {
	var st FileState
	fillStat(&st, fi)
	if w.polling.Load() {
		d.dev, d.ino = st.Dev, st.Ino
		return
	}
	if d.watched && d.dev == st.Dev && d.ino == st.Ino {
		return
	}
	abs := w.abs(rel)
	if d.watched {
		// Same path, different directory (renamed away and replaced):
		// the old watch follows the old inode, so drop it.
		w.nt.remove(abs)
		delete(w.dirByIno, [2]uint64{d.dev, d.ino})
		d.watched = false
	}
	key := [2]uint64{st.Dev, st.Ino}
	if old, ok := w.dirByIno[key]; ok && old != rel {
		// This directory was watched under its old name: it moved here.
		// Forget the old path (its files are reported removed and found
		// again below) and its watch, or inotify would hand back the old
		// watch and go on reporting the old name.
		if od := w.dirs[old]; od != nil {
			w.removeDir(old)
		} else {
			w.nt.remove(w.abs(old))
		}
		delete(w.dirByIno, key)
	}
	d.dev, d.ino = st.Dev, st.Ino
	if err := w.nt.add(abs); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			// Out of watches: events for the unwatched part would be
			// lost without a word. Poll the whole tree instead, and say
			// so (applyDegrade, after this batch).
			w.pmu.Lock()
			if w.degrade == nil {
				w.degrade = &WatchError{Op: "watch", Path: rel, Err: fmt.Errorf("%w: %w", ErrWatchLimit, err)}
			}
			w.pmu.Unlock()
			return
		}
		w.reportErr(rel, "watch", err)
		return
	}
	d.watched = true
	w.dirByIno[key] = rel
}

type readResult struct {
	st   FileState
	data []byte
	err  error
}

// readPending reads the queued files in parallel and compares each with
// what is known. smu is held.
func (w *FSWatcher) readPending() {
	for len(w.reads) > 0 {
		paths := w.reads
		w.reads = nil
		slices.Sort(paths)
		paths = slices.Compact(paths)
		res := make([]readResult, len(paths))
		watch := w.closeInfo && !w.polling.Load()
		if watch {
			w.pmu.Lock()
			w.reading = true
			w.pmu.Unlock()
		}
		parallel(len(paths), w.opt.Workers, func(i int) { res[i] = w.readFile(paths[i]) })
		var raced map[string]bool
		if watch {
			// A path is read only if no writer had it open when it was
			// checked, as far as the events taken from the kernel by
			// then said. Under load the reader lags behind the kernel:
			// a file git unlinked and is re-creating can be found by a
			// read meant for its unlink before its create event is
			// seen. Catch up with every event that happened before the
			// reads ended, and drop each read a writer raced: it is
			// read again when the writer closes the file (or at the
			// settle bound).
			w.nt.drain()
			w.pmu.Lock()
			raced = w.raced
			w.raced = map[string]bool{}
			w.reading = false
			w.pmu.Unlock()
		}
		for i, p := range paths {
			if watch && res[i].err == nil && w.racedWriter(p, raced[p]) {
				continue
			}
			w.apply(p, res[i])
		}
		if len(w.out) >= maxBatch {
			// Deliver now rather than holding a whole store's content. The
			// maps are consistent here; only this goroutine mutates them.
			out := w.out
			w.out = nil
			w.smu.Unlock()
			w.emit(out)
			w.smu.Lock()
		}
	}
}

var errRecheck = errors.New("changed type while reading")

func (w *FSWatcher) readFile(rel string) readResult {
	seen := time.Now().UnixNano()
	open := w.openHook
	if open == nil {
		open = testOpenHook
	}
	if open == nil {
		open = func(p string) (*os.File, error) { return os.OpenFile(p, openFlags, 0) }
	}
	f, err := open(w.abs(rel))
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EISDIR) {
			err = errRecheck
		}
		return readResult{err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return readResult{err: err}
	}
	if !fi.Mode().IsRegular() {
		return readResult{err: errRecheck}
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return readResult{err: err}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	r := readResult{data: data}
	fillStat(&r.st, fi)
	r.st.Hash = sha256.Sum256(data)
	r.st.Seen = seen
	return r
}

func (w *FSWatcher) apply(rel string, r readResult) {
	switch {
	case r.err == errRecheck:
		// It stopped being a regular file between lstat and open.
		w.pmu.Lock()
		w.markDirty(rel, true)
		w.pmu.Unlock()
		w.poke()
		return
	case r.err != nil && isGone(r.err):
		if !w.settling(rel) { // deleted mid-read
			w.removePath(rel)
		}
		return
	case r.err == nil && len(r.data) == 0 && !w.closeInfo && (w.early || (w.eventBatch && !w.emptyOnce[rel])):
		// Empty: most likely created and not yet written (no document
		// is empty). Look again after the full settle time.
		if !w.early {
			w.emptyOnce[rel] = true
		}
		w.pmu.Lock()
		w.markDirty(rel, true)
		w.pmu.Unlock()
		w.poke()
		return
	case r.err == nil && len(r.data) == 0 && w.closeInfo && !w.force && w.holdEmpty(rel):
		return // read again when its writer closes it
	case r.err == nil && len(r.data) == 0 && w.closeInfo && w.starting:
		w.holdStartEmpty(rel)
		return // read again when its writer closes it, or at the settle bound
	case r.err != nil:
		w.reportErr(rel, "read", r.err)
		return
	}
	delete(w.emptyOnce, rel)
	w.pmu.Lock()
	delete(w.emptyOpen, rel)
	w.pmu.Unlock()
	old, known := w.files[rel]
	_, hadErr := w.errs[rel]
	w.clearErr(rel)
	w.files[rel] = r.st
	w.ensureDirs(rel)
	switch {
	case !known:
		w.out = append(w.out, Change{Op: OpCreate, Path: rel, State: r.st, Data: r.data})
	case old.Hash != r.st.Hash || hadErr:
		// After an error the receiver may have marked the file broken,
		// so it gets the content again even if it is unchanged.
		w.out = append(w.out, Change{Op: OpUpdate, Path: rel, State: r.st, Prev: old, Data: r.data})
	case old != r.st:
		w.restat = append(w.restat, rel)
	}
}

// emptyHold is how many settle times an empty file whose writer keeps it
// open waits for its writer before it is reported as it is (empty).
const emptyHold = 10

// holdEmpty reports whether rel, just read empty, is held back: its
// writer keeps it open past the settle time (overdue), for less than
// emptyHold settle times since it was first read so. Its settle time
// starts again (a writer that never closes it is looked at once per
// settle time); its close makes it read at once. smu is held.
func (w *FSWatcher) holdEmpty(rel string) bool {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if !w.overdue[rel] {
		return false // closed: it is what it is
	}
	now := time.Now()
	since, ok := w.emptyOpen[rel]
	if !ok {
		since = now
		w.emptyOpen[rel] = now
	}
	if now.Sub(since) >= emptyHold*w.settle {
		return false
	}
	delete(w.overdue, rel)
	w.writing[rel] = now
	w.poke() // arm the timer for its settle time
	return true
}

// holdStartEmpty holds back rel, found empty by the first scan: no
// document is empty, so a writer most likely truncated it and has not
// written it yet (vim's or git's rewrite under way when the watcher
// started), but its open came before the watch, so nothing says so. It
// is held as a file its writer has open, for one settle time only (the
// writer is a guess): its close makes it read at once; past the bound it
// is read as it is. smu is held.
func (w *FSWatcher) holdStartEmpty(rel string) {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	now := time.Now()
	if _, ok := w.writing[rel]; !ok {
		w.writing[rel] = now
	}
	if _, ok := w.emptyOpen[rel]; !ok {
		w.emptyOpen[rel] = now.Add(-(emptyHold - 1) * w.settle) // so holdEmpty waits no longer
	}
	w.poke() // arm the timer for its settle time
}

func (w *FSWatcher) reportErr(rel, op string, err error) {
	msg := op + ": " + err.Error()
	if w.errs[rel] == msg {
		return
	}
	w.errs[rel] = msg
	w.out = append(w.out, Change{Op: OpError, Path: rel, Err: &WatchError{Op: op, Path: rel, Err: err}})
}

func (w *FSWatcher) clearErr(rel string) { delete(w.errs, rel) }

// removePath forgets rel, file or directory tree, emitting Remove for every
// known file.
func (w *FSWatcher) removePath(rel string) {
	w.forget(rel)
	delete(w.errs, rel)
	delete(w.emptyOnce, rel)
	w.pmu.Lock()
	delete(w.gone, rel)
	delete(w.writing, rel)
	delete(w.overdue, rel)
	delete(w.emptyOpen, rel)
	w.pmu.Unlock()
}

// forget is removePath without clearing rel's error, for paths that still
// exist but are not documents (links, FIFOs).
func (w *FSWatcher) forget(rel string) {
	if _, ok := w.files[rel]; ok {
		w.removeFile(rel)
	}
	if w.dirs[rel] != nil && rel != "" {
		w.removeDir(rel)
	}
	if rel != "" {
		if p := w.dirs[parentOf(rel)]; p != nil {
			delete(p.children, baseOf(rel))
		}
	}
}

func (w *FSWatcher) removeFile(rel string) {
	old := w.files[rel]
	delete(w.files, rel)
	if p := w.dirs[parentOf(rel)]; p != nil {
		delete(p.children, baseOf(rel))
	}
	w.out = append(w.out, Change{Op: OpRemove, Path: rel, Prev: old})
}

func (w *FSWatcher) removeDir(rel string) {
	d := w.dirs[rel]
	for name := range d.children {
		child := joinRel(rel, name)
		if _, ok := w.files[child]; ok {
			w.removeFile(child)
		}
		if w.dirs[child] != nil {
			w.removeDir(child)
		}
		delete(w.errs, child)
	}
	if d.watched && !w.polling.Load() {
		w.nt.remove(w.abs(rel))
		if w.dirByIno[[2]uint64{d.dev, d.ino}] == rel {
			delete(w.dirByIno, [2]uint64{d.dev, d.ino})
		}
	}
	delete(w.dirs, rel)
	if p := w.dirs[parentOf(rel)]; p != nil {
		delete(p.children, baseOf(rel))
	}
}

func (w *FSWatcher) dirEntry(rel string) *dirEntry {
	d := w.dirs[rel]
	if d == nil {
		d = &dirEntry{children: map[string]struct{}{}}
		w.dirs[rel] = d
		if rel != "" {
			w.dirEntry(parentOf(rel)).children[baseOf(rel)] = struct{}{}
		}
	}
	return d
}

// ensureDirs links file rel into its parent directory entries.
func (w *FSWatcher) ensureDirs(rel string) {
	w.dirEntry(parentOf(rel)).children[baseOf(rel)] = struct{}{}
}

func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

func baseOf(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
