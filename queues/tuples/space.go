package tuples

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Space is the Linda tuple space of a store: tuples/<type>/<id>.md. It also
// carries the resource tokens and path reservations built on it. A Space
// is safe for concurrent use by several goroutines; any number of
// processes may use the same store at once.
type Space struct {
	store   *docstore.Store
	journal *journal.Journal
	proj    *watcher.Projection
	now     func() time.Time
	recheck time.Duration
	poll    time.Duration

	holdMu sync.Mutex
	hold   *docstore.Lock // process-held reservations' liveness lock, once taken

	cs coordState // coordination engine, opened on first use (coord.go)
}

// SpaceOptions configure NewSpace. The zero value is the production
// setting.
type SpaceOptions struct {
	// Journal receives the tuple, token and reservation events. Nil opens
	// the store's journal; set NoJournal to run without one.
	Journal   *journal.Journal
	NoJournal bool
	// Projection, when set (a long-running process that keeps one open
	// with Watch), wakes blocked Rd/In through its WaitFor instead of a
	// private inotify watch on the type's directory.
	Projection *watcher.Projection
	// Recheck is the safety-net interval at which a blocked Rd/In re-scans
	// even without a filesystem event (a missed or overflowed event, a
	// network filesystem). Default 10s.
	Recheck time.Duration
	// LivenessPoll is how often a blocked token Acquire re-checks held
	// slots: a holder's death or a lease running out is not a filesystem
	// event, so it has to be looked at. Default 1s.
	LivenessPoll time.Duration
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// NewSpace returns the tuple space of s.
func NewSpace(s *docstore.Store, opt SpaceOptions) (*Space, error) {
	sp := &Space{store: s, journal: opt.Journal, proj: opt.Projection, now: opt.Now, recheck: opt.Recheck, poll: opt.LivenessPoll}
	if sp.now == nil {
		sp.now = time.Now
	}
	if sp.recheck <= 0 {
		sp.recheck = 10 * time.Second
	}
	if sp.poll <= 0 {
		sp.poll = time.Second
	}
	if sp.journal == nil && !opt.NoJournal {
		j, err := journal.Open(s.Root(), journal.Options{})
		if err != nil {
			return nil, err
		}
		sp.journal = j
	}
	return sp, nil
}

// Close lets go of what this Space holds for its process: reservations
// made with ReserveOptions.Process stop standing. The Space is usable
// afterwards (a new Process reservation takes a new lock).
func (sp *Space) Close() error {
	sp.holdMu.Lock()
	defer sp.holdMu.Unlock()
	if sp.hold == nil {
		return nil
	}
	err := sp.hold.Remove()
	sp.hold = nil
	return err
}

// Store returns the store the space lives in.
func (sp *Space) Store() *docstore.Store { return sp.store }

// Tuple is one tuple: a document under tuples/<type>/.
type Tuple struct {
	ID       string
	Type     string
	Path     string // store-relative path where the tuple lived when read
	Created  time.Time
	Expires  time.Time      // zero: never
	Captures map[string]any // values of the pattern's formals
	Doc      *docstore.Doc
}

// Values returns the tuple's own fields: the frontmatter without the
// bookkeeping fields (schema_version, id, created, updated, expires).
func (t *Tuple) Values() map[string]any {
	f := t.Doc.Fields()
	for _, k := range reservedFields {
		delete(f, k)
	}
	delete(f, "expires")
	return f
}

// reservedFields are set by the engine and cannot be tuple values.
var reservedFields = []string{schema.VersionField, "id", "created", "updated"}

// stagingDir is where a claimed tuple waits while its claimer works on it
// (a consumer archiving it, a token holder). The leading dot keeps it out
// of the tuple kind's pattern, docstore.List and the watcher's projection.
const stagingDir = ".taken"

func typeDir(typ string) string { return "tuples/" + typ }

func tuplePath(typ, id string) string { return "tuples/" + typ + "/" + id + ".md" }

func takenPath(typ, id string) string { return "tuples/" + typ + "/" + stagingDir + "/" + id + ".md" }

func tupleLockKey(typ, id string) string { return "tuples/" + typ + "/" + id }

// trashPath is where a consumed or collected tuple is archived: the
// store's .trash/, named like docstore.Delete names deleted documents.
func (sp *Space) trashPath(typ, id string) string {
	return ".trash/" + sp.now().UTC().Format("20060102T150405.000000000") + "-tuples__" + typ + "__" + id + ".md"
}

func checkType(typ string) error {
	if err := schema.ValidName(typ); err != nil {
		return fmt.Errorf("tuple type: %w", err)
	}
	return nil
}

// OutOptions are the optional parts of a tuple.
type OutOptions struct {
	TTL  time.Duration // > 0 sets expires = now + TTL
	Body []byte        // markdown body
	// Edit, when set, is applied to the new document after the fields
	// (the CLI sets YAML-typed values with it).
	Edit func(*docstore.Doc) error
}

// Out writes a new tuple of type typ with the given values, in order, and
// returns it. The write is durable before Out returns; blocked readers
// are woken by its appearance in the directory. The id is a UUIDv7, so
// file names sort by age and Rd/In take the oldest match first. Token
// slots and reservations are written by their own rules only (InitToken,
// Reserve): Out refuses their types (*EngineTypeError).
func (sp *Space) Out(typ string, values []docstore.Field, opt OutOptions) (*Tuple, error) {
	if err := checkType(typ); err != nil {
		return nil, err
	}
	if err := engineType("out", typ); err != nil {
		return nil, err
	}
	return sp.out(typ, values, opt)
}

// out is Out for any type: the token and reservation rules write with it.
func (sp *Space) out(typ string, values []docstore.Field, opt OutOptions) (*Tuple, error) {
	// A new type is a new name, and follows the plain name rule as new
	// queues and tokens do ('tuple out "A B"' made tuples/A B/); types
	// made before the rule are still written to.
	if _, err := os.Lstat(filepath.Join(sp.store.Root(), "tuples", typ)); errors.Is(err, fs.ErrNotExist) {
		if err := schema.ValidPlainName("tuple type", typ); err != nil {
			return nil, err
		}
	}
	if opt.TTL < 0 {
		return nil, fmt.Errorf("%w: negative TTL %s", ErrBadTuple, opt.TTL)
	}
	now := sp.now()
	id := docstore.NewID()
	fields := []docstore.Field{{Key: schema.VersionField, Value: schema.Tuple.Version}, {Key: "id", Value: id}, {Key: "created", Value: now}}
	if opt.TTL > 0 {
		fields = append(fields, docstore.Field{Key: "expires", Value: now.Add(opt.TTL)})
	}
	for _, kv := range values {
		k := kv.Key
		if isReserved(k) {
			return nil, fmt.Errorf("%w: %q is set by the engine", ErrBadTuple, k)
		}
		fields = append(fields, docstore.Field{Key: k, Value: kv.Value})
	}
	body := opt.Body
	if len(body) == 0 || body[0] != '\n' {
		body = append([]byte("\n"), body...)
	}
	d, err := docstore.New(schema.Tuple, fields, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTuple, err)
	}
	if opt.Edit != nil {
		if err := opt.Edit(d); err != nil {
			return nil, err
		}
		if d.String("id") != id {
			return nil, fmt.Errorf("%w: %q is set by the engine", ErrBadTuple, "id")
		}
	}
	rel := tuplePath(typ, id)
	if err := sp.store.Create(rel, d); err != nil {
		return nil, err
	}
	t := sp.tupleOf(typ, d)
	sp.event("tuple.out", journal.Event{Path: rel, Rev: d.Rev, Data: map[string]any{"type": typ, "id": id}})
	return t, nil
}

func isReserved(k string) bool {
	for _, r := range reservedFields {
		if k == r {
			return true
		}
	}
	return false
}

func (sp *Space) tupleOf(typ string, d *docstore.Doc) *Tuple {
	t := &Tuple{Type: typ, Path: d.Path, Doc: d, ID: d.String("id")}
	if t.ID == "" {
		t.ID = strings.TrimSuffix(filepath.Base(d.Path), ".md")
	}
	t.Created, _ = d.Time("created")
	t.Expires, _ = d.Time("expires")
	return t
}

// expired reports whether the tuple's expires time has passed. A value
// that is not a timestamp counts as no expiry (ls and check show it).
func (sp *Space) expired(d *docstore.Doc) bool {
	exp, ok := d.Time("expires")
	return ok && !exp.IsZero() && !sp.now().Before(exp)
}

// names lists the tuple ids of a type in file-name (= age) order.
func (sp *Space) names(typ string) ([]string, error) {
	dir, err := sp.store.Abs(typeDir(typ))
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || schema.ValidName(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// scanAll calls fn with every tuple of typ, expired or not, oldest first.
// Files that vanish under it are skipped; files that do not parse are
// passed to bad.
func (sp *Space) scanAll(typ string, bad func(error), fn func(d *docstore.Doc)) error {
	ids, err := sp.names(typ)
	if err != nil {
		return err
	}
	get, done := sp.getter(typ)
	defer done()
	for _, id := range ids {
		d, err := get(id)
		if err != nil {
			if !errors.Is(err, docstore.ErrNotExist) && bad != nil {
				bad(err)
			}
			continue
		}
		fn(d)
	}
	return nil
}

// getter reads tuples of typ by id through one open handle of their
// directory (docstore.Dir: no per-file walk of the path and its symlink
// checks, which were most of a scan's cost), or by path when the
// directory cannot be opened.
// A scan is over in moments, so the handle is not re-checked per file;
// the caller closes it.
func (sp *Space) getter(typ string) (get func(id string) (*docstore.Doc, error), done func()) {
	dir, err := sp.store.OpenDir(typeDir(typ))
	if err != nil {
		return func(id string) (*docstore.Doc, error) { return sp.store.Get(tuplePath(typ, id)) }, func() {}
	}
	return func(id string) (*docstore.Doc, error) { return dir.Get(id + ".md") }, func() { dir.Close() }
}

// scan calls fn with each live (not expired) tuple of typ that matches p,
// oldest first, until fn returns false. Files that vanish under it (taken
// by someone else) are skipped; files that do not parse are passed to bad.
// It returns the ids of the expired tuples it passed over.
func (sp *Space) scan(typ string, p Pattern, bad func(error), fn func(d *docstore.Doc, caps map[string]any) bool) ([]string, error) {
	ids, err := sp.names(typ)
	if err != nil {
		return nil, err
	}
	var expired []string
	get, done := sp.getter(typ)
	defer done()
	for _, id := range ids {
		d, err := get(id)
		if err != nil {
			if errors.Is(err, docstore.ErrNotExist) {
				continue
			}
			if bad != nil {
				bad(err)
			}
			continue
		}
		if sp.expired(d) {
			expired = append(expired, id)
			continue
		}
		caps, ok := p.Match(d.Fields())
		if !ok {
			continue
		}
		if !fn(d, caps) {
			return expired, nil
		}
	}
	return expired, nil
}

// Rdp returns a copy of the oldest live tuple of typ matching p, or a
// *NoTupleError (ErrNoTuple) at once.
func (sp *Space) Rdp(typ string, p Pattern) (*Tuple, error) {
	if err := checkType(typ); err != nil {
		return nil, err
	}
	var found *Tuple
	_, err := sp.scan(typ, p, nil, func(d *docstore.Doc, caps map[string]any) bool {
		found = sp.tupleOf(typ, d)
		found.Captures = caps
		return false
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, &NoTupleError{Type: typ, Pattern: p}
	}
	return found, nil
}

// Inp takes the oldest live tuple of typ matching p, or returns a
// *NoTupleError at once.
//
// Taking is the docstore claim: lock the tuple, rename
// tuples/<type>/<id>.md to tuples/<type>/.taken/<id>.md (exactly one racer
// wins; losers move on to the next match), re-read and re-match it there
// (a hand edit may have changed it), then archive it in the store's
// .trash/ and remove its lock file. A consumer that dies between the
// rename and the archive leaves the tuple in .taken/ with its lock free;
// the next Inp that finds nothing, or GC, puts it back.
func (sp *Space) Inp(typ string, p Pattern) (*Tuple, error) {
	if err := checkType(typ); err != nil {
		return nil, err
	}
	if err := engineType("inp", typ); err != nil {
		return nil, err
	}
	for round := 0; round < 2; round++ {
		t, err := sp.inOnce(typ, p)
		if err != nil || t != nil {
			return t, err
		}
		// Nothing live matched: return tuples whose consumers died, then
		// look once more.
		if n, _ := sp.reapTaken(typ); n == 0 {
			break
		}
	}
	return nil, &NoTupleError{Type: typ, Pattern: p}
}

func (sp *Space) inOnce(typ string, p Pattern) (*Tuple, error) {
	var got *Tuple
	var ferr error
	expired, err := sp.scan(typ, p, nil, func(d *docstore.Doc, _ map[string]any) bool {
		t, err := sp.take(typ, strings.TrimSuffix(filepath.Base(d.Path), ".md"), p)
		if err != nil {
			ferr = err
			return false
		}
		if t != nil {
			got = t
			return false
		}
		return true // lost the race or no longer matches: next one
	})
	if err == nil {
		err = ferr
	}
	if got == nil && err == nil {
		// Expired tuples are collected as they are met, not left for GC.
		sp.collectExpired(typ, expired)
	}
	return got, err
}

// take claims one tuple file. It returns nil, nil when someone else won
// or the claimed content no longer matches.
func (sp *Space) take(typ, name string, p Pattern) (*Tuple, error) {
	from, to := tuplePath(typ, name), takenPath(typ, name)
	l, err := sp.store.Claim(tupleLockKey(typ, name), from, to)
	if err != nil {
		if errors.Is(err, docstore.ErrLost) {
			return nil, nil
		}
		return nil, err
	}
	d, err := sp.store.Get(to)
	if err != nil {
		// Unreadable after the claim (edited into garbage in between):
		// put it back for a person to see, and move on.
		_ = sp.store.Rename(to, from)
		l.Unlock()
		return nil, nil
	}
	caps, ok := p.Match(d.Fields())
	if !ok || sp.expired(d) {
		if err := sp.store.Rename(to, from); err != nil {
			l.Unlock()
			return nil, err
		}
		l.Unlock()
		return nil, nil
	}
	if err := sp.store.Rename(to, sp.trashPath(typ, name)); err != nil {
		l.Unlock()
		return nil, err
	}
	_ = l.Remove() // the id is never used again
	// The doc was read at the staging path, which is no kind: give it back
	// the kind and name of the tuple it was, or callers see a nameless,
	// invalid document.
	d.Path = from
	if k, n, err := schema.NameOfPath(from); err == nil {
		d.Kind, d.Name = k, n
	}
	t := sp.tupleOf(typ, d)
	t.Captures = caps
	sp.event("tuple.in", journal.Event{Path: from, Rev: d.Rev, Data: map[string]any{"type": typ, "id": t.ID}})
	return t, nil
}

// Rd blocks until a live tuple of typ matches p and returns a copy of it.
// It gives up with a *NoTupleError when ctx's deadline passes (or returns
// ctx's error when it is cancelled). It is woken by the directory's
// filesystem events, with a re-scan every Recheck as a safety net.
func (sp *Space) Rd(ctx context.Context, typ string, p Pattern) (*Tuple, error) {
	return sp.block(ctx, typ, p, sp.Rdp)
}

// In blocks like Rd, then takes the tuple like Inp.
func (sp *Space) In(ctx context.Context, typ string, p Pattern) (*Tuple, error) {
	if err := engineType("in", typ); err != nil {
		return nil, err
	}
	return sp.block(ctx, typ, p, sp.Inp)
}

func (sp *Space) block(ctx context.Context, typ string, p Pattern, try func(string, Pattern) (*Tuple, error)) (*Tuple, error) {
	if err := checkType(typ); err != nil {
		return nil, err
	}
	start := time.Now()
	if sp.proj != nil {
		return sp.blockProjected(ctx, typ, p, try, start)
	}
	// The first look before any directory is watched: a type nobody has
	// written is waited for without being created (awaitTypeDir).
	if t, err := try(typ, p); err == nil || !errors.Is(err, ErrNoTuple) {
		return t, err
	}
	dir, err := sp.awaitTypeDir(ctx, typ)
	if err != nil {
		return nil, sp.waitErr(err, typ, p, start)
	}
	var got *Tuple
	werr := watcher.WaitDir(ctx, []string{dir}, sp.waitOptions(appeared, nil, nil), func() (bool, error) {
		t, err := try(typ, p)
		if err != nil && errors.Is(err, ErrNoTuple) {
			return false, nil
		}
		got = t
		return true, err
	})
	if werr == nil || ctx.Err() == nil {
		return got, werr
	}
	if errors.Is(werr, context.DeadlineExceeded) {
		// One last look: the deadline may have raced a write.
		if t, err := try(typ, p); err == nil || !errors.Is(err, ErrNoTuple) {
			return t, err
		}
	}
	return nil, sp.waitErr(werr, typ, p, start)
}

// blockProjected waits with the projection's WaitFor: it returns as soon
// as the projection holds a live match, then the real (file) read or take
// is tried. A miss after a hit means the projection lagged (the tuple was
// taken meanwhile): Sync it before waiting again, or WaitFor would hand
// back the same stale entry.
func (sp *Space) blockProjected(ctx context.Context, typ string, p Pattern, try func(string, Pattern) (*Tuple, error), start time.Time) (*Tuple, error) {
	prefix := typeDir(typ) + "/"
	pred := func(e watcher.Entry) bool {
		if !strings.HasPrefix(e.Path, prefix) || strings.Contains(e.Path[len(prefix):], "/") || e.Fields == nil {
			return false
		}
		if s, ok := e.Fields["expires"].(string); ok {
			if exp, err := schema.ParseTime(s); err == nil && !sp.now().Before(exp) {
				return false
			}
		}
		_, ok := p.Match(e.Fields)
		return ok
	}
	hit := false
	for {
		t, err := try(typ, p)
		if err == nil || !errors.Is(err, ErrNoTuple) {
			return t, err
		}
		if hit {
			if err := sp.proj.Sync(ctx); err != nil {
				return nil, sp.waitErr(err, typ, p, start)
			}
		}
		// The safety net: WaitFor at most Recheck at a time, then look at
		// the files again whatever the projection says.
		wctx, cancel := context.WithTimeout(ctx, sp.recheck)
		_, err = sp.proj.WaitFor(wctx, schema.Tuple.Name, pred)
		cancel()
		switch {
		case err == nil:
			hit = true
		case ctx.Err() != nil:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if t, err := try(typ, p); err == nil || !errors.Is(err, ErrNoTuple) {
					return t, err
				}
			}
			return nil, sp.waitErr(ctx.Err(), typ, p, start)
		case errors.Is(err, context.DeadlineExceeded):
			hit = false
		default:
			return nil, err
		}
	}
}

func (sp *Space) waitErr(err error, typ string, p Pattern, start time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &NoTupleError{Type: typ, Pattern: p, Waited: time.Since(start)}
	}
	return err
}

// List returns every live tuple of typ matching p, oldest first, and the
// files that could not be read.
func (sp *Space) List(typ string, p Pattern) ([]*Tuple, []error) {
	if err := checkType(typ); err != nil {
		return nil, []error{err}
	}
	var out []*Tuple
	var bad []error
	_, err := sp.scan(typ, p, func(err error) { bad = append(bad, err) }, func(d *docstore.Doc, caps map[string]any) bool {
		t := sp.tupleOf(typ, d)
		t.Captures = caps
		out = append(out, t)
		return true
	})
	if err != nil {
		bad = append(bad, err)
	}
	return out, bad
}

// Types returns the tuple types that have a directory, sorted.
func (sp *Space) Types() ([]string, error) { return sp.store.Subdirs("tuples", nil) }

// KnownType reports whether typ has a directory and, when not, the types
// near its name (schema.Near), nearest first: a reader of such a type
// most likely made a typo, and would wait for a tuple nobody writes.
func (sp *Space) KnownType(typ string) (exists bool, near []string, err error) {
	types, err := sp.Types()
	if err != nil {
		return false, nil, err
	}
	if slices.Contains(types, typ) {
		return true, nil, nil
	}
	return false, schema.Near(typ, types), nil
}

// GCStats counts what GC did.
type GCStats struct {
	Expired  int // expired tuples archived to .trash/
	Returned int // claimed tuples of dead claimers put back
	Locks    int // orphaned lock files removed
}

// GC archives expired tuples of every type (of the given types, if any)
// to .trash/, returns tuples and token slots whose claimers died, and
// removes lock files left by lost claim races. Expired tuples are also
// invisible to every read, so GC is housekeeping, not correctness.
func (sp *Space) GC(types ...string) (GCStats, error) {
	var st GCStats
	if len(types) == 0 {
		var err error
		if types, err = sp.Types(); err != nil {
			return st, err
		}
	}
	var errs []error
	for _, typ := range types {
		if err := checkType(typ); err != nil {
			return st, err
		}
		n, err := sp.reapTaken(typ)
		st.Returned += n
		errs = append(errs, err)
		ids, err := sp.names(typ)
		errs = append(errs, err)
		var expired []string
		for _, id := range ids {
			if d, err := sp.store.Get(tuplePath(typ, id)); err == nil && sp.expired(d) {
				expired = append(expired, id)
			}
		}
		n, err = sp.collectExpired(typ, expired)
		st.Expired += n
		errs = append(errs, err)
		n, err = sp.sweepLocks(typ)
		st.Locks += n
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// collectExpired archives the expired tuples ids of typ to .trash/ (each
// checked again under its claim lock) and journals tuple.expired.
func (sp *Space) collectExpired(typ string, ids []string) (int, error) {
	n := 0
	var errs []error
	for _, id := range ids {
		ok, err := sp.discard(typ, id, func(d *docstore.Doc) bool { return !sp.expired(d) })
		errs = append(errs, err)
		if ok {
			n++
			sp.event("tuple.expired", journal.Event{Path: tuplePath(typ, id), Data: map[string]any{"type": typ, "id": id}})
		}
	}
	return n, errors.Join(errs...)
}

// discard archives one live tuple to .trash/ under its claim lock. keep,
// if set, is asked again once the tuple is claimed (it may have been
// edited since the caller decided); a kept tuple is put back.
func (sp *Space) discard(typ, id string, keep func(*docstore.Doc) bool) (bool, error) {
	from, to := tuplePath(typ, id), takenPath(typ, id)
	l, err := sp.store.Claim(tupleLockKey(typ, id), from, to)
	if err != nil {
		if errors.Is(err, docstore.ErrLost) {
			return false, nil
		}
		return false, err
	}
	if keep != nil {
		if d, err := sp.store.Get(to); err == nil && keep(d) {
			err = sp.store.Rename(to, from)
			l.Unlock()
			return false, err
		}
	}
	if err := sp.store.Rename(to, sp.trashPath(typ, id)); err != nil {
		l.Unlock()
		return false, err
	}
	_ = l.Remove() // the id is never used again
	return true, nil
}

// reapTaken puts back claimed tuples of typ whose claimers are gone. A
// claimer holds the tuple's lock while it works, so a lock we can take
// belongs to a claimer that finished or died; for token slots the hold
// recorded in the file decides (see releasable).
func (sp *Space) reapTaken(typ string) (int, error) {
	dir, err := sp.store.Abs(typeDir(typ) + "/" + stagingDir)
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || schema.ValidName(id) != nil {
			continue
		}
		back, err := sp.reapOne(typ, id)
		errs = append(errs, err)
		if back {
			n++
		}
	}
	return n, errors.Join(errs...)
}

func (sp *Space) reapOne(typ, id string) (bool, error) {
	l, ok, err := sp.store.TryLock(tupleLockKey(typ, id))
	if err != nil || !ok {
		return false, err // a live claimer holds it
	}
	defer l.Unlock()
	taken := takenPath(typ, id)
	d, err := sp.store.Get(taken)
	if err != nil {
		if errors.Is(err, docstore.ErrNotExist) {
			return false, nil // its claimer finished meanwhile
		}
		// A broken file stays where it is, for a person to see.
		return false, err
	}
	why, ok := sp.releasable(d)
	if !ok {
		return false, nil
	}
	if d.Has("hold") {
		return true, sp.freeSlot(l, typ, id, d, "token.reclaimed", why)
	}
	if err := sp.store.Rename(taken, tuplePath(typ, id)); err != nil {
		return false, err
	}
	sp.event("tuple.returned", journal.Event{Path: tuplePath(typ, id), Data: map[string]any{"type": typ, "id": id, "reason": why}})
	return true, nil
}

func (sp *Space) event(typ string, e journal.Event) {
	if sp.journal == nil {
		return
	}
	e.Type = typ
	if e.Kind == "" {
		e.Kind = schema.Tuple.Name
	}
	// The journal is the history, the files are the truth: a failed
	// append must not undo or fail a mutation that already happened.
	_, _ = sp.journal.Append(e)
}

// sweepLocks removes the lock files of tuples of typ that no longer
// exist. Consumers remove their tuple's lock file, but a racer that lost
// a claim after the winner finished re-creates it (docstore.Claim locks
// before it renames). Removal happens under the lock and acquirers
// re-check the inode, so it never lets two holders in. This relies on
// docstore's lock layout, .locks/<key>.lock.
func (sp *Space) sweepLocks(typ string) (int, error) {
	dir := filepath.Join(sp.store.Root(), ".locks", "tuples", typ)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || e.IsDir() || schema.ValidName(id) != nil {
			continue
		}
		l, ok, err := sp.store.TryLock(tupleLockKey(typ, id))
		if err != nil || !ok {
			continue
		}
		if sp.exists(tuplePath(typ, id)) || sp.exists(takenPath(typ, id)) {
			l.Unlock()
			continue
		}
		if l.Remove() == nil {
			n++
		}
	}
	return n, nil
}

func (sp *Space) exists(rel string) bool {
	abs, err := sp.store.Abs(rel)
	if err != nil {
		return false
	}
	_, err = os.Lstat(abs)
	return err == nil
}
