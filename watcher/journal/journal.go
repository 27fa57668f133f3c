package journal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Event types of document changes (RecordMutations, the watcher) and of the
// watcher's own reports. Engine packages add their own
// ("item.claimed", "agent.spawned", ...): a type is a free-form dotted name.
const (
	TypeCreated  = "doc.created"  // a document appeared
	TypeUpdated  = "doc.updated"  // a document's content changed
	TypeRemoved  = "doc.removed"  // a document disappeared
	TypeInvalid  = "doc.invalid"  // a document failed to parse or validate
	TypeError    = "watch.error"  // a path could not be read or watched
	TypeExternal = "external"     // a change no engine call made (hand edit, git checkout)
	TypeMissed   = "watch.missed" // a subscriber fell behind; Data["missed"] events were dropped
	TypeMoved    = "doc.moved"    // a document was renamed; Data["from"] is its old path
	// TypeLeft is delivered to a subscription filtered on fields when a
	// change makes a document stop matching; Data["op"] is the change.
	TypeLeft = "doc.left"
	// TypeDegraded: a watcher could not use inotify (out of watches or
	// instances) and polls instead; Data["error"] says why, Data["mode"]
	// what it does now.
	TypeDegraded = "watch.degraded"
)

// Dir is the journal's directory inside the store root.
const Dir = "events"

// Event is one journal record and one subscription message. Empty fields
// are omitted from the JSON line so the journal stays greppable.
type Event struct {
	ID     string           `json:"id"`               // UUIDv7: time-ordered, unique
	Time   schema.Timestamp `json:"time"`             // UTC
	Writer string           `json:"writer,omitempty"` // host/pid/random of the appending Journal
	Seq    uint64           `json:"seq,omitempty"`    // per-writer sequence, from 1, no gaps
	Type   string           `json:"type"`
	Kind   string           `json:"kind,omitempty"`
	Path   string           `json:"path,omitempty"` // store-relative, slash-separated
	Rev    string           `json:"rev,omitempty"`  // document revision after the change
	Agent  string           `json:"agent,omitempty"`
	Parent string           `json:"parent,omitempty"`
	Item   string           `json:"item,omitempty"`
	Queue  string           `json:"queue,omitempty"`
	Data   map[string]any   `json:"data,omitempty"`
}

// Journal appends events to <root>/events/<yyyy-mm-dd>.jsonl.
//
// Each event is one line written with a single write(2) on an O_APPEND
// descriptor while holding an exclusive flock on the day file, so lines
// from any number of processes never interleave or tear, also on
// filesystems where O_APPEND alone is not atomic. A Journal is safe for
// concurrent use; its Seq numbers follow file order.
//
// Concurrent appends of one Journal are committed in groups: a caller
// that finds no write in progress writes its line and those of every
// caller that queued meanwhile with one flock, one write(2) and one
// unlock (then, a few times, what queued during that write), while the
// others wait. A group's lines are written by one write(2), so the
// guarantees above hold for a group as for one line. Every Append returns
// only after its own line is written (and fsynced, with
// Options.Sync), with the error of that write, and after the
// in-process observers saw it.
type Journal struct {
	dir    string
	writer string
	sync   bool
	// writerSeq is `,"writer":<writer>,"seq":`, the JSON between an
	// event's time and its sequence number.
	writerSeq []byte

	mu sync.Mutex
	// queue holds the appends waiting for the group being written, spare
	// the other buffer of the pair the leader swaps.
	queue, spare []*appendReq
	leading      bool // a caller is writing groups; the queue waits for it
	// observers see every event this Journal appended (in-process
	// subscribers), in order; called by the group's leader, one at a
	// time, so they must not block or append.
	observers []func(Event)

	// Owned by the leader of the group being written; fmu keeps Close
	// off the file while a group is written.
	fmu    sync.Mutex
	seq    uint64
	day    int // yyyymmdd of file
	file   *os.File
	buf    []byte
	ends   []int // end offset in buf of each line
	writes int   // group writes so far (tests check the grouping)
	// end is the size file had after this Journal's last write to it, so
	// a file still that size ends with our newline (-1: unknown); cur is
	// the size while a group is written, under the day file's lock.
	end, cur int64
}

// appendReq is one queued append: the event, its JSON without id, writer
// and seq (encoded by the caller, outside the lock), and its outcome.
type appendReq struct {
	e     Event
	body  []byte // JSON of e.Time, then ,"type":... through the closing brace
	split int    // where the time ends in body
	day   int    // yyyymmdd of e.Time
	// keep (AppendIf) decides under the file lock whether e is
	// appended, from heads caught up with the journal.
	keep  func(*Event) bool
	heads *Heads
	wrote bool // the line is in the file
	err   error
	done  bool          // the outcome is set (guarded by Journal.mu)
	wake  chan struct{} // done or Journal.leading may have changed
}

var appendReqs = sync.Pool{New: func() any { return &appendReq{wake: make(chan struct{}, 1)} }}

// Options configure Open.
type Options struct {
	// Sync fsyncs the day file after every append. Off by default: the
	// documents are the truth, the journal their history.
	Sync bool
	// Writer overrides the writer identity (default host/pid/random).
	Writer string
}

// Open opens (creating if needed) the journal of the store at root.
func Open(root string, opt Options) (*Journal, error) {
	// The directory is created by the first append, so opening a journal
	// on a read-only store (a command that only reads) costs nothing.
	dir := filepath.Join(root, Dir)
	w := opt.Writer
	if w == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		w = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	ws := append(appendJSONString([]byte(`,"writer":`), w), `,"seq":`...)
	return &Journal{dir: dir, writer: w, sync: opt.Sync, writerSeq: ws}, nil
}

// Writer returns the identity stamped on every event this Journal appends.
func (j *Journal) Writer() string { return j.writer }

// Dir returns the journal directory.
func (j *Journal) Dir() string { return j.dir }

// Append stamps e (ID, Time if zero, Writer, Seq) and appends it as one
// line. The stamped event is returned so callers can log or publish it.
func (j *Journal) Append(e Event) (Event, error) {
	e, _, err := j.append(e)
	return e, err
}

// AppendIf appends each event of evs for which keep returns true, in
// order, and returns those appended. keep runs while this process holds
// the day file's lock, after h caught up with every line of the journal
// (what any process appended before), and after the events kept before
// it were applied to h: a decision taken from h cannot be raced by
// another appender, in this process or another. keep may edit the event
// (its type, data...). The watcher decides external changes this way,
// so several watchers record each change once.
func (j *Journal) AppendIf(h *Heads, evs []Event, keep func(*Event) bool) ([]Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	now := time.Now()
	rs := make([]*appendReq, len(evs))
	for i, e := range evs {
		if e.Type == "" {
			return nil, fmt.Errorf("append event: %w", ErrNoType)
		}
		// Stamped now: decided events go to today's file, whose lock
		// serialises the decisions.
		e.Time = schema.TimeOf(now.UTC().Truncate(time.Millisecond))
		e.Writer = j.writer
		r := appendReqs.Get().(*appendReq)
		defer putAppendReq(r)
		y, m, d := e.Time.Date()
		r.e, r.day, r.heads, r.keep = e, y*10000+int(m)*100+d, h, keep
		rs[i] = r
	}
	j.enqueue(rs)
	var out []Event
	var err error
	for _, r := range rs {
		if r.wrote {
			out = append(out, r.e)
		}
		if r.err != nil && err == nil {
			err = r.err
		}
	}
	return out, err
}

func (j *Journal) append(e Event) (Event, bool, error) {
	if e.Type == "" {
		return e, false, fmt.Errorf("append event: %w", ErrNoType)
	}
	if e.Time.IsZero() {
		e.Time = schema.TimeOf(time.Now())
	}
	// Milliseconds, as the line says (schema.Timestamp): the event
	// returned is the one a reader gets back.
	e.Time = schema.TimeOf(e.Time.UTC().Truncate(time.Millisecond))
	e.Writer = j.writer
	r := appendReqs.Get().(*appendReq)
	defer putAppendReq(r)
	// Encoded here, in parallel; the leader only splices in id and seq.
	if err := r.encode(&e); err != nil {
		return e, false, err
	}
	y, m, d := e.Time.Date()
	r.e, r.day = e, y*10000+int(m)*100+d
	j.enqueue([]*appendReq{r})
	return r.e, r.wrote, r.err
}

// encode sets r.body and r.split from e.
func (r *appendReq) encode(e *Event) error {
	body, err := appendEventTime(r.body[:0], e.Time.Time)
	if err == nil {
		r.split = len(body)
		body, err = appendEventTail(body, e)
	}
	if err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	r.body = body
	return nil
}

// enqueue queues rs and returns once all of them are written (or failed).
func (j *Journal) enqueue(rs []*appendReq) {
	j.mu.Lock()
	j.queue = append(j.queue, rs...)
	for _, r := range rs {
		for !r.done {
			if !j.leading {
				// Nobody is writing: write the queue, r among it.
				j.leading = true
				j.mu.Unlock()
				j.lead()
				j.mu.Lock()
				continue
			}
			j.mu.Unlock()
			<-r.wake // something changed: done, or the lead is free
			j.mu.Lock()
		}
	}
	j.mu.Unlock()
}

func putAppendReq(r *appendReq) {
	select {
	case <-r.wake: // a stale notification (r's own leader sent it)
	default:
	}
	r.e, r.err, r.wrote, r.done, r.keep, r.heads = Event{}, nil, false, false, nil, nil
	if cap(r.body) > 64<<10 {
		r.body = nil
	}
	appendReqs.Put(r)
}

// maxLeadRounds bounds how many groups one leader writes before it
// leaves the rest to a waiting caller: enough that a running caller, not
// a parked one it would have to wake, writes what queued up during its
// write (handing the lead to a goroutine that is not running stalls
// everyone behind it), few enough that its own caller is not kept
// writing for the others indefinitely.
const maxLeadRounds = 4

// lead writes the queued appends as one group, then the appends queued
// meanwhile as the next, up to maxLeadRounds groups. Called with
// j.leading set; it clears it.
func (j *Journal) lead() {
	for round := 1; ; round++ {
		j.mu.Lock()
		group := j.queue
		j.queue = j.spare[:0]
		observers := j.observers
		j.mu.Unlock()

		j.fmu.Lock()
		j.writeGroup(group)
		j.fmu.Unlock()
		for _, r := range group {
			if r.wrote {
				for _, o := range observers {
					o(r.e)
				}
			}
		}

		j.mu.Lock()
		for _, r := range group {
			r.done = true
			wake(r)
		}
		clear(group)
		j.spare = group[:0]
		if len(j.queue) == 0 || round == maxLeadRounds {
			j.leading = false
			if len(j.queue) > 0 {
				// The first waiter leads next, unless a running
				// caller takes the lead first.
				wake(j.queue[0])
			}
			j.mu.Unlock()
			return
		}
		j.mu.Unlock()
	}
}

// wake notifies r's caller that its state changed, without blocking: one
// pending notification is enough, the caller re-checks under j.mu.
func wake(r *appendReq) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// writeGroup writes the lines of group, in order: one flock and one
// write(2) per day file (an AppendIf splits it: its heads must see the
// lines before it).
func (j *Journal) writeGroup(group []*appendReq) {
	now := time.Now()
	for len(group) > 0 {
		n := 1
		for n < len(group) && group[n].day == group[0].day {
			n++
		}
		j.writeDay(group[:n], now)
		group = group[n:]
	}
}

func (j *Journal) writeDay(group []*appendReq, now time.Time) {
	fail := func(rs []*appendReq, err error) {
		for _, r := range rs {
			r.err = err
		}
	}
	f, size, err := j.lockDay(group[0].day, group[0].e.Time.Time)
	if err != nil {
		fail(group, err)
		return
	}
	defer flock(f, syscall.LOCK_UN)
	err = j.terminate(f, size)
	j.end = -1 // until the writes below succeed
	if err != nil {
		fail(group, err)
		return
	}
	j.buf, j.ends = j.buf[:0], j.ends[:0]
	var lines []*appendReq // the requests encoded in j.buf, in order
	var caughtUp *Heads
	for _, r := range group {
		if r.keep != nil {
			if r.heads != caughtUp {
				// Read what everyone appended so far, our lines queued
				// before r included, under the lock.
				if len(lines) > 0 {
					err := j.write(f, lines)
					lines = lines[:0]
					if err != nil {
						r.err = err
						continue
					}
				}
				if err := r.heads.CatchUp(); err != nil {
					r.err = err
					continue
				}
				caughtUp = r.heads
			}
			if !r.keep(&r.e) {
				continue
			}
			if err := r.encode(&r.e); err != nil {
				r.err = err
				continue
			}
			r.heads.Apply(r.e)
		}
		start := len(j.buf)
		j.buf = append(j.buf, `{"id":"`...)
		j.buf = append(j.buf, docstore.NewID()...)
		r.e.ID = string(j.buf[start+len(`{"id":"`):])
		r.e.Seq = j.seq + uint64(len(lines)) + 1
		j.buf = append(j.buf, `","time":`...)
		j.buf = append(j.buf, r.body[:r.split]...)
		j.buf = append(j.buf, j.writerSeq...)
		j.buf = strconv.AppendUint(j.buf, r.e.Seq, 10)
		j.buf = append(j.buf, r.body[r.split:]...)
		j.buf = append(j.buf, '\n')
		j.ends = append(j.ends, len(j.buf))
		lines = append(lines, r)
	}
	if len(lines) > 0 {
		_ = j.write(f, lines)
	}
	j.end = j.cur
	if cap(j.buf) > 1<<20 {
		j.buf = nil
	}
}

// terminate ends the line a writer left unfinished in f (size bytes,
// under the day file's lock) with a newline, so the next line starts
// clean and only the fragment is lost, not the next event with it. A
// writer killed inside write(2) leaves one: Linux stops a write to a
// regular file at a page boundary when a fatal signal arrives.
func (j *Journal) terminate(f *os.File, size int64) error {
	j.cur = size
	if size == 0 || size == j.end {
		return nil // empty, or still ending with our own newline
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil || last[0] == '\n' {
		return nil // cannot tell (the reader reports a torn line), or clean
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return &fs.PathError{Op: "append", Path: f.Name(), Err: err}
	}
	j.cur++
	return nil
}

// write writes j.buf, the lines of group, with one write(2) and resets
// j.buf. The lines written whole count as appended (whatever the error,
// they are in the file: their Seq is spent); the others get the error.
func (j *Journal) write(f *os.File, group []*appendReq) error {
	j.writes++
	n, err := f.Write(j.buf)
	if j.cur >= 0 {
		j.cur += int64(n)
	}
	if err == nil && n < len(j.buf) {
		err = io.ErrShortWrite
	}
	if err != nil && n > 0 && j.buf[n-1] != '\n' {
		// Terminate the partial line so the next event starts clean;
		// readers report the fragment as malformed.
		_, _ = f.Write([]byte{'\n'})
	}
	if err != nil {
		j.cur = -1 // what the file holds now is not known for sure
	}
	if err == nil && j.sync {
		err = f.Sync()
	}
	if err != nil {
		err = &fs.PathError{Op: "append", Path: f.Name(), Err: err}
	}
	for i, r := range group {
		if j.ends[i] <= n {
			r.wrote, r.err = true, err
			j.seq = r.e.Seq
		} else {
			r.err = err
		}
	}
	j.buf, j.ends = j.buf[:0], j.ends[:0]
	return err
}

// lockDay opens the day file and takes its flock. A day file kept open
// from an earlier append may have been replaced since (git checkout or
// stash of a committed journal, an rsync, a restore: a new file renamed
// over the name) or removed: its link count is then 0, appends to it
// would be lost with it, and its flock no longer excludes the processes
// appending to the new file. So once locked, a file without a link is
// closed and the name opened again.
func (j *Journal) lockDay(day int, t time.Time) (*os.File, int64, error) {
	for attempt := 0; ; attempt++ {
		f, err := j.open(day, t)
		if err != nil {
			return nil, 0, err
		}
		if err := flock(f, syscall.LOCK_EX); err != nil {
			return nil, 0, &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			flock(f, syscall.LOCK_UN)
			return nil, 0, &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
		}
		if st.Nlink > 0 {
			return f, st.Size, nil
		}
		flock(f, syscall.LOCK_UN)
		f.Close()
		j.file = nil
		if attempt == 8 {
			return nil, 0, &fs.PathError{Op: "append", Path: f.Name(), Err: errDayReplaced}
		}
	}
}

func (j *Journal) open(day int, t time.Time) (*os.File, error) {
	if j.file != nil && j.day == day {
		return j.file, nil
	}
	if j.file != nil {
		j.file.Close()
		j.file = nil
	}
	name := filepath.Join(j.dir, t.Format(time.DateOnly)+".jsonl")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(j.dir, 0o755); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(name, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, err
	}
	j.file, j.day, j.end = f, day, -1
	return f, nil
}

// Observe registers fn to see every event appended through j, in file
// order, called by the appending group's leader: fn must not block or
// append. The watcher uses it to tell engine writes from external ones.
func (j *Journal) Observe(fn func(Event)) {
	j.mu.Lock()
	j.observers = append(j.observers, fn)
	j.mu.Unlock()
}

// Close releases the open day file.
func (j *Journal) Close() error {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	if j.file == nil {
		return nil
	}
	err := j.file.Close()
	j.file = nil
	return err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Filter selects events. Empty fields match everything. A Types entry
// ending in "." matches by prefix ("item." matches "item.claimed"), one
// with glob characters as a glob ("agent*", "*.claimed"; Check says
// whether it is well-formed).
type Filter struct {
	Types  []string
	Kinds  []string
	Agent  string
	Parent string
	Path   string    // exact path, or a prefix ending in "/"
	Since  time.Time // inclusive
	Until  time.Time // exclusive
}

// Match reports whether e passes the filter.
func (f Filter) Match(e Event) bool {
	if len(f.Types) > 0 && !slices.ContainsFunc(f.Types, func(t string) bool { return typeMatch(t, e.Type) }) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if f.Agent != "" && e.Agent != f.Agent {
		return false
	}
	if f.Parent != "" && e.Parent != f.Parent {
		return false
	}
	if f.Path != "" && e.Path != f.Path && !(strings.HasSuffix(f.Path, "/") && strings.HasPrefix(e.Path, f.Path)) {
		return false
	}
	if !f.Since.IsZero() && e.Time.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.Time.Before(f.Until) {
		return false
	}
	return true
}

// Check reports a Types entry that is not a well-formed glob, as a
// *TypePatternError: Match would take it for no type at all.
func (f Filter) Check() error {
	for _, t := range f.Types {
		if t == "" { // no event has it: a filter of nothing, not no filter
			return &TypePatternError{Pattern: t}
		}
		if strings.ContainsAny(t, "*?[") {
			if _, err := path.Match(t, ""); err != nil {
				return &TypePatternError{Pattern: t}
			}
		}
	}
	return nil
}

// typeMatch: a pattern ending in "." matches by prefix; one with glob
// characters as path.Match does (types hold no "/", so * is any run:
// agent* and *.claimed both match); anything else, one type.
func typeMatch(pattern, typ string) bool {
	switch {
	case strings.HasSuffix(pattern, "."):
		return strings.HasPrefix(typ, pattern)
	case strings.HasSuffix(pattern, "*") && !strings.ContainsAny(pattern[:len(pattern)-1], "*?[\\"):
		return strings.HasPrefix(typ, pattern[:len(pattern)-1]) // the common case, without path.Match
	case strings.ContainsAny(pattern, "*?["):
		ok, _ := path.Match(pattern, typ)
		return ok
	}
	return pattern == typ
}

// ParseEventLine decodes one journal line.
func ParseEventLine(line []byte) (Event, error) {
	var e Event
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&e); err != nil {
		return Event{}, err
	}
	if dec.More() {
		return Event{}, ErrTrailingData
	}
	if e.ID == "" || e.Type == "" {
		return Event{}, ErrNoType
	}
	return e, nil
}

// Cursor is a position in the journal: a day file and a byte offset.
type Cursor struct {
	Day    string // yyyy-mm-dd
	Offset int64
	// last marks the line before Offset in a cursor a read returned, so
	// the next read can tell a rewritten day file from an appended one.
	last lineMark
}

// Read calls fn for every event in the journal of the store at root
// that matches f, in file order (day by day, append order within a day).
// Malformed lines are passed as a *LineError with a zero Event. fn returns
// false to stop. The returned Cursor points after the last complete line
// read, for Follow.
func Read(root string, f Filter, fn func(Event, error) bool) (Cursor, error) {
	return readFrom(filepath.Join(root, Dir), Cursor{}, f, fn)
}

// ReadFrom is Read from cursor from (a Cursor that Read, ReadFrom or
// End returned): only the events appended since, for a reader that looks
// again and again without reading the whole journal each time.
func ReadFrom(root string, from Cursor, f Filter, fn func(Event, error) bool) (Cursor, error) {
	return readFrom(filepath.Join(root, Dir), from, f, fn)
}

// ReadOthers reads, as Read does, the journals of other machines that
// the git sync (queues/gitsync) brings into this store, one directory
// per machine: events/<machine>/<day>.jsonl, machines in name order. fn
// gets the machine's name with each event; it returns false to stop.
func ReadOthers(root string, f Filter, fn func(machine string, e Event, err error) bool) error {
	dir := filepath.Join(root, Dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents { // ReadDir sorts by name
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m := e.Name()
		stopped := false
		if _, err := readFrom(filepath.Join(dir, m), Cursor{}, f, func(ev Event, err error) bool {
			if !fn(m, ev, err) {
				stopped = true
				return false
			}
			return true
		}); err != nil {
			return err
		}
		if stopped {
			return nil
		}
	}
	return nil
}

func journalDays(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var days []string
	for _, e := range ents {
		n := e.Name()
		if day, ok := strings.CutSuffix(n, ".jsonl"); ok && e.Type().IsRegular() {
			if _, err := time.Parse(time.DateOnly, day); err == nil {
				days = append(days, day)
			}
		}
	}
	slices.Sort(days)
	return days, nil
}

func readFrom(dir string, from Cursor, f Filter, fn func(Event, error) bool) (Cursor, error) {
	days, err := journalDays(dir)
	if err != nil {
		return from, err
	}
	cur := from
	for _, day := range days {
		if day < from.Day {
			continue
		}
		// A day file only holds events of that (UTC) day: skip whole
		// files outside the window.
		if !f.Since.IsZero() && day < f.Since.UTC().Format(time.DateOnly) {
			continue
		}
		if !f.Until.IsZero() && day > f.Until.UTC().Format(time.DateOnly) {
			continue
		}
		at := Cursor{Day: day}
		if day == from.Day {
			at = from
		}
		next, stop, err := readDay(filepath.Join(dir, day+".jsonl"), at, f, fn)
		if err != nil {
			return cur, err
		}
		cur = next
		if stop {
			return cur, nil
		}
	}
	return cur, nil
}

// readDay reads complete lines of one day file from cursor at; it returns
// the cursor after the last complete line (a line still being written is
// left for the next read). A file that no longer holds the line at's
// mark was rewritten: reading goes on after that line if it is still in
// the file, or else from the start, after fn is passed a *RewriteError.
func readDay(path string, at Cursor, f Filter, fn func(Event, error) bool) (Cursor, bool, error) {
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return at, false, nil
		}
		return at, false, err
	}
	defer fh.Close()
	off, last := at.Offset, at.last
	if off > 0 && last.n > 0 {
		same := false
		if off >= last.n {
			buf := make([]byte, last.n)
			if _, err := fh.ReadAt(buf, off-last.n); err == nil {
				same = markOf(buf) == last
			}
		}
		if !same {
			to, found, err := resume(fh, last)
			if err != nil {
				return at, false, err
			}
			if !found {
				to = 0
				last = lineMark{}
				if !fn(Event{}, &RewriteError{Op: "read", Path: path, Offset: off}) {
					return Cursor{Day: at.Day}, true, nil
				}
			}
			off = to
		}
	}
	if _, err := fh.Seek(off, io.SeekStart); err != nil {
		return at, false, err
	}
	var lastLine []byte // hashed once, when returning: not every line
	cur := func() Cursor {
		if lastLine != nil {
			last = markOf(lastLine)
		}
		return Cursor{Day: at.Day, Offset: off, last: last}
	}
	br := bufio.NewReaderSize(fh, 256<<10)
	lineNo := 0 // relative when off > 0; only used in messages
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return cur(), false, nil // partial tail: not consumed
		}
		if err != nil {
			return cur(), false, err
		}
		off += int64(len(line))
		lastLine = line
		lineNo++
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		e, perr := ParseEventLine(body)
		if perr != nil {
			if !fn(Event{}, &LineError{Path: path, Line: lineNo, Err: perr}) {
				return cur(), true, nil
			}
			continue
		}
		if f.Match(e) && !fn(e, nil) {
			return cur(), true, nil
		}
	}
}

// End returns the cursor after the last complete line of the
// journal, without reading it: where to start following only new events.
func End(root string) (Cursor, error) {
	dir := filepath.Join(root, Dir)
	days, err := journalDays(dir)
	if err != nil || len(days) == 0 {
		return Cursor{}, err
	}
	day := days[len(days)-1]
	f, err := os.Open(filepath.Join(dir, day+".jsonl"))
	if err != nil {
		return Cursor{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Cursor{}, err
	}
	// A line being written right now is not complete: stop before it.
	for end := fi.Size(); end > 0; {
		start := max(end-64<<10, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return Cursor{}, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			c := Cursor{Day: day, Offset: start + int64(i) + 1}
			c.last, err = markAt(f, c.Offset)
			return c, err
		}
		end = start
	}
	return Cursor{Day: day}, nil
}

// Follow calls fn for every matching event appended after cursor
// (use the Cursor returned by Read, or the zero Cursor for
// everything) until ctx is done or fn returns false. It waits on fsnotify
// events for the journal directory; poll > 0 additionally re-reads at that
// interval, for network filesystems where other machines' appends produce
// no events. If inotify cannot be used it polls (every poll, or a second)
// and passes fn the reason as an error first.
func Follow(ctx context.Context, root string, from Cursor, f Filter, poll time.Duration, fn func(Event, error) bool) error {
	dir := filepath.Join(root, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		if err = fw.Add(dir); err != nil {
			fw.Close()
			fw = nil
		}
	}
	if err != nil {
		// Out of inotify instances or watches: poll, and say so (a
		// warning for the caller, not the end of following).
		if poll <= 0 {
			poll = time.Second // the watcher's DefaultPoll
		}
		if !fn(Event{}, fmt.Errorf("follow %s: %w: polling every %v", dir, err, poll)) {
			return nil
		}
	} else {
		defer fw.Close()
	}
	var tick <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw != nil {
		events, errs = fw.Events, fw.Errors
	}
	cur := from
	stopped := false
	read := func() error {
		c, err := readFrom(dir, cur, f, func(e Event, err error) bool {
			if !fn(e, err) {
				stopped = true
				return false
			}
			return true
		})
		cur = c
		return err
	}
	// The watch exists now: read everything already there, then follow.
	if err := read(); err != nil || stopped {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
		case <-errs: // overflow or backend error: a re-read covers it
		case <-tick:
		}
		if err := read(); err != nil || stopped {
			return err
		}
	}
}
