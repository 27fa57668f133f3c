package queues

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

// move is an item's state change: read from, let fn edit the document,
// create it at to (durably, failing with fs.ErrExist if to exists), then
// remove from. The caller holds the item lock.
//
// Unlike docstore.Store.Move it does not fsync from's directory after the
// remove: that is one fsync less per state change (two per take+done
// cycle). A crash can then bring the old copy back next to the new one;
// every reader resolves such pairs, so a stale copy is never acted on:
// claims refuse a pending copy whose done/dead copy exists or whose
// claimed copy is newer (resolveDup), reapers and fenced calls ignore a
// claimed copy whose done/dead copy exists (leftover), and locate prefers
// the later state.
func (b *Broker) move(l *docstore.Lock, from, to string, fn func(*docstore.Doc) error) (*docstore.Doc, error) {
	d, err := b.get(from)
	if err != nil {
		return nil, err
	}
	return b.moveDoc(l, d, to, fn)
}

// moveDoc is move for a document the caller read under the same hold of
// the item lock (so it is current): one read and parse less.
func (b *Broker) moveDoc(l *docstore.Lock, d *docstore.Doc, to string, fn func(*docstore.Doc) error) (*docstore.Doc, error) {
	from := d.Path
	if fn != nil {
		if err := fn(d); err != nil {
			return nil, err
		}
	}
	if err := b.create(to, d); err != nil {
		return nil, err
	}
	// Retire, not unlink: the old copy's file becomes a spare that the
	// next create rewrites (no block freed, so no synchronous discard).
	if err := b.retire(from); err != nil {
		// The old copy cannot go (an immutable or read-only directory):
		// undo the new one, so that a failed move leaves the item as it
		// was (no orphan claim that lives until its lease runs out).
		err = &docstore.PathError{Op: "move", Path: from, Err: err}
		if uerr := b.retire(to); uerr != nil {
			err = errors.Join(err, fmt.Errorf("undo: %s is left beside %s (the later state wins on read): %w", to, from, uerr))
		}
		return nil, err
	}
	// A set or edit of the item at from left its document lock file
	// there: it goes with the path (one lstat when there is none).
	b.s.DropDocLock(from)
	return d, nil
}

// Item state directories are used through open docstore.Dir handles
// (one per queue and state, opened on first use): every read, create,
// rename and existence check of the claim cycle then resolves one path
// component instead of the store's absolute path, with no per-call
// symlink walk, because OpenDir reached the directory without following
// any. A handle whose path was removed or replaced since (Dir.Stale) is
// dropped and the operation retried on the path; Queue drops a queue's
// handles whenever it reloads queue.md, and a handle is checked against
// its path (one lstat) at most every Options.DirRecheck (100ms), so a state directory
// renamed or replaced by hand is followed within that time rather than
// written into under its old name. Paths that are not item paths, or
// whose directory does not exist yet, go through the path-based Store
// methods as before.

// itemDir returns the open state directory holding the item document
// rel (queues/<q>/<state>/<id>.md) and the file name in it, or nil.
func (b *Broker) itemDir(rel string) (*docstore.Dir, string) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if strings.Count(dir, "/") != 2 || !strings.HasPrefix(dir, "queues/") {
		return nil, ""
	}
	switch path.Base(dir) {
	case Pending, Claimed, Done, Dead:
	default:
		return nil, ""
	}
	now := time.Now()
	if v, ok := b.dirs.Load(dir); ok {
		h := v.(*dirHandle)
		if now.Sub(h.checked) < b.dirRecheck {
			return h.d, name
		}
		if !h.d.Stale() {
			b.dirs.CompareAndSwap(dir, h, &dirHandle{d: h.d, checked: now})
			return h.d, name
		}
		b.dropDir(h.d)
	}
	d, err := b.s.OpenDir(dir)
	if err != nil {
		return nil, "" // missing (a create makes it) or unsafe (the path methods say so)
	}
	if v, loaded := b.dirs.LoadOrStore(dir, &dirHandle{d: d, checked: now}); loaded {
		d.Close()
		return v.(*dirHandle).d, name
	}
	return d, name
}

type dirHandle struct {
	d       *docstore.Dir
	checked time.Time
}

// dropDir forgets a handle found stale. It is not closed here: another
// goroutine may be using it; the runtime closes it once unreachable.
func (b *Broker) dropDir(d *docstore.Dir) {
	if v, ok := b.dirs.Load(d.Path()); ok && v.(*dirHandle).d == d {
		b.dirs.CompareAndDelete(d.Path(), v)
	}
}

// dropQueueDirs forgets the handles of one queue's state directories.
func (b *Broker) dropQueueDirs(queue string) {
	for _, st := range []string{Pending, Claimed, Done, Dead} {
		b.dirs.Delete("queues/" + queue + "/" + st)
	}
}

// viaDir runs op on rel's open state directory, or returns ok=false when
// there is none; a failure on a handle that turned out stale is retried
// on a fresh one (or reported as ok=false, for the path methods to
// retry).
func (b *Broker) viaDir(rel string, op func(d *docstore.Dir, name string) error) (ok bool, err error) {
	d, name := b.itemDir(rel)
	if d == nil {
		return false, nil
	}
	err = op(d, name)
	if err != nil && d.Stale() {
		b.dropDir(d)
		return false, nil
	}
	return true, err
}

func (b *Broker) get(rel string) (doc *docstore.Doc, err error) {
	if ok, err := b.viaDir(rel, func(d *docstore.Dir, name string) error {
		doc, err = d.Get(name)
		return err
	}); ok {
		return doc, err
	}
	return b.s.Get(rel)
}

func (b *Broker) readFile(rel string) (data []byte, err error) {
	if ok, err := b.viaDir(rel, func(d *docstore.Dir, name string) error {
		data, err = d.ReadFile(name)
		return err
	}); ok {
		return data, err
	}
	return b.s.ReadFile(rel)
}

func (b *Broker) create(rel string, doc *docstore.Doc) error {
	create := func(d *docstore.Dir, name string) error { return d.Create(name, doc) }
	if ok, err := b.viaDir(rel, create); ok {
		return err
	}
	// The state directory is missing (removed by hand): make it and move
	// through it like any other. A move is not a ruled write: the store's
	// rules (rules.go) judge changes made through set, edit and the API,
	// and must not refuse a claim of an item a hand edit left off.
	if b.s.MkdirAll(path.Dir(rel)) == nil {
		if ok, err := b.viaDir(rel, create); ok {
			return err
		}
	}
	return b.s.Create(rel, doc)
}

func (b *Broker) retire(rel string) error {
	if ok, err := b.viaDir(rel, func(d *docstore.Dir, name string) error { return d.Retire(name) }); ok {
		return err
	}
	return b.s.RetireAbs(b.path(rel))
}

// path joins a document path to the store root without docstore's
// symlink walk (tens of µs per call). Only for paths built from validated
// queue names and item ids under queues/, whose directory Queue checked.
func (b *Broker) path(rel string) string {
	return filepath.Join(b.s.Root(), filepath.FromSlash(rel))
}

func (b *Broker) exists(rel string) bool {
	if d, name := b.itemDir(rel); d != nil {
		return d.Exists(name)
	}
	_, err := os.Lstat(b.path(rel))
	return err == nil
}
