package docstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"

	"github.com/tavernhq/tavern/schema"
)

// Engine-private directories inside .tavern/. Nothing in them is a document.
const (
	tmpDir   = ".tmp"
	locksDir = ".locks"
	trashDir = ".trash"
	// ConfigFile is the store configuration document.
	ConfigFile = "tavern.md"
	// DirName is the name of the store directory searched for by Find.
	DirName = ".tavern"
)

// Store is an open .tavern directory.
type Store struct {
	root          string // absolute, symlinks resolved
	durable       bool
	observers     []func(Mutation)
	rules         []namedRule   // rules.go
	amends        []namedAmend  // rules.go
	checks        []namedCheck  // check.go
	owners        []namedOwner  // rules.go
	lockers       []namedLocker // rules.go
	createLockers []namedLocker // rules.go: AddCreateLocker
	spares        sparePool     // retired files for reuse (spare.go)
	lockOnce      sync.Once
	lockc         *lockCache // open lock files (lockcache.go)
	tmpOnce       sync.Once
	tmpfd         int   // .tmp/, for spares (dir.go); -1 if it cannot be opened
	cfgErr        error // tavern.md's first problem when opened (ConfigErr)
}

// Mutation describes a change the engine made, for journaling.
type Mutation struct {
	Op   string // "create", "update", "delete", "move"
	Path string // document path after the change
	From string // for "move": the path before
	Doc  *Doc   // the document as written (nil for delete)
	Prev *Doc   // the document before the change, where known
	Rev  string // the revision written when Doc is nil (WriteFile)
	// Derived is what the store's amends attached to the write
	// (Write.Attach): package agents attaches the "agent.state" events of
	// a state that `set` or `edit` changed; journal.RecordMutations
	// journals the journal.Events among them after the mutation's own.
	Derived []any
}

// Observe registers fn to be called after every successful mutation made
// through this Store, after the observers registered before it. The watcher
// package uses it to journal engine mutations; fn must not call back into
// the Store's mutating methods. Register observers before sharing the
// Store between goroutines.
func (s *Store) Observe(fn func(Mutation)) { s.observers = append(s.observers, fn) }

func (s *Store) notify(m Mutation) {
	for _, fn := range s.observers {
		fn(m)
	}
}

// Find searches start and its parents for a .tavern directory, like git
// does for .git, and returns its absolute path. In a linked git worktree
// (`git worktree add`, a drone's --worktree) the store is the main
// worktree's, as git's objects are: a .tavern/ there is a checkout of a
// store committed to git, a copy that the engine does not write (its
// gates are not the ones waiting, and writes to it would land on the
// worktree's branch); with the store not in git there is none, and the
// main worktree's is found as well.
func Find(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	first := filepath.Join(dir, DirName)
	linked := "" // the main worktree of the first linked worktree passed
	for {
		if linked == "" {
			linked = mainWorktree(dir)
		}
		cand := filepath.Join(dir, DirName)
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			if m := filepath.Join(linked, DirName); linked != "" && isDir(m) {
				return m, nil
			}
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			if m := filepath.Join(linked, DirName); linked != "" && isDir(m) {
				return m, nil
			}
			return "", noStore("find", first, ErrNoStore)
		}
		dir = parent
	}
}

// mainWorktree is the directory of the main worktree of the repository
// when dir is the top of a linked worktree (its .git is a file naming
// <main>/.git/worktrees/<name>, whose commondir is <main>/.git); "" for
// anything else (a main worktree, a bare repository's worktree, no git).
func mainWorktree(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil { // no .git, or a directory: not a linked worktree
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	c, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil { // a submodule's .git file: no commondir
		return ""
	}
	common := strings.TrimSpace(string(c))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitdir, common)
	}
	common = filepath.Clean(common)
	if filepath.Base(common) != ".git" {
		return "" // a bare repository: no main worktree
	}
	main := filepath.Dir(common)
	if main == filepath.Clean(dir) {
		return ""
	}
	return main
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Open opens the store at dir, the .tavern directory itself. A tavern.md
// that does not parse, holds a value its schema refuses or a key it does
// not know is refused with its first problem (a *ParseError or
// *schema.FieldError at tavern.md:line:col): every command would
// otherwise run on a default the user did not ask for.
func Open(dir string) (*Store, error) {
	s, err := OpenAnyConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := s.ConfigErr(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenAnyConfig is Open that opens a store whose tavern.md is invalid
// too, for the commands that report or repair it (check, doctor, set
// and edit of tavern.md); ConfigErr says what is wrong with it.
func OpenAnyConfig(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, noStore("open", abs, pathErr("open", abs, ErrNoStore))
		}
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(root, ConfigFile)); err != nil || !fi.Mode().IsRegular() {
		return nil, pathErr("open", abs, ErrNoStore)
	}
	s := &Store{root: root, durable: true}
	s.spares.warmup = spareWarmup
	for _, d := range []string{tmpDir, locksDir, trashDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o777); err != nil {
			return nil, err
		}
	}
	// One read of tavern.md, already made for durability, checks it all.
	if cfg, err := s.Get(ConfigFile); err != nil {
		s.cfgErr = err
	} else if errs := cfg.Validate(false); len(errs) > 0 {
		s.cfgErr = errs[0]
	} else if cfg.String("durability") == "relaxed" {
		s.durable = false
	}
	s.removeStaleTemps(time.Now())
	return s, nil
}

// enclosingStore is the .tavern directory (with its tavern.md) that dir
// lies inside, or "".
func enclosingStore(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for p := filepath.Dir(abs); p != filepath.Dir(p); p = filepath.Dir(p) {
		if filepath.Base(p) != DirName {
			continue
		}
		if _, err := os.Stat(filepath.Join(p, ConfigFile)); err == nil {
			return p
		}
	}
	return ""
}

// InitDirs are the directories `tavern init` creates.
var InitDirs = []string{"agents", "constitutions", "queues", "commitments", "channels", "messages", "notes",
	"tuples", "memory", "knowledge", "pools", "questions", "bookmarks", "events", tmpDir, locksDir, trashDir,
	"plans", "gates", "approvals", "merges", "usage", "budgets"}

// Init creates a store at dir (the .tavern directory) with its config
// and kind directories. It is idempotent: existing files are kept.
// created reports whether tavern.md was new. A dir inside another
// store's .tavern directory is refused (ErrInsideStore), --nested or
// not: its files would sit among that store's documents.
func Init(dir, name string) (s *Store, created bool, err error) {
	if outer := enclosingStore(dir); outer != "" {
		return nil, false, pathErr("init", dir, fmt.Errorf("%w %s", ErrInsideStore, outer))
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, false, err
	}
	for _, d := range InitDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			return nil, false, err
		}
	}
	if err := writeGitignore(dir); err != nil {
		return nil, false, err
	}
	cfgPath := filepath.Join(dir, ConfigFile)
	if _, err := os.Lstat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		s := &Store{durable: true}
		if s.root, err = filepath.EvalSymlinks(dir); err != nil {
			return nil, false, err
		}
		body := []byte("\n# Tavern store\n\nThis directory is the coordination state of the project. Every file is\n" +
			"markdown with YAML frontmatter; edit by hand or with `tavern`.\n")
		doc, err := New(schema.Config, []Field{
			{Key: schema.VersionField, Value: schema.Config.Version},
			{Key: "name", Value: name},
			{Key: "durability", Value: "durable"},
			{Key: "created", Value: time.Now()},
		}, body)
		if err != nil {
			return nil, false, err
		}
		if err := s.createFile(ConfigFile, doc.Bytes(), 0); err != nil && !errors.Is(err, ErrExist) {
			return nil, false, err
		}
		created = true
	}
	s, err = Open(dir)
	return s, created, err
}

// Gitignore is the .gitignore `tavern init` writes into .tavern/: dot
// names are engine-private (lock files, write staging, the index cache,
// the trash, tuples being taken), everything else is a document or the
// journal. `git add .tavern` then adds exactly those. A store shared by
// several machines travels on its own ref instead (tavern sync), and the
// project ignores .tavern/ (README, "Several machines").
const Gitignore = `# Written by tavern init. Dot names are engine-private: lock files,
# write staging, the index cache, the trash, tuples being taken. The rest
# is documents and the event journal: on one machine, commit it with
# ` + "`git add .tavern`" + `. With ` + "`tavern sync`" + ` (several machines) it travels on its
# own ref instead: add .tavern/ to the project's .gitignore.
.*
!.gitignore
`

// writeGitignore writes dir/.gitignore unless one exists (a person may
// have edited it).
func writeGitignore(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(Gitignore)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ConfigErr is tavern.md's first problem as the store was opened (a
// *ParseError or *schema.FieldError), or nil. Only a store opened with
// OpenAnyConfig has one.
func (s *Store) ConfigErr() error { return s.cfgErr }

// Root returns the absolute path of the .tavern directory.
func (s *Store) Root() string { return s.root }

// Durable reports whether writes are fsynced.
func (s *Store) Durable() bool { return s.durable }

// Abs returns the absolute file path of a document path, after checking
// that it stays inside the store.
func (s *Store) Abs(rel string) (string, error) { return s.abs(rel) }

// abs validates rel and joins it to the root. It refuses absolute paths,
// "..", engine-private names and symlinks that resolve outside the store.
func (s *Store) abs(rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) || strings.ContainsRune(rel, 0) {
		return "", ErrUnsafePath
	}
	clean := filepath.ToSlash(filepath.Clean(rel))
	if clean == ".." || strings.HasPrefix(clean, "../") || clean != strings.TrimPrefix(rel, "./") {
		return "", ErrUnsafePath
	}
	full := filepath.Join(s.root, filepath.FromSlash(clean))
	// Fast path: the root is already resolved, so if no component below
	// it is a symlink the path is inside the store. One lstat per
	// component, instead of EvalSymlinks' walk of the whole absolute path
	// (several times slower on the claim path).
	if noLinksBelow(s.root, clean) {
		return full, nil
	}
	// Resolve the deepest existing ancestor: a symlink anywhere on the
	// way must still land inside the store.
	probe := full
	for {
		real, err := filepath.EvalSymlinks(probe)
		if err == nil {
			if real != s.root && !strings.HasPrefix(real, s.root+string(filepath.Separator)) {
				return "", ErrUnsafePath
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(probe)
		if parent == probe || len(parent) < len(s.root) {
			break
		}
		probe = parent
	}
	return full, nil
}

// noLinksBelow reports whether no existing component of clean (a cleaned
// slash path relative to root) is a symlink. A missing component ends the
// walk: nothing below it exists to be a link.
func noLinksBelow(root, clean string) bool {
	p := root
	for _, part := range strings.Split(clean, "/") {
		p += string(filepath.Separator) + part
		fi, err := os.Lstat(p)
		if err != nil {
			return errors.Is(err, fs.ErrNotExist)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// Rel converts an absolute file path to a document path, refusing paths
// outside the store.
func (s *Store) Rel(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if dir, err2 := filepath.EvalSymlinks(filepath.Dir(abs)); err2 == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	rel, err := filepath.Rel(s.root, abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", pathErr("resolve", path, ErrUnsafePath)
	}
	return filepath.ToSlash(rel), nil
}

// Contains reports whether path (relative to the working directory) is
// the store's directory or lies inside it, following symlinks of the
// part of path that exists: a destination for files that are not
// documents must not be there (see ErrInsideStore).
func (s *Store) Contains(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			break
		}
		rest = filepath.Join(filepath.Base(abs), rest)
		abs = parent
	}
	return insideDir(s.root, abs)
}

// RelLink is Rel for a path that may itself be a symbolic link: the
// directories above it are resolved, the last element is not followed,
// so a link inside the store is named by its own place (where Get reports
// it as a link that leaves the store, dangles, or is not a document file)
// rather than refused for where it points.
func (s *Store) RelLink(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Lstat(abs); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return s.Rel(abs)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	rel, err := filepath.Rel(s.root, abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", pathErr("resolve", path, ErrUnsafePath)
	}
	return filepath.ToSlash(rel), nil
}

// ReadFile reads a file inside the store, refusing files over MaxDocSize
// and anything but a regular file (*OddFileError).
func (s *Store) ReadFile(rel string) ([]byte, error) {
	data, _, err := s.readFile(rel)
	return data, err
}

// readFile is ReadFile that also returns the file's permission bits.
func (s *Store) readFile(rel string) ([]byte, uint32, error) {
	full, err := s.abs(rel)
	if err != nil {
		return nil, 0, pathErr("read", rel, err)
	}
	// A FIFO or device would block or never end: it is refused from its
	// lstat, never opened; ReadFileAbs opens without blocking and checks
	// the type again on the descriptor (a file swapped in since).
	var st unix.Stat_t
	if err := unix.Lstat(full, &st); err != nil {
		return nil, 0, pathErr("read", rel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, oddErr(rel, st.Mode, nil)
	}
	fd, err := openRaw(full, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, oddErr(rel, 0, err)
	}
	data, perm, err := readFD(fd)
	if err != nil {
		var tl errTooLarge
		switch {
		case errors.As(err, &tl):
			return nil, 0, &ParseError{Path: rel, Msg: tl.Error(), Err: ErrTooLarge}
		case errors.Is(err, errNotRegular):
			return nil, 0, &OddFileError{Op: "read", Path: rel, What: "not a regular file"}
		}
		return nil, 0, pathErr("read", rel, err)
	}
	return data, perm, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Get reads and parses the document at rel. The Doc is returned as
// written; Doc.View gives the migrated view.
func (s *Store) Get(rel string) (*Doc, error) {
	data, perm, err := s.readFile(rel)
	if err != nil {
		return nil, err
	}
	d, err := Parse(rel, data)
	if err != nil {
		return nil, err
	}
	d.perm = perm
	s.classify(d)
	return d, nil
}

func (s *Store) classify(d *Doc) { classify(d) }

// classify sets d's kind and name from its path.
func classify(d *Doc) {
	if k, name, err := schema.NameOfPath(d.Path); err == nil {
		d.Kind = k
		d.Name = name
	}
}

// Create writes a new document at rel, failing with ErrExist if there is
// one. The document is validated first; nothing is written if invalid.
func (s *Store) Create(rel string, d *Doc) error {
	return s.CreateWith(rel, d, CreateOptions{})
}

// CreateOptions qualify a create (CreateWith).
type CreateOptions struct {
	// Force is passed to the rules as Write.Force, as UpdateOptions.Force.
	Force bool
	// Held are locks the caller holds already (engine code that creates
	// a gate under its item's lock): the create lockers' locks
	// (AddCreateLocker) among them are not taken again, as a Store's
	// locks are not re-entrant.
	Held []string
}

// CreateWith is Create with options.
func (s *Store) CreateWith(rel string, d *Doc, opt CreateOptions) error {
	d.Path = rel
	s.classify(d)
	if d.Kind == nil {
		return &schema.UnknownKindError{Path: rel}
	}
	derived, err := s.amend(Write{Op: "create", Path: rel, Doc: d, Force: opt.Force})
	if err != nil {
		return err
	}
	// The create lockers' locks, around the rules and the write: what a
	// rule looks at (a gate's item) does not change before the write.
	if len(s.createLockers) > 0 {
		var keys []string
		for _, k := range lockerKeys(s.createLockers, rel, d) {
			if !slices.Contains(opt.Held, k) {
				keys = append(keys, k)
			}
		}
		h, err := s.lockSorted(keys)
		if err != nil {
			return err
		}
		defer h.release()
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return &ValidationError{Path: rel, Errors: errs}
	}
	if err := s.checkRules(Write{Op: "create", Path: rel, Doc: d, Force: opt.Force}); err != nil {
		return err
	}
	data := d.Bytes()
	if err := s.createFile(rel, data, permOf(d)); err != nil {
		return err
	}
	d.Rev = Revision(data)
	s.notify(Mutation{Op: "create", Path: rel, Doc: d, Derived: derived})
	return nil
}

// Update applies fn to the current version of the document under its
// lock and writes the result if fn changed it. If fn returns an error,
// nothing is written. A document that a person edits concurrently (without
// the lock) is detected by its revision and reported as ErrConflict.
func (s *Store) Update(rel string, fn func(*Doc) error) (*Doc, error) {
	return s.UpdateIf(rel, "", fn)
}

// UpdateIf is Update that fails with ErrConflict unless the document's
// current revision is baseRev (optimistic concurrency). An empty baseRev
// accepts any revision.
func (s *Store) UpdateIf(rel, baseRev string, fn func(*Doc) error) (*Doc, error) {
	return s.UpdateWith(rel, UpdateOptions{IfRev: baseRev}, fn)
}

// UpdateOptions qualify an update (UpdateWith).
type UpdateOptions struct {
	// IfRev makes the update fail with ErrConflict unless the document's
	// current revision is IfRev ("" accepts any).
	IfRev string
	// Force is passed to the rules as Write.Force: the writer overrides
	// what a rule lets be overridden (package agents: a forced state).
	Force bool
	// KeepUpdated: the writer set `updated` itself, maybe to the value
	// it had (`tavern set REF updated=V`): it is not stamped (stampUpdated).
	KeepUpdated bool
}

// UpdateWith is Update with options. An IfRev that is no revision
// (ValidRevision) is refused with a *RevError (ErrBadRev) before the
// document is read: no document could ever match it.
func (s *Store) UpdateWith(rel string, opt UpdateOptions, fn func(*Doc) error) (*Doc, error) {
	if opt.IfRev != "" && !ValidRevision(opt.IfRev) {
		return nil, &RevError{Op: "update", Path: rel, Rev: opt.IfRev}
	}
	// The lockers' locks first (an item's lock, which its claims and
	// completions hold instead of the document lock), as Delete takes
	// them: a set that read a pending item must not write it back after
	// a claim moved it, beside the claimed copy (its change then lost).
	// Those of the document as fn leaves it too (a gate given another
	// item: that item's), taken again in order if another holds one
	// (relock): fn may run more than once.
	return s.relock(rel, nil, func(h *heldLocks) (*Doc, error) {
		l, err := s.lockExistingDoc("read", rel)
		if err != nil {
			return nil, err
		}
		defer l.Unlock()
		return s.updateLocked(rel, opt, fn, h)
	})
}

// UpdateHeld is Update for a caller that already holds the lock which
// serialises writers of rel (e.g. a queue item's claim lock, which
// Update takes through the lockers, AddLocker). l is not used beyond
// documenting that contract.
func (s *Store) UpdateHeld(l *Lock, rel string, fn func(*Doc) error) (*Doc, error) {
	return s.updateHeld(rel, UpdateOptions{}, fn)
}

func (s *Store) updateHeld(rel string, opt UpdateOptions, fn func(*Doc) error) (*Doc, error) {
	return s.updateLocked(rel, opt, fn, nil)
}

// updateLocked is updateHeld by a writer that holds the lockers' locks
// h (nil: a caller that holds what it needs, UpdateHeld): those the
// document before and after fn names that h lacks are taken (lockMore),
// before the rules look at the write.
func (s *Store) updateLocked(rel string, opt UpdateOptions, fn func(*Doc) error, h *heldLocks) (*Doc, error) {
	d, err := s.Get(rel)
	if err != nil {
		return nil, err
	}
	if opt.IfRev != "" && d.Rev != opt.IfRev {
		return nil, &ConflictError{Path: rel, Want: opt.IfRev, Got: d.Rev}
	}
	prev := d.Clone()
	if err := fn(d); err != nil {
		return nil, err
	}
	derived, err := s.amend(Write{Op: "update", Path: rel, Prev: prev, Doc: d, Force: opt.Force})
	if err != nil {
		return nil, err
	}
	data := d.Bytes()
	if bytes.Equal(data, prev.Bytes()) {
		return d, nil
	}
	if !opt.KeepUpdated {
		if err := stampUpdated(prev, d, time.Now()); err != nil {
			return nil, err
		}
		data = d.Bytes()
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &ValidationError{Path: rel, Errors: errs}
	}
	if h != nil {
		need := append(lockerKeys(s.lockers, rel, prev), lockerKeys(s.lockers, rel, d)...)
		if err := s.lockMore(h, need); err != nil {
			return nil, err
		}
	}
	if err := s.checkRules(Write{Op: "update", Path: rel, Prev: prev, Doc: d, Force: opt.Force}); err != nil {
		return nil, err
	}
	// A hand edit that raced us since Get: do not overwrite it.
	if cur, err := s.ReadFile(rel); err != nil || Revision(cur) != prev.Rev {
		got := "deleted"
		if err == nil {
			got = Revision(cur)
		}
		return nil, &ConflictError{Path: rel, Want: prev.Rev, Got: got}
	}
	if err := s.publish(rel, data, false, 0); err != nil {
		return nil, err
	}
	d.Rev = Revision(data)
	s.notify(Mutation{Op: "update", Path: rel, Doc: d, Prev: prev, Derived: derived})
	return d, nil
}

// Delete moves the document to .trash/ (never an unlink of user data),
// with the documents it owns (DeleteAll). Engine files (EngineFile:
// tavern.md, the journal, dot names) are refused with ErrEngineFile.
func (s *Store) Delete(rel string) error {
	_, err := s.DeleteAll(rel)
	return err
}

// DeleteAll is Delete that also moves to .trash/ the documents rel owns
// (AddOwner: an item's gates, a channel's messages and notes), which would
// otherwise name a document that is gone. It returns the paths it
// removed, rel first; on an error, those it removed before it.
func (s *Store) DeleteAll(rel string) ([]string, error) {
	return s.deleteAll(rel, nil)
}

// deleteAll is DeleteAll by a caller that holds the lockers' locks keys.
func (s *Store) deleteAll(rel string, keys []string) ([]string, error) {
	if EngineFile(rel) {
		return nil, pathErr("delete", rel, ErrEngineFile)
	}
	// The lockers' locks (an item's, a channel's) are held until what rel
	// owns is gone too: a claim of the item, or a send to the channel,
	// in between would find the owner gone and its parts still there (a
	// send made the channel again, its messages then trashed under it).
	release, keys, err := s.moreWriterLocks(rel, nil, keys)
	if err != nil {
		return nil, err
	}
	defer release()
	prev, err := s.delete(rel)
	if err != nil {
		return nil, err
	}
	removed := []string{rel}
	var dirs []string
	// After rel's document lock is released: an owned document's lock
	// is never taken inside its owner's.
	for _, p := range s.owned(prev) {
		if _, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(p))); err != nil {
			continue
		}
		got, err := s.deleteAll(p, keys)
		removed = append(removed, got...)
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // gone since: as wanted
			return removed, err
		}
		if dir := path.Dir(p); strings.Contains(dir, "/") && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	// A directory of the owner's own (messages/<channel>/, not gates/)
	// left empty goes too: left, it would name an owner that is gone.
	// Remove fails on one that is not empty (a file came since): kept.
	for _, dir := range dirs {
		_ = os.Remove(filepath.Join(s.root, filepath.FromSlash(dir)))
	}
	return removed, nil
}

// CheckDelete says whether a Delete (DeleteAll) of rel would be refused,
// by the store or by a rule, without removing anything: a command that
// removes several documents asks for each first, so one refused leaves
// every file as it was. Rules see the documents as they are now.
func (s *Store) CheckDelete(rel string) error {
	if EngineFile(rel) {
		return pathErr("delete", rel, ErrEngineFile)
	}
	prev, _ := s.Get(rel)
	// What rel owns is removed after it, by then without its owner:
	// checked then (DeleteAll), not here.
	return s.checkRules(Write{Op: "delete", Path: rel, Prev: prev})
}

// Owned lists the documents rel owns (AddOwner), which DeleteAll
// removes with it.
func (s *Store) Owned(rel string) []string {
	d, err := s.Get(rel)
	if err != nil {
		return nil
	}
	return s.owned(d)
}

// DeleteHeld is Delete (without what rel owns) for a caller that already
// holds the lock its Locker names (e.g. a queue item's lock, while it
// trashes a crash leftover copy). l is not used beyond documenting that
// contract.
func (s *Store) DeleteHeld(l *Lock, rel string) error {
	_, err := s.delete(rel)
	return err
}

// delete moves rel to the trash; the caller holds its lockers' locks.
func (s *Store) delete(rel string) (*Doc, error) {
	if EngineFile(rel) {
		return nil, pathErr("delete", rel, ErrEngineFile)
	}
	l, err := s.lockExistingDoc("delete", rel)
	if err != nil {
		return nil, s.goneErr(rel, err)
	}
	defer l.Unlock() // a no-op after removeDocLock
	prev, _ := s.Get(rel)
	full, err := s.abs(rel)
	if err != nil {
		return nil, pathErr("delete", rel, err)
	}
	if _, err := os.Lstat(full); err != nil {
		return nil, s.goneErr(rel, pathErr("delete", rel, unwrapPath(err)))
	}
	// A removal is a write too (package agents: an agent may not remove
	// its own commitment).
	if err := s.checkRules(Write{Op: "delete", Path: rel, Prev: prev}); err != nil {
		return nil, err
	}
	trash := filepath.Join(s.root, trashDir, time.Now().UTC().Format(trashStamp)+"-"+strings.ReplaceAll(rel, "/", "__"))
	if err := os.Rename(full, trash); err != nil {
		return nil, pathErr("delete", rel, unwrapPath(err))
	}
	// Both directories: the entry must be durably gone from one and
	// present in the other, or a crash could lose the document.
	if err := s.syncDir(filepath.Dir(full)); err != nil {
		return nil, err
	}
	if err := s.syncDir(filepath.Dir(trash)); err != nil {
		return nil, err
	}
	// The document is gone: so goes its lock file, under the lock (else
	// every path ever removed keeps one). A failure leaves a file doctor
	// reports; the delete stands.
	_, _ = s.removeDocLock(l, rel)
	s.notify(Mutation{Op: "delete", Path: rel, Prev: prev})
	return prev, nil
}

// goneErr is the error of a delete of rel that found no file (err): a
// rule's, when one says where the document went and why it may not be
// removed there (package queues: the item was claimed since rm checked
// it), else err.
func (s *Store) goneErr(rel string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if rerr := s.checkRules(Write{Op: "delete", Path: rel}); rerr != nil {
		return rerr
	}
	return err
}

// Move writes the document at from, after fn edits it, to the new path to
// and removes from. The caller holds the lock that serialises writers of
// the document. The new file is durable before the old one is removed, so
// a crash in between leaves both copies; readers resolve that by
// preferring the later state (see queues).
func (s *Store) Move(l *Lock, from, to string, fn func(*Doc) error) (*Doc, error) {
	d, err := s.Get(from)
	if err != nil {
		return nil, err
	}
	prev := d.Clone()
	if fn != nil {
		if err := fn(d); err != nil {
			return nil, err
		}
	}
	d.Path = to
	s.classify(d)
	derived, err := s.amend(Write{Op: "move", Path: to, Prev: prev, Doc: d})
	if err != nil {
		return nil, err
	}
	if err := stampUpdated(prev, d, time.Now()); err != nil {
		return nil, err
	}
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &ValidationError{Path: from, Errors: errs}
	}
	if err := s.checkRules(Write{Op: "move", Path: to, Prev: prev, Doc: d}); err != nil {
		return nil, err
	}
	data := d.Bytes()
	if err := s.createFile(to, data, permOf(d)); err != nil {
		return nil, err
	}
	fromAbs, _ := s.abs(from)
	if err := os.Remove(fromAbs); err != nil {
		return nil, pathErr("move", from, unwrapPath(err))
	}
	if err := s.syncDir(filepath.Dir(fromAbs)); err != nil {
		return nil, err
	}
	// from's lock file, unless the caller holds that lock (l): it stays
	// the caller's until it unlocks.
	s.DropDocLock(from)
	d.Rev = Revision(data)
	s.notify(Mutation{Op: "move", Path: to, From: from, Doc: d, Prev: prev, Derived: derived})
	return d, nil
}

// ListFiles returns the document paths of a kind, sorted: the documents
// under the kind's directory (Walk) that match its pattern. Stray and
// temp files are skipped.
func (s *Store) ListFiles(k *schema.Kind) ([]string, error) {
	var out []string
	dir := k.Dir()
	if dir == "" { // fixed file at the root, e.g. tavern.md
		if k.Matches(ConfigFile) {
			if _, err := os.Stat(filepath.Join(s.root, ConfigFile)); err == nil {
				out = append(out, ConfigFile)
			}
		}
		return out, nil
	}
	err := s.Walk(dir, func(rel string) error {
		if k.Matches(rel) {
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// List reads every document of a kind. Documents that cannot be read or
// parsed are returned as errors alongside the rest; one bad file never
// hides the others.
func (s *Store) List(k *schema.Kind) ([]*Doc, []error) {
	paths, err := s.ListFiles(k)
	if err != nil {
		return nil, []error{err}
	}
	var docs []*Doc
	var errs []error
	for _, p := range paths {
		d, err := s.Get(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, d)
	}
	return docs, errs
}

// globEscape quotes the characters filepath.Match treats specially, so a
// name such as "*" matches only a file named "*" and never stands for
// whatever documents happen to exist.
func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

// Resolve turns a reference into a document path. A reference is
// "kind/name" (singular or plural kind: agents/alice, agent/alice), a name
// with fewer parts where the rest is unambiguous (items/ID, commitments/ID),
// or a path relative to the store root.
func (s *Store) Resolve(ref string) (string, error) {
	ref = strings.TrimPrefix(filepath.ToSlash(ref), "./")
	// A store path, with or without its .md (queues/q/pending/ID, as
	// agents/alice is agents/alice.md).
	if p := ref; strings.HasSuffix(p, ".md") || !strings.HasSuffix(p, "/") {
		withMD := strings.HasSuffix(p, ".md")
		if !withMD {
			p += ".md"
		}
		if k, _, err := schema.KindOfPath(p); err == nil && k != nil {
			// Without .md it is the kind/name the path spells (below),
			// which names the path without looking at the file.
			if _, err := s.abs(p); err != nil && withMD {
				return "", pathErr("resolve", p, err)
			}
			return p, nil
		}
	}
	kindName, name, _ := strings.Cut(ref, "/")
	k, err := schema.Lookup(kindName)
	if err != nil {
		return "", pathErr("resolve", ref, err) // the message names the whole reference
	}
	name = strings.TrimSuffix(name, ".md")
	if k.NameParts() == 0 {
		if name != "" && name != strings.TrimSuffix(path.Base(k.Pattern), ".md") { // config/tavern is tavern.md
			return "", pathErr("resolve", ref, &schema.NameError{Name: name, Reason: k.NameShape()})
		}
		return k.Path("", nil)
	}
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if err := schema.ValidName(p); err != nil {
			return "", pathErr("resolve", ref, err)
		}
	}
	if len(parts) > k.NameParts() {
		return "", pathErr("resolve", ref, &schema.NameError{Name: name, Reason: k.NameShape()})
	}
	// Fill the leading captures with wildcards and glob.
	pattern := k.Pattern
	free := k.NameParts() - len(parts)
	i := 0
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimSuffix(pattern, ".md"), "/") {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		switch {
		case !strings.HasPrefix(seg, "{"):
			b.WriteString(seg)
		case strings.Contains(seg, ":"):
			b.WriteString("*")
		case free > 0:
			b.WriteString("*")
			free--
		default:
			b.WriteString(globEscape(parts[i]))
			i++
		}
	}
	glob := b.String() + ".md"
	if free == 0 && !strings.Contains(k.Pattern, ":") {
		// Every part was given: the path is exact (not a pattern, even if
		// a name contains *, ? or [).
		return k.Path(name, nil)
	}
	matches, _ := filepath.Glob(filepath.Join(s.root, filepath.FromSlash(glob)))
	var found []string
	for _, m := range matches {
		rel, _ := filepath.Rel(s.root, m)
		rel = filepath.ToSlash(rel)
		if k.Matches(rel) {
			found = append(found, rel)
		}
	}
	switch len(found) {
	case 0:
		return "", pathErr("resolve", ref, ErrNotExist)
	case 1:
		return found[0], nil
	}
	return "", pathErr("resolve", ref, fmt.Errorf("%w: %s", ErrAmbiguous, strings.Join(found, ", ")))
}

// Docs lists the documents directly under rel, as paths relative to the
// store (rel/<name>.md), sorted: the names that pass the name rule and end
// in .md, no directories, no dot files. A missing rel is an empty list.
// For the kinds whose documents of one owner share a directory
// (memory/<agent>/, commitments/<agent>/, queues/<q>/pending/): one
// directory read instead of a walk of every owner's.
func (s *Store) Docs(rel string) ([]string, error) {
	_, ents, err := s.readDir(rel)
	var out []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".md") && schema.ValidName(n) == nil {
			out = append(out, rel+"/"+n)
		}
	}
	return out, err
}

// readDir lists rel's entries (none, without error, when rel is missing).
func (s *Store) readDir(rel string) (string, []fs.DirEntry, error) {
	full, err := s.Abs(rel)
	if err != nil {
		return "", nil, err
	}
	ents, err := os.ReadDir(full)
	if errors.Is(err, fs.ErrNotExist) {
		return full, nil, nil
	}
	return full, ents, err
}

// Subdirs lists the directories directly under rel whose names pass the
// name rule (and keep, when not nil, given the directory's full path). A
// missing rel is an empty list, not an error: a kind with no documents
// yet has no directory.
func (s *Store) Subdirs(rel string, keep func(dir string) bool) ([]string, error) {
	full, ents, err := s.readDir(rel)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && schema.ValidName(e.Name()) == nil && (keep == nil || keep(filepath.Join(full, e.Name()))) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// CheckNested returns a *NestedError if dir (a .tavern directory to be
// created) lies in the project of another store: a store in a parent
// directory, which commands run below it would otherwise use. Creating
// one there is allowed, but only on purpose (`tavern init --nested`).
// So is one in a linked git worktree of a project that has a store, even
// over a copy of it checked out there (commands there use the main
// worktree's); a store of its own elsewhere is no error. A dir inside another store's .tavern directory is the error Init gives
// (ErrInsideStore), which no flag allows.
func CheckNested(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if outer := enclosingStore(abs); outer != "" {
		// Not a store in another's project: one inside its files,
		// which --nested does not allow (Init refuses it).
		return pathErr("init", dir, fmt.Errorf("%w %s", ErrInsideStore, outer))
	}
	project := filepath.Dir(abs)
	// In a linked git worktree every command finds the main worktree's
	// store (Find), whatever is here: a store made here, or a committed
	// copy checked out here, is one nothing reads.
	if main := linkedMain(project); main != "" {
		if m := filepath.Join(main, DirName); m != abs && isDir(m) {
			return &NestedError{Path: abs, Above: m, Worktree: main}
		}
	}
	if _, err := os.Stat(filepath.Join(abs, ConfigFile)); err == nil {
		return nil // init again on a store: it only adds directories
	}
	if parent := filepath.Dir(project); parent != project {
		if above, err := Find(parent); err == nil && above != abs {
			return &NestedError{Path: abs, Above: above}
		}
	}
	return nil
}

// linkedMain is the main worktree of the first linked git worktree dir is
// in (dir or a parent of it being its top), as Find walks, or "".
func linkedMain(dir string) string {
	for {
		if m := mainWorktree(dir); m != "" {
			return m
		}
		if isDir(filepath.Join(dir, ".git")) {
			return "" // a main worktree, or a repository of its own
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Grep returns the documents directly in rel whose text contains needle,
// oldest name first. It reads every file through one handle of the
// directory (no walk of each path) and parses only those that contain
// needle: a cheap first cut for code that looks for a few documents among
// many (an agent's claims among every claimed item, on every hook of an
// agent tool). The caller still checks the fields it wants; needle only
// has to be in every document it could want. Files that vanish meanwhile
// are skipped; files that cannot be read or parsed are returned as
// errors. A missing rel has no documents.
func (s *Store) Grep(rel, needle string) ([]*Doc, []error) {
	names, err := s.Docs(rel)
	if err != nil {
		return nil, []error{err}
	}
	if len(names) == 0 {
		return nil, nil
	}
	read := func(p string) ([]byte, uint32, error) { return s.readFile(p) }
	if dir, err := s.OpenDir(rel); err == nil {
		defer dir.Close()
		read = func(p string) ([]byte, uint32, error) { return dir.readFile(p[len(rel)+1:]) }
	}
	var docs []*Doc
	var errs []error
	for _, p := range names {
		data, perm, err := read(p)
		if err != nil {
			if !errors.Is(err, ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if !bytes.Contains(data, []byte(needle)) {
			continue
		}
		d, err := Parse(p, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.perm = perm
		s.classify(d)
		docs = append(docs, d)
	}
	return docs, errs
}

// stampUpdated sets d's `updated` to now on a write of prev that did not
// set it, where the kind has the field and prev had it: every write path
// (Update and its variants, SaveEdit, Move) keeps `updated` the time of
// the last change, whoever wrote it. Sync (queues/gitsync) takes the
// later `updated` as the last writer of a field both machines changed:
// an unstamped write would lose to an older one. A writer that changes
// or removes `updated` itself keeps its value; a document written
// without one (by hand) is not given one.
func stampUpdated(prev, d *Doc, now time.Time) error {
	if d.Kind == nil || d.Kind.Field("updated") == nil || prev == nil || !prev.Has("updated") {
		return nil
	}
	if fieldText(prev.Get("updated")) != fieldText(d.Get("updated")) {
		return nil
	}
	return d.Set("updated", now)
}

// fieldText is a field's node as text, to tell whether a write changed it
// ("\x00": no such field).
func fieldText(n *yaml.Node) string {
	switch {
	case n == nil:
		return "\x00"
	case n.Kind == yaml.ScalarNode: // the usual case: no encoding
		return n.Tag + "\x00" + n.Value
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return "\x01" + n.Value
	}
	return string(b)
}
