package journal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Head is what the journal last recorded about one document path.
type Head struct {
	Rev     string    // revision of the last record ("" when it says removed)
	Present bool      // false: the last record says the document was removed
	Valid   bool      // the last record was of a valid document
	At      time.Time // when the recorded state was current (see Heads)
	// LastValid is the revision of the last valid state recorded since
	// the document last appeared ("" if none: a document first recorded
	// invalid and then valid was created by the valid one).
	LastValid string
}

// Heads is the journal's per-path state: for every document path the
// journal mentions, the state its last record gives (Head), derived from
// the journal alone. It answers "is this revision of this path already
// journaled?" for the watcher's external-change decisions, independently
// of the index cache, so refreshing the index (tavern ls) never hides a
// change from the journal.
//
// Records are ordered by the time their state was current, not by their
// place in the file: an external record carries the time its content
// was read (Data["seen"]), which may precede an engine record appended
// before it. A record whose time is older than the head's does not
// replace it (a hand edit that the engine overwrote before the watcher
// decided about it is journaled, and the engine's state stays the head).
//
// What sets a head: doc.removed (removed), doc.moved (its from path
// removed, its path present with the revision, or the from path's when
// the record has none: a rename keeps the content), an external record
// (Data["op"] says which), and any other doc.* record with a revision
// (doc.created, doc.updated: the engine wrote that revision). Domain
// events (item.claimed...) and records without a revision do not.
//
// A Heads is kept current by CatchUp, which reads the journal from where
// it stopped; Save writes a checkpoint (events/.heads: the heads and the
// position they were read to, with a digest of the bytes before it) so
// the next LoadHeads reads only the journal's new lines. A checkpoint
// that does not match the journal (a day file truncated or replaced) is
// ignored and the heads are rebuilt from the whole journal.
//
// A Heads is safe for concurrent use.
type Heads struct {
	dir string

	mu    sync.Mutex
	cur   Cursor
	paths map[string]*headState
	dirty bool // changed since loaded or saved
}

type headState struct {
	Head
	recent []mark // the latest records, for Explained
	// digest of the fields of revision fieldsRev, when a watcher saw
	// them: what a later change's changed fields are computed against.
	fieldsRev string
	fields    FieldDigest
}

// mark is one record of a path: the state it gives and its time.
type mark struct {
	rev     string
	present bool
	valid   bool
	at      time.Time
}

// Recent records are kept for this long (and at most maxMarks per path):
// Explained looks back to the watcher's previous observation of a path,
// which is seconds ago for a path that keeps changing.
const (
	markKeep = 10 * time.Minute
	maxMarks = 32
)

// HeadsFile is the checkpoint's name in the journal directory. Its dot
// hides it from journal readers and watchers.
const HeadsFile = ".heads"

// LoadHeads returns the heads of the journal of the store at root, read
// from the checkpoint and the journal lines appended since.
func LoadHeads(root string) (*Heads, error) {
	h := &Heads{dir: filepath.Join(root, Dir), paths: map[string]*headState{}}
	if err := h.load(); err != nil {
		// A checkpoint that cannot be used costs a full read, not truth.
		h.cur, h.paths = Cursor{}, map[string]*headState{}
	}
	if err := h.CatchUp(); err != nil {
		return nil, err
	}
	return h, nil
}

// CatchUp applies the journal lines appended since the last call.
func (h *Heads) CatchUp() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.catchUp()
}

func (h *Heads) catchUp() error {
	cur, err := readFrom(h.dir, h.cur, Filter{}, func(e Event, err error) bool {
		if err == nil {
			h.apply(e)
		}
		return true
	})
	h.cur = cur
	return err
}

// Get returns the head of path.
func (h *Heads) Get(path string) (Head, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.paths[path]
	if !ok {
		return Head{}, false
	}
	return s.Head, true
}

// Paths calls fn for every path whose head says present.
func (h *Heads) Paths(fn func(path string, hd Head)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, s := range h.paths {
		if s.Present {
			fn(p, s.Head)
		}
	}
}

// Explained reports whether the journal already accounts for path being
// at revision rev (present) or removed (!present): its head says so, or
// a record of that state was current after the time after (the watcher's
// previous observation of the path: a record since then explains the
// change it observed, even if later records moved the head on). A path
// the journal never mentioned is explained only as removed.
func (h *Heads) Explained(path, rev string, present bool, after time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.paths[path]
	if !ok {
		return !present
	}
	same := func(r string, p bool) bool { return p == present && (!p || r == rev) }
	if same(s.Rev, s.Present) {
		return true
	}
	for _, m := range s.recent {
		if m.at.After(after) && same(m.rev, m.present) {
			return true
		}
	}
	return false
}

// HeadAt returns the head of path as it was at time t: from the latest
// records whose time is not after t. A decision about a change observed
// at t is relative to that state, not to records of later changes
// (which the engine may have appended before the decision). It reports
// false if the journal had no record of path by then (as far as the
// records kept say: see markKeep).
func (h *Heads) HeadAt(path string, t time.Time) (Head, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.paths[path]
	if !ok {
		return Head{}, false
	}
	if !s.At.After(t) {
		return s.Head, true
	}
	ms := slices.Clone(s.recent)
	slices.SortStableFunc(ms, func(a, b mark) int { return a.at.Compare(b.at) })
	var hd Head
	found := false
	for _, m := range ms {
		if m.at.After(t) {
			break
		}
		found = true
		hd.Rev, hd.Present, hd.Valid, hd.At = m.rev, m.present, m.valid, m.at
		switch {
		case !m.present:
			hd.LastValid = ""
		case m.valid:
			hd.LastValid = m.rev
		}
	}
	return hd, found
}

// SetFields records the fields of revision rev of path (a state a
// watcher saw), for Changed. It keeps one revision per path, and only
// for a path the journal records.
func (h *Heads) SetFields(path, rev string, fields map[string]any) {
	h.mu.Lock()
	s, ok := h.paths[path]
	if !ok || s.fieldsRev == rev {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	d := DigestFields(fields) // outside the lock: it encodes every value
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.paths[path]; ok {
		s.fieldsRev, s.fields = rev, d
		h.dirty = true
	}
}

// FieldsOf returns the digest of the fields of revision rev of path, if
// recorded by SetFields.
func (h *Heads) FieldsOf(path, rev string) (FieldDigest, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.paths[path]
	if !ok || rev == "" || s.fieldsRev != rev {
		return nil, false
	}
	return s.fields, true
}

// Apply records e as if read from the journal (AppendIf's callers use it
// for the events they append, so later decisions see them at once).
func (h *Heads) Apply(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.apply(e)
}

func (h *Heads) apply(e Event) {
	if e.Path == "" {
		return
	}
	at := e.Time
	switch e.Type {
	case TypeError, TypeMissed, TypeDegraded:
		return
	case TypeRemoved:
		h.set(e.Path, "", false, false, at)
	case TypeMoved:
		from, _ := e.Data["from"].(string)
		rev := e.Rev
		if from != "" {
			if s := h.paths[from]; rev == "" && s != nil && s.Present {
				rev = s.Rev // a rename keeps the content
			}
			h.set(from, "", false, false, at)
		}
		if rev != "" {
			h.set(e.Path, rev, true, true, at)
		}
	case TypeExternal:
		if s, _ := e.Data["seen"].(string); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				at = t
			}
		}
		switch op, _ := e.Data["op"].(string); op {
		case TypeRemoved:
			h.set(e.Path, "", false, false, at)
		case TypeInvalid:
			h.set(e.Path, e.Rev, true, false, at)
		default:
			if e.Rev != "" {
				h.set(e.Path, e.Rev, true, true, at)
			}
		}
	case TypeInvalid:
		if e.Rev != "" {
			h.set(e.Path, e.Rev, true, false, at)
		}
	default:
		// Domain events (item.claimed, tuple.in...) repeat what the doc.*
		// event of the same write says, sometimes for a path the
		// document has already left: only doc.* events set heads.
		if e.Rev != "" && strings.HasPrefix(e.Type, "doc.") {
			h.set(e.Path, e.Rev, true, true, at)
		}
	}
}

func (h *Heads) set(path, rev string, present, valid bool, at time.Time) {
	s := h.paths[path]
	if s == nil {
		s = &headState{}
		h.paths[path] = s
	} else if !s.At.IsZero() && at.Before(s.At) {
		// An older state recorded late: it happened, but the head is
		// the newer one. Explained still finds it.
		s.recent = addMark(s.recent, mark{rev, present, valid, at})
		h.dirty = true
		return
	}
	s.Rev, s.Present, s.Valid, s.At = rev, present, valid, at
	switch {
	case !present:
		s.LastValid = ""
	case valid:
		s.LastValid = rev
	}
	s.recent = addMark(s.recent, mark{rev, present, valid, at})
	h.dirty = true
}

func addMark(ms []mark, m mark) []mark {
	cut := m.at.Add(-markKeep)
	i := 0
	for i < len(ms) && (ms[i].at.Before(cut) || len(ms)-i >= maxMarks) {
		i++
	}
	ms = append(ms[i:], m)
	return ms
}

// Save writes the checkpoint if anything changed since the last load or
// save. The write is atomic (temp file, rename); several processes may
// save, the last one wins, and each checkpoint is valid for the position
// it records.
func (h *Heads) Save() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.dirty || h.cur.Day == "" {
		return nil
	}
	tail, err := tailDigest(h.dir, h.cur)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	hdr, _ := json.Marshal(headsHeader{V: headsVersion, Day: h.cur.Day, Offset: h.cur.Offset, Tail: tail})
	b.Write(hdr)
	b.WriteByte('\n')
	enc := json.NewEncoder(&b)
	for p, s := range h.paths {
		l := headLine{P: p, R: s.Rev, X: s.Present, V: s.Valid, T: s.At.UnixNano(), L: s.LastValid}
		if s.fieldsRev != "" {
			l.FR, l.FD = s.fieldsRev, s.fields
		}
		enc.Encode(l)
	}
	tmp, err := os.CreateTemp(h.dir, HeadsFile+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(h.dir, HeadsFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	h.dirty = false
	return nil
}

const headsVersion = 2

type headsHeader struct {
	V      int    `json:"v"`
	Day    string `json:"day"`
	Offset int64  `json:"offset"`
	Tail   string `json:"tail"` // sha256 of up to 256 bytes before Offset
}

type headLine struct {
	P string `json:"p"`
	R string `json:"r,omitempty"`
	X bool   `json:"x,omitempty"` // present
	V bool   `json:"v,omitempty"`
	T int64  `json:"t"`
	L string `json:"l,omitempty"`
	// the fields digest of revision FR
	FR string      `json:"fr,omitempty"`
	FD FieldDigest `json:"fd,omitempty"`
}

var errBadCheckpoint = errors.New("heads checkpoint does not match the journal")

func (h *Heads) load() error {
	f, err := os.Open(filepath.Join(h.dir, HeadsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return err
	}
	var hdr headsHeader
	if err := json.Unmarshal(line, &hdr); err != nil {
		return err
	}
	if hdr.V != headsVersion {
		return fmt.Errorf("%w: version %d", errBadCheckpoint, hdr.V)
	}
	cur := Cursor{Day: hdr.Day, Offset: hdr.Offset}
	if tail, err := tailDigest(h.dir, cur); err != nil || tail != hdr.Tail {
		return errBadCheckpoint
	}
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		var l headLine
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		hd := Head{Rev: l.R, Present: l.X, Valid: l.V, LastValid: l.L}
		if l.T != 0 {
			hd.At = time.Unix(0, l.T).UTC()
		}
		// The loaded state is the base HeadAt folds later records on.
		h.paths[l.P] = &headState{Head: hd, recent: []mark{{hd.Rev, hd.Present, hd.Valid, hd.At}},
			fieldsRev: l.FR, fields: l.FD}
	}
	h.cur = cur
	return nil
}

// tailDigest hashes up to 256 bytes of the day file before the cursor:
// enough to tell that the file the checkpoint was read from is still the
// one there.
func tailDigest(dir string, c Cursor) (string, error) {
	f, err := os.Open(filepath.Join(dir, c.Day+".jsonl"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	start := max(c.Offset-256, 0)
	buf := make([]byte, c.Offset-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return "", fmt.Errorf("%w: %v", errBadCheckpoint, err)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), nil
}
