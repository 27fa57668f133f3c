package docstore

import (
	"errors"
	"os"
	"path/filepath"
)

// Claim is the exactly-once primitive under queues, tuples and resource
// tokens. It takes the lock for lockKey without waiting, then renames the
// document from one state directory to another (from and to are document
// paths). Exactly one racer succeeds; the others get ErrLost, a normal
// "someone else got it" result. The winner holds the returned lock for as
// long as it works on the document: its death releases the lock, which
// tells reapers the claim is dead.
//
// Both directories are fsynced (unless the store is relaxed), so an
// acknowledged claim survives a crash.
func (s *Store) Claim(lockKey, from, to string) (*Lock, error) {
	l, ok, err := s.TryLock(lockKey)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, pathErr("claim", from, ErrLost)
	}
	if err := s.rename(from, to); err != nil {
		l.Unlock()
		if errors.Is(err, ErrNotExist) || errors.Is(err, ErrExist) {
			return nil, pathErr("claim", from, ErrLost)
		}
		return nil, err
	}
	return l, nil
}

// Rename moves a document from one path to another without changing its
// content, failing with ErrExist rather than replacing. Both directories
// are fsynced. Callers serialise with the document's lock.
func (s *Store) Rename(from, to string) error {
	return s.rename(from, to)
}

func (s *Store) rename(from, to string) error {
	fromAbs, err := s.abs(from)
	if err != nil {
		return pathErr("rename", from, err)
	}
	toAbs, err := s.abs(to)
	if err != nil {
		return pathErr("rename", to, err)
	}
	if err := s.mkdirAll(filepath.Dir(toAbs)); err != nil {
		return pathErr("rename", to, err)
	}
	if err := renameNoReplace(fromAbs, toAbs); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return pathErr("rename", from, ErrNotExist)
		}
		return pathErr("rename", from, unwrapLink(err))
	}
	if err := s.syncDir(filepath.Dir(toAbs)); err != nil {
		return err
	}
	if filepath.Dir(toAbs) != filepath.Dir(fromAbs) {
		if err := s.syncDir(filepath.Dir(fromAbs)); err != nil {
			return err
		}
	}
	s.notify(Mutation{Op: "move", Path: to, From: from})
	return nil
}
