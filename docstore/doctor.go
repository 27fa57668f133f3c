package docstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"
)

// A Finding is something a crash (or a person) left behind that `tavern
// doctor` reports: an item in two state directories, a claim of a dead
// holder, a journal gap, a temp file or lock file nobody will use, an
// index entry of a missing file. Each layer finds its own (docstore: temp
// files; queues: items, claims, journal, item locks; agents: dead
// wrappers, orphaned processes, agent and instance locks; watcher: the
// index cache); Repair fixes one, and is never called by the check.
type Finding struct {
	Kind   string `json:"kind"` // see the Finding* constants
	Path   string `json:"path"` // store-relative path (or lock key) it is about
	Detail string `json:"detail"`
	Fixed  bool   `json:"fixed"`
	Error  string `json:"error,omitempty"` // the repair failed
	// A note is no fault: what normal use leaves (lock files of removed
	// documents), reported so --fix tidies it; it does not make doctor
	// exit 5.
	Note bool `json:"note,omitempty"`

	Repair func() error `json:"-"`
}

// Kinds of findings.
const (
	FindingDuplicate  = "duplicate-copy" // an item in two state directories
	FindingDeadClaim  = "dead-claim"     // a claim whose holder is dead, not yet reaped
	FindingDeadAgent  = "dead-wrapper"   // an agent working for a wrapper that died
	FindingDeadPool   = "dead-pool"      // a pool running for a `pool run` that died
	FindingOrphan     = "orphan-process" // processes of a dead wrapper's tree still run
	FindingJournalGap = "journal-gap"    // a state change the journal does not have
	FindingStaleLock  = "stale-lock"     // a lock file nobody will take again
	FindingTempFile   = "temp-file"      // a temp file or spare nobody will reuse
	FindingStaleIndex = "stale-index"    // an index cache saved with entries of files already gone
	// An item still to do whose gates: names a gate with no document (a
	// crash inside `gate add`): the gate is never passed.
	FindingDanglingGate = "dangling-gate"
	// A document that does not parse or validate, so the doctor could not
	// judge it; it has no Repair (a person fixes it, e.g. `tavern edit`).
	FindingInvalid  = "invalid-document"
	FindingStrayDir = "stray-messages" // a message directory with no channel document
	// A killed `tavern sync --clone`'s copy of the store next to it
	// (.tavern.clone-<pid>, of a process that no longer runs).
	FindingCloneLeftover = "clone-leftover"
	// A killed `tavern restore`'s new store being assembled next to the
	// store (.tavern.restore-<time>-<pid>, of a process that no longer runs).
	FindingRestoreLeftover = "restore-leftover"
	// This clone's .machine holds a name every sync and claims engine
	// refuses (written by an older tavern, or by hand).
	FindingMachineName = "machine-name"
)

// LockFree reports whether nobody holds the lock of key, without
// creating its file (a missing file is free) and without keeping it
// open: for checks that must change nothing, and the liveness probe of
// every reaper and every "is it alive?".
//
// It probes with a shared, non-blocking flock. Holders lock exclusively,
// so a holder makes it report held; probes share, so two processes
// probing at the same instant never see each other as a live holder (an
// exclusive try would: for that instant the prober is the holder, and a
// dead agent looks alive to the other prober). A holder taking the lock
// exclusively (TryLock) at the instant of a probe may find it busy:
// callers that start holding wait a moment (LockContext) instead.
func (s *Store) LockFree(key string) (bool, error) {
	path, err := s.lockPath(key)
	if err != nil {
		return false, err
	}
	fd, err := openRaw(path, unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, pathErr("lock", key, err)
	}
	defer unix.Close(fd)
	err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	for err == unix.EINTR {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
	}
	switch err {
	case nil:
		unix.Flock(fd, unix.LOCK_UN)
		return true, nil
	case unix.EWOULDBLOCK:
		return false, nil
	default:
		return false, pathErr("lock", key, err)
	}
}

// LockKeys lists the keys of the lock files under .locks/.
func (s *Store) LockKeys() ([]string, error) {
	root := filepath.Join(s.root, locksDir)
	var keys []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if e.Type().IsRegular() && strings.HasSuffix(p, ".lock") {
			rel, _ := filepath.Rel(root, p)
			keys = append(keys, strings.TrimSuffix(filepath.ToSlash(rel), ".lock"))
		}
		return nil
	})
	return keys, err
}

// RemoveLock deletes the lock file of key if nobody holds it (under the
// lock, so that no acquirer is left on an orphaned inode). It reports
// whether it did.
func (s *Store) RemoveLock(key string) (bool, error) {
	l, ok, err := s.tryLock(key, func(fl *flock.Flock) (bool, error) { return fl.TryLock() })
	if err != nil || !ok {
		return false, err
	}
	return true, l.Remove()
}

// maxNotedPaths bounds the paths a note names; the count says the rest.
const maxNotedPaths = 3

// DocLockFindings reports the document lock files (.locks/docs/) of
// documents that no longer exist and that nobody holds, as one note:
// what a removal or move that could not take its lock file along (a
// concurrent writer, another machine's sync, an older tavern) left.
// They are harmless (a lock file is not a document); Repair removes
// each it can lock without waiting, and whose document is still absent
// under the lock, and leaves a held one.
func (s *Store) DocLockFindings() ([]Finding, error) {
	keys, err := s.LockKeys()
	if err != nil {
		return nil, err
	}
	var stale []string // document paths
	for _, key := range keys {
		rel, ok := strings.CutPrefix(key, "docs/")
		if !ok {
			continue
		}
		full, err := s.abs(rel)
		if err != nil {
			continue
		}
		if _, err := os.Lstat(full); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if free, err := s.LockFree(key); err != nil || !free {
			continue
		}
		stale = append(stale, rel)
	}
	if len(stale) == 0 {
		return nil, nil
	}
	named := strings.Join(stale[:min(len(stale), maxNotedPaths)], ", ")
	if len(stale) > maxNotedPaths {
		named += ", ..."
	}
	what := "lock file of a document that no longer exists"
	if len(stale) > 1 {
		what = "lock files of documents that no longer exist"
	}
	return []Finding{{Kind: FindingStaleLock, Path: locksDir + "/docs/", Note: true,
		Detail: fmt.Sprintf("%d %s (%s): harmless, --fix removes them", len(stale), what, named),
		Repair: func() error {
			var errs []error
			for _, rel := range stale {
				l, ok, err := s.TryLock(DocLockKey(rel))
				if err != nil {
					errs = append(errs, err)
				}
				if !ok {
					continue // held again: in use, not stale
				}
				if _, err := s.removeDocLock(l, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, pathErr("remove lock", DocLockKey(rel), err))
				}
			}
			return errors.Join(errs...)
		}}}, nil
}

// TempFindings lists the files in .tmp/ that nobody will reuse: temp
// files and spares whose process is gone from this host (by the pid in
// their name: no such process, or one started after the file was left
// there, so the pid was reused), other files (an index section's temp
// file) older than MinTempAge, and any file older than StaleTemp. The pid test only holds on this host: run
// doctor where the store's writers run. Repair removes the file.
func (s *Store) TempFindings() ([]Finding, error) {
	dir := filepath.Join(s.root, tmpDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Finding
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		var st unix.Stat_t
		full := filepath.Join(dir, e.Name())
		if unix.Lstat(full, &st) != nil {
			continue
		}
		left := time.Unix(st.Ctim.Unix()) // when it was made or renamed into .tmp/
		why := ""
		switch {
		case now.Sub(fi.ModTime()) > StaleTemp && now.Sub(left) > StaleTemp:
			why = "older than " + StaleTemp.String()
		default:
			p, _, ok := strings.Cut(e.Name(), "-")
			pid, err := strconv.Atoi(p)
			switch {
			case ok && err == nil:
				// Named by its process: in flight or a spare as long as
				// that process lives.
				if dead, how := processGoneSince(pid, left); dead {
					why = how
				}
			case now.Sub(left) > MinTempAge:
				// Another writer's (an index section's temp file): held
				// for milliseconds.
				why = "left over for " + now.Sub(left).Round(time.Second).String()
			}
		}
		if why == "" {
			continue
		}
		name := e.Name()
		out = append(out, Finding{Kind: FindingTempFile, Path: tmpDir + "/" + name, Detail: why,
			Repair: func() error {
				err := os.Remove(full)
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}})
	}
	return out, nil
}

// processGoneSince reports whether process pid (of this host) that left
// a file at time left is gone: no such process now, or the process with
// that pid started after left (a reused pid).
func processGoneSince(pid int, left time.Time) (bool, string) {
	if pid <= 0 {
		return false, ""
	}
	if pid == os.Getpid() {
		return false, ""
	}
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return true, "its process " + strconv.Itoa(pid) + " is gone"
	}
	if started, ok := processStart(pid); ok && started.After(left.Add(time.Second)) {
		return true, "its process " + strconv.Itoa(pid) + " is gone (the pid was reused)"
	}
	return false, ""
}

// processStart is when process pid started (Linux /proc), to tell a
// reused pid.
func processStart(pid int) (time.Time, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22: starttime, in clock ticks since boot
	if err != nil {
		return time.Time{}, false
	}
	boot, ok := bootTime()
	if !ok {
		return time.Time{}, false
	}
	const hz = 100 // USER_HZ: 100 on every Linux ABI Go supports
	return boot.Add(time.Duration(ticks) * time.Second / hz), true
}

func bootTime() (time.Time, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return time.Unix(n, 0), true
			}
		}
	}
	return time.Time{}, false
}
