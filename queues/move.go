package queues

import (
	"os"
	"path/filepath"

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
	d, err := b.s.Get(from)
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
	if err := b.s.Create(to, d); err != nil {
		return nil, err
	}
	// Retire, not unlink: the old copy's file becomes a spare that the
	// next create rewrites (no block freed, so no synchronous discard).
	if err := b.s.RetireAbs(b.path(from)); err != nil {
		return d, &docstore.PathError{Op: "move", Path: from, Err: err}
	}
	return d, nil
}

// path joins a document path to the store root without docstore's
// symlink walk (tens of µs per call). Only for paths built from validated
// queue names and item ids under queues/, whose directory Queue checked.
func (b *Broker) path(rel string) string {
	return filepath.Join(b.s.Root(), filepath.FromSlash(rel))
}

func (b *Broker) exists(rel string) bool {
	_, err := os.Lstat(b.path(rel))
	return err == nil
}
