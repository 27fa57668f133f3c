package queues

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Priorities of items and queues: 0 is the highest, 99 the lowest. Item
// file names carry the priority in two digits, so the range is fixed.
const (
	MinPriority = 0
	MaxPriority = 99
)

// Queue is a queue's configuration, read from queues/<name>/queue.md.
// Fields missing from the file take the schema defaults.
type Queue struct {
	Name        string
	Priority    int // 0 highest: order for multi-queue take and stealing weight
	MaxAttempts int
	Lease       time.Duration
	LeaseGrace  time.Duration // hung holder: returned this long after its lease expired
	Backoff     time.Duration // base delay after a failure, doubled per attempt
	BackoffMax  time.Duration
	OnEmpty     string // idle | hibernate | terminate | steal (for pools)
	Steal       bool   // may workers of other queues steal from this one
	Path        string
	Doc         *docstore.Doc
}

// QueueOptions are the settings of CreateQueue. Zero values take the
// schema defaults (max_attempts from tavern.md's default_max_attempts,
// lease from its default_lease; a default there that the schema refuses
// fails CreateQueue with its *schema.FieldError).
type QueueOptions struct {
	Priority    int
	MaxAttempts int
	Lease       time.Duration
	LeaseGrace  time.Duration
	Backoff     time.Duration
	BackoffMax  time.Duration
	OnEmpty     string
	NoSteal     bool
	// OnDead is the queue's on_dead (ParseOnDead), written with the queue
	// in one go, so a refused value leaves no queue behind.
	OnDead string
	// Explicit names the options given on purpose, by field name
	// ("max_attempts", "lease", "lease_grace", "backoff", "backoff_max"):
	// a zero listed here is the value zero, not "the default". Zero
	// backoff, backoff_max and lease_grace are honoured (retry at once,
	// reap a hung holder at once); zero max_attempts and lease have no
	// meaning and are refused (ErrBadOption).
	Explicit []string
}

// QueuePath is the path of a queue's configuration document.
func QueuePath(name string) string { return "queues/" + name + "/" + queueFile }

const queueFile = "queue.md"

// ItemPath is the path of an item in a state directory.
func ItemPath(queue, state, id string) string {
	return "queues/" + queue + "/" + state + "/" + id + ".md"
}

// ItemNow returns where the item whose file rel names
// (queues/QUEUE/STATE/ID.md, as ls and git status print it) is now, when
// rel is no longer there: take, done, fail, reap and retry move the file
// between the state directories, and a path printed a moment ago still
// names the item, as it does for the item commands (ResolveID). ok is
// false when rel is no item's path, is still there, or the item is in no
// state of its queue. Of two copies (a crash leftover) the later state
// wins, as for the item commands.
func ItemNow(s *docstore.Store, rel string) (now string, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 4 || parts[0] != "queues" || !slices.Contains(schema.ItemStates, parts[2]) {
		return "", false
	}
	id, isMD := strings.CutSuffix(parts[3], ".md")
	if !isMD || schema.ValidName(id) != nil {
		return "", false
	}
	if _, err := s.Stat(rel); !errors.Is(err, fs.ErrNotExist) {
		return "", false // there (or unreadable: its own error says why)
	}
	best := -1
	for _, st := range schema.ItemStates {
		p := ItemPath(parts[1], st, id)
		if fi, err := s.Stat(p); err == nil && fi.Mode().IsRegular() && stateRank[st] > best {
			now, best = p, stateRank[st]
		}
	}
	return now, best >= 0
}

// States of an item, in lifecycle order; the directory is the state.
const (
	Pending = "pending"
	Claimed = "claimed"
	Done    = "done"
	Dead    = "dead"
)

// CreateQueue writes queues/<name>/queue.md and the four state
// directories. It fails with ErrQueueExists if the queue exists. The
// name follows schema.ValidPlainName.
func (b *Broker) CreateQueue(name string, opt QueueOptions) (*Queue, error) {
	if err := schema.ValidPlainName("queue", name); err != nil {
		return nil, &QueueError{Op: "create", Queue: name, Err: err}
	}
	if opt.Priority < MinPriority || opt.Priority > MaxPriority {
		return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: %d is not in %d..%d", ErrPriority, opt.Priority, MinPriority, MaxPriority)}
	}
	if opt.MaxAttempts < 0 {
		return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: max attempts %d: a count cannot be negative", ErrBadOption, opt.MaxAttempts)}
	}
	// Each duration by name: "a negative duration" alone leaves the
	// user to guess which flag.
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"lease", opt.Lease}, {"lease grace", opt.LeaseGrace}, {"backoff", opt.Backoff}, {"backoff max", opt.BackoffMax}} {
		if d.v < 0 {
			return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: %s %s: a duration cannot be negative", ErrBadOption, d.name, d.v)}
		}
	}
	if slices.Contains(opt.Explicit, "max_attempts") && opt.MaxAttempts == 0 {
		return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: max attempts 0: an item needs at least one attempt", ErrBadOption)}
	}
	if slices.Contains(opt.Explicit, "lease") && opt.Lease == 0 {
		return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: lease 0: every claim would expire as it is made", ErrBadOption)}
	}
	if opt.OnEmpty != "" && !slices.Contains(schema.EmptyModes, opt.OnEmpty) {
		return nil, &QueueError{Op: "create", Queue: name, Err: fmt.Errorf("%w: on-empty %q must be one of %s%s", ErrBadOption, opt.OnEmpty, strings.Join(schema.EmptyModes, ", "), schema.ChoiceHint(opt.OnEmpty, schema.EmptyModes))}
	}
	if _, err := ParseOnDead(opt.OnDead); err != nil {
		return nil, &QueueError{Op: "create", Queue: name, Err: err}
	}
	// The defaults come from tavern.md only where no value was given; a
	// bad default there fails the create (tavern.md:line:col), it is not
	// replaced by the schema's.
	maxAtt := opt.MaxAttempts
	if maxAtt == 0 {
		n, err := defaultMaxAttempts(b.s)
		if err != nil {
			return nil, &QueueError{Op: "create", Queue: name, Err: err}
		}
		maxAtt = n
	}
	lease := opt.Lease
	if lease == 0 {
		d, err := DefaultLease(b.s)
		if err != nil {
			return nil, &QueueError{Op: "create", Queue: name, Err: err}
		}
		lease = d
	}
	fields := []docstore.Field{
		{Key: schema.VersionField, Value: schema.Queue.Version},
		{Key: "name", Value: name},
		{Key: "priority", Value: opt.Priority},
		{Key: "max_attempts", Value: maxAtt},
		{Key: "lease", Value: lease.String()},
		{Key: "lease_grace", Value: opt.durOr("lease_grace", opt.LeaseGrace).String()},
		{Key: "backoff", Value: opt.durOr("backoff", opt.Backoff).String()},
		{Key: "backoff_max", Value: opt.durOr("backoff_max", opt.BackoffMax).String()},
		{Key: "on_empty", Value: strOr(opt.OnEmpty, "idle")},
		{Key: "steal", Value: !opt.NoSteal},
	}
	if opt.OnDead != "" {
		fields = append(fields, docstore.Field{Key: "on_dead", Value: opt.OnDead})
	}
	fields = append(fields, docstore.Field{Key: "created", Value: b.now()})
	body := []byte("\n# Queue " + name + "\n\nItems live in pending/, claimed/, done/ and dead/ next to this file.\n" +
		"`ls pending/` is the queue order: file names sort by priority, then age.\n")
	d, err := docstore.New(schema.Queue, fields, body)
	if err != nil {
		return nil, err
	}
	rel := QueuePath(name)
	if err := b.s.Create(rel, d); err != nil {
		if errors.Is(err, docstore.ErrExist) {
			return nil, &QueueError{Op: "create", Queue: name, Err: ErrQueueExists}
		}
		return nil, err
	}
	for _, st := range schema.ItemStates {
		if err := b.s.MkdirAll("queues/" + name + "/" + st); err != nil {
			return nil, err
		}
	}
	_, _ = b.j.Append(eventQueue(EventQueueCreated, name, rel))
	return b.Queue(name)
}

// durOr is the duration option field: v, or the schema's default when v
// is zero and was not given explicitly.
func (opt QueueOptions) durOr(field string, v time.Duration) time.Duration {
	if v == 0 && !slices.Contains(opt.Explicit, field) {
		return defaultDur(schema.Queue, field)
	}
	return v
}

func strOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func defaultDur(k *schema.Kind, field string) time.Duration {
	if f := k.Field(field); f != nil {
		if s, ok := f.Default.(string); ok {
			if d, err := time.ParseDuration(s); err == nil {
				return d
			}
		}
	}
	return 0
}

type cachedQueue struct {
	ino, size int64
	mtime     time.Time
	q         *Queue
	// dir is the open queue directory and checked when the full check
	// below last ran: until Options.DirRecheck has passed, one short lstat of
	// queue.md through it decides whether the cache still holds.
	dir     *docstore.Dir
	checked time.Time
}

func (c *cachedQueue) same(fi fs.FileInfo, ino int64) bool {
	return c.ino == ino && c.size == fi.Size() && c.mtime.Equal(fi.ModTime())
}

func inode(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}

// Queue reads a queue's configuration. An unknown queue is
// a *schema.UnknownError matching ErrUnknownQueue, with the nearest queue names; a queue.md that does not parse
// is returned as its *docstore.ParseError.
func (b *Broker) Queue(name string) (*Queue, error) {
	if err := schema.ValidName(name); err != nil {
		return nil, &QueueError{Op: "open", Queue: name, Err: err}
	}
	now := time.Now()
	b.mu.Lock()
	c, ok := b.qcache[name]
	b.mu.Unlock()
	if ok && c.dir != nil && now.Sub(c.checked) < b.dirRecheck {
		if fi, err := c.dir.Lstat(queueFile); err == nil && fi.Mode().IsRegular() && c.same(fi, inode(fi)) {
			return c.q, nil
		}
	}
	rel := QueuePath(name)
	full, err := b.s.Abs(rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			names, _ := b.QueueNames()
			return nil, &schema.UnknownError{What: "queue", Name: name, Near: schema.Near(name, names), Err: ErrUnknownQueue}
		}
		return nil, err
	}
	ino := inode(fi)
	dir := c.dir
	if dir == nil || dir.Stale() {
		if dir, err = b.s.OpenDir(path.Dir(rel)); err != nil {
			dir = nil // the path checks above passed: only the fast path is lost
		}
	}
	if ok && c.same(fi, ino) {
		b.mu.Lock()
		b.qcache[name] = cachedQueue{ino: ino, size: fi.Size(), mtime: fi.ModTime(), q: c.q, dir: dir, checked: now}
		b.mu.Unlock()
		return c.q, nil
	}
	d, err := b.s.Get(rel)
	if err != nil {
		return nil, err
	}
	q, err := queueFromDoc(name, d)
	if err != nil {
		return nil, err
	}
	if ok {
		b.dropQueueDirs(name) // queue.md changed: maybe a new queue directory
	}
	b.mu.Lock()
	b.qcache[name] = cachedQueue{ino: ino, size: fi.Size(), mtime: fi.ModTime(), q: q, dir: dir, checked: now}
	b.mu.Unlock()
	return q, nil
}

func queueFromDoc(name string, d *docstore.Doc) (*Queue, error) {
	if errs := d.Validate(false); len(errs) > 0 {
		return nil, &docstore.ValidationError{Path: d.Path, Errors: errs}
	}
	q := &Queue{Name: name, Path: d.Path, Doc: d, Steal: true, OnEmpty: "idle", MaxAttempts: 3}
	if v, ok := d.Int("priority"); ok {
		q.Priority = int(v)
	}
	if v, ok := d.Int("max_attempts"); ok {
		q.MaxAttempts = int(v)
	}
	dur := func(field string) time.Duration {
		if v, err := time.ParseDuration(d.String(field)); err == nil {
			return v
		}
		return defaultDur(schema.Queue, field)
	}
	q.Lease, q.LeaseGrace, q.Backoff, q.BackoffMax = dur("lease"), dur("lease_grace"), dur("backoff"), dur("backoff_max")
	if d.Has("steal") {
		q.Steal = d.Bool("steal")
	}
	if s := d.String("on_empty"); s != "" {
		q.OnEmpty = s
	}
	if q.Priority < MinPriority || q.Priority > MaxPriority {
		return nil, &ItemError{Op: "open queue", Path: d.Path, Err: fmt.Errorf("%w: priority %d", ErrPriority, q.Priority)}
	}
	return q, nil
}

// QueueNames lists the queues of the store (directories under queues/
// with a queue.md), sorted by name.
func (b *Broker) QueueNames() ([]string, error) { return queueNames(b.s) }

func queueNames(s *docstore.Store) ([]string, error) {
	return s.Subdirs("queues", func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, queueFile))
		return err == nil
	})
}

// CheckQueue returns nil if the store has a queue of that name (its
// queue.md), else a *schema.UnknownError matching ErrUnknownQueue with
// the nearest queue names: for what names a queue without a Broker (an
// agent's queues, before anything is written).
func CheckQueue(s *docstore.Store, name string) error {
	if err := schema.ValidName(name); err != nil {
		return &QueueError{Op: "open", Queue: name, Err: err}
	}
	full, err := s.Abs(QueuePath(name))
	if err != nil {
		return err
	}
	if _, err := os.Stat(full); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	names, _ := queueNames(s)
	return &schema.UnknownError{What: "queue", Name: name, Near: schema.Near(name, names), Err: ErrUnknownQueue}
}

// Queues reads every queue's configuration, sorted by priority then
// name. A queue.md that cannot be read is returned in errs; the others
// are still returned.
func (b *Broker) Queues() (qs []*Queue, errs []error) {
	names, err := b.QueueNames()
	if err != nil {
		return nil, []error{err}
	}
	for _, n := range names {
		q, err := b.Queue(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		qs = append(qs, q)
	}
	sortQueues(qs)
	return qs, errs
}

func sortQueues(qs []*Queue) {
	sort.SliceStable(qs, func(i, j int) bool {
		if qs[i].Priority != qs[j].Priority {
			return qs[i].Priority < qs[j].Priority
		}
		return qs[i].Name < qs[j].Name
	})
}
