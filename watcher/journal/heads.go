package journal

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"
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
// events (item.claimed...) and records without a revision do not. A
// doc.created that follows, within lateCreate, the removal of a path the
// journal had no record of is that removal's own creation journaled
// late (its writer appends after the rename that woke the consumer): it
// is kept as a state before the removal, which stays the head.
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

	mu      sync.Mutex
	cur     Cursor
	paths   map[string]*headState
	dirty   bool      // changed since loaded or saved
	stale   bool      // LoadHeads read much past the checkpoint (Stale)
	trimmed time.Time // last trim of old marks
}

type headState struct {
	Head
	recent []mark // the latest records, for Explained
	// base: recent leaves out the head itself, as loaded from the
	// checkpoint (one mark less for each of 100k paths); set adds it
	// before any other.
	base bool
	// digest of the fields of revision fieldsRev, when a watcher saw
	// them: what a later change's changed fields are computed against.
	// Kept encoded (encodeDigest): one string, not a map per path.
	fieldsRev string
	fields    string
	// unseenGone: the head is a removal of a path the journal had no
	// record of. A writer journals its create after the file is visible,
	// so a consumer woken by it (tuple in, queue take) may journal the
	// move first: the doc.created that follows within lateCreate is
	// that creation (lateCreate). lateRev is the one taken so.
	// Neither is kept by a checkpoint (the race is milliseconds wide).
	unseenGone bool
	lateRev    string
}

// lateCreate bounds how long after such a removal a doc.created is taken
// for the creation it undid, rather than a new one: the time a writer
// takes from its rename to its journal append, with room.
const lateCreate = time.Second

// mark is one record of a path: the state it gives and its time, in
// unix nanoseconds (markTime): 48 bytes, where a time.Time made it 64, and
// every edited path keeps two for markKeep.
type mark struct {
	rev string
	// last: the last valid revision as of a loaded head (the base mark),
	// whose earlier records a checkpoint does not keep.
	last    string
	at      int64
	present bool
	valid   bool
}

// markTime is t in unix nanoseconds, ordered as the times are: the zero
// time first, times before 1678 or after 2262 (which UnixNano cannot
// hold) clamped to the ends.
func markTime(t time.Time) int64 {
	switch {
	case t.IsZero():
		return math.MinInt64
	case t.Before(minMarkTime):
		return math.MinInt64 + 1
	case t.After(maxMarkTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minMarkTime = time.Unix(0, math.MinInt64+1)
	maxMarkTime = time.Unix(0, math.MaxInt64)
)

// time is the mark's time as a UTC time.Time.
func (m mark) time() time.Time {
	if m.at == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, m.at).UTC()
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
	from := h.cur
	if err := h.CatchUp(); err != nil {
		return nil, err
	}
	h.stale = h.cur.Day != from.Day || h.cur.Offset-from.Offset > staleBytes
	return h, nil
}

// staleBytes is how much journal past its checkpoint LoadHeads reads
// before Stale says a new checkpoint is worth its write.
const staleBytes = 1 << 20

// Stale reports whether LoadHeads read much of the journal past the
// checkpoint (or had none to start from): a caller that would not save
// the heads otherwise saves them, or every load pays that read again.
func (h *Heads) Stale() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stale
}

// CatchUp applies the journal lines appended since the last call.
func (h *Heads) CatchUp() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.catchUp()
}

func (h *Heads) catchUp() error {
	rewritten := false
	apply := func(e Event, err error) bool {
		if errors.Is(err, ErrRewritten) {
			rewritten = true
			return false
		}
		if err == nil {
			h.apply(e)
		}
		return true
	}
	cur, err := readFrom(h.dir, h.cur, Filter{}, apply)
	if rewritten {
		// Not the journal the heads were read from (a sync adopted the
		// remote's store): rebuilt from the whole journal, as LoadHeads
		// without a checkpoint would.
		h.paths, h.dirty = map[string]*headState{}, true
		cur, err = readFrom(h.dir, Cursor{}, Filter{}, apply)
	}
	h.cur = cur
	if now := time.Now(); now.Sub(h.trimmed) > markKeep/10 {
		h.trim(now)
	}
	return err
}

// trim drops the marks older than markKeep of every path (addMark drops
// them only when the path is recorded again, so a path edited once would
// keep its marks for the life of the process).
func (h *Heads) trim(now time.Time) {
	h.trimmed = now
	cut := markTime(now.Add(-markKeep))
	for _, s := range h.paths {
		if !slices.ContainsFunc(s.recent, func(m mark) bool { return m.at < cut }) {
			continue
		}
		keep := s.recent[:0]
		for _, m := range s.recent {
			if m.at >= cut {
				keep = append(keep, m)
			}
		}
		if len(keep) == 0 {
			s.recent = nil
		} else {
			s.recent = slices.Clip(keep)
		}
	}
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
	since := markTime(after)
	for _, m := range s.recent {
		if m.at > since && same(m.rev, m.present) {
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
	slices.SortStableFunc(ms, func(a, b mark) int { return cmp.Compare(a.at, b.at) })
	var hd Head
	found := false
	until := markTime(t)
	for _, m := range ms {
		if m.at > until {
			break
		}
		found = true
		hd.Rev, hd.Present, hd.Valid, hd.At = m.rev, m.present, m.valid, m.time()
		switch {
		case !m.present:
			hd.LastValid = ""
		case m.valid:
			hd.LastValid = m.rev
		case m.last != "":
			hd.LastValid = m.last
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
	d := encodeDigest(DigestFields(fields)) // outside the lock: it encodes every value
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.paths[path]; ok {
		s.fieldsRev, s.fields = rev, d
		h.dirty = true
	}
}

// HasFields reports whether SetFields recorded the fields of revision rev
// of path.
func (h *Heads) HasFields(path, rev string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.paths[path]
	return ok && rev != "" && s.fieldsRev == rev
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
	return decodeDigest(s.fields)
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
	at := e.Time.Time
	switch e.Type {
	case TypeError, TypeMissed, TypeDegraded:
		return
	case TypeRemoved:
		h.setGone(e.Path, at)
	case TypeMoved:
		from, _ := e.Data["from"].(string)
		rev := e.Rev
		if from != "" {
			if s := h.paths[from]; rev == "" && s != nil && s.Present {
				rev = s.Rev // a rename keeps the content
			}
			h.setGone(from, at)
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
			if e.Type == TypeCreated && h.late(e.Path, e.Rev, at) {
				return
			}
			h.set(e.Path, e.Rev, true, true, at)
		}
	}
}

// setGone records path removed at at, by the engine; a path the journal
// had no record of is marked unseenGone.
func (h *Heads) setGone(path string, at time.Time) {
	first := h.paths[path] == nil
	h.set(path, "", false, false, at)
	if s := h.paths[path]; first && s != nil && !s.Present {
		s.unseenGone = true
	}
}

// late reports whether a doc.created of path (rev, at) is the late record
// of the creation that an unseenGone removal undid, and if so records it
// as a state before the removal: it happened, and the path stays removed.
func (h *Heads) late(path, rev string, at time.Time) bool {
	s := h.paths[path]
	if s == nil || !s.unseenGone || s.Present {
		return false
	}
	if s.lateRev != "" {
		return s.lateRev == rev // applied again (Apply, then CatchUp)
	}
	if at.Before(s.At) || at.Sub(s.At) > lateCreate {
		return false
	}
	s.lateRev = rev
	s.recent = addMark(s.recent, mark{rev: rev, present: true, valid: true, at: markTime(s.At) - 1})
	h.dirty = true
	return true
}

func (h *Heads) set(path, rev string, present, valid bool, at time.Time) {
	s := h.paths[path]
	if s != nil {
		// A record applied twice (AppendIf's Apply, then CatchUp reading
		// the line back) is one record: a second mark of it cost every
		// edited path a mark and a doubled slice for ten minutes.
		same := func(m mark) bool {
			return m.rev == rev && m.present == present && m.valid == valid && m.at == markTime(at)
		}
		if same(mark{rev: s.Rev, present: s.Present, valid: s.Valid, at: markTime(s.At)}) || slices.ContainsFunc(s.recent, same) {
			return
		}
	}
	if s != nil && s.base {
		// Room for the record that follows: a path edited once (most
		// are) needs exactly two marks.
		s.recent = append(make([]mark, 0, 2), mark{rev: s.Rev, last: s.LastValid, at: markTime(s.At), present: s.Present, valid: s.Valid})
		s.base = false
	}
	if s == nil {
		s = &headState{}
		h.paths[path] = s
	} else if !s.At.IsZero() && at.Before(s.At) {
		// An older state recorded late: it happened, but the head is
		// the newer one. Explained still finds it.
		s.recent = addMark(s.recent, mark{rev: rev, present: present, valid: valid, at: markTime(at)})
		h.dirty = true
		return
	}
	s.Rev, s.Present, s.Valid, s.At = rev, present, valid, at
	s.unseenGone, s.lateRev = false, ""
	switch {
	case !present:
		s.LastValid = ""
	case valid:
		s.LastValid = rev
	}
	s.recent = addMark(s.recent, mark{rev: rev, present: present, valid: valid, at: markTime(at)})
	h.dirty = true
}

func addMark(ms []mark, m mark) []mark {
	cut := int64(math.MinInt64)
	if m.at > math.MinInt64+int64(markKeep) {
		cut = m.at - int64(markKeep)
	}
	i := 0
	for i < len(ms) && (ms[i].at < cut || len(ms)-i >= maxMarks) {
		i++
	}
	ms = append(ms[i:], m)
	return ms
}

// Save writes the checkpoint if anything changed since the last load or
// save. The write is atomic (temp file, rename); several processes may
// save, the last one wins, and each checkpoint is valid for the position
// it records.
//
// The checkpoint is a JSON header line (the journal position, a digest
// of the bytes before it, the record count and a CRC-32C of the body)
// and a binary body: per path str(path) byte(flags) str(rev)
// [str(last_valid)] varint(time) [str(fields_rev)] [str(fields)], where
// str is a uvarint length and the bytes, and the flags say which
// optional parts follow (see the ck* constants). At 100k paths it loads
// in tens of milliseconds; the JSON lines of version 2 took a second.
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
	body := make([]byte, 0, 128*len(h.paths))
	for p, s := range h.paths {
		body = appendHead(body, p, s)
	}
	hdr, _ := json.Marshal(headsHeader{V: headsVersion, Day: h.cur.Day, Offset: h.cur.Offset, Tail: tail,
		N: len(h.paths), CRC: crc32.Checksum(body, castagnoli())})
	tmp, err := os.CreateTemp(h.dir, HeadsFile+".tmp*")
	if err != nil {
		return err
	}
	// Two writes, not one copy of the body (12 MB at 100k paths).
	if _, err := tmp.Write(append(hdr, '\n')); err == nil {
		_, err = tmp.Write(body)
	}
	if err != nil {
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

const headsVersion = 3

// Built on first use: making the table at package init would cost every
// tavern command.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

type headsHeader struct {
	V      int    `json:"v"`
	Day    string `json:"day"`
	Offset int64  `json:"offset"`
	Tail   string `json:"tail"` // sha256 of up to 256 bytes before Offset
	N      int    `json:"n"`    // records in the body
	CRC    uint32 `json:"crc"`  // CRC-32C of the body
}

// Flags of a checkpoint record.
const (
	ckPresent   = 1 << iota
	ckValid     // the recorded state was valid
	ckLastSame  // last_valid is rev (not written)
	ckLastOther // last_valid follows
	ckFields    // fields_rev and fields follow
	ckFieldsRev // fields_rev is rev (not written)
)

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHead(b []byte, path string, s *headState) []byte {
	var flags byte
	if s.Present {
		flags |= ckPresent
	}
	if s.Valid {
		flags |= ckValid
	}
	switch {
	case s.LastValid == "":
	case s.LastValid == s.Rev:
		flags |= ckLastSame
	default:
		flags |= ckLastOther
	}
	if s.fieldsRev != "" {
		flags |= ckFields
		if s.fieldsRev == s.Rev {
			flags |= ckFieldsRev
		}
	}
	b = appendStr(b, path)
	b = append(b, flags)
	b = appendStr(b, s.Rev)
	if flags&ckLastOther != 0 {
		b = appendStr(b, s.LastValid)
	}
	var t int64
	if !s.At.IsZero() {
		t = s.At.UnixNano()
	}
	b = binary.AppendVarint(b, t)
	if flags&ckFields != 0 {
		if flags&ckFieldsRev == 0 {
			b = appendStr(b, s.fieldsRev)
		}
		b = appendStr(b, s.fields)
	}
	return b
}

// encodeDigest is a FieldDigest as one string: uvarint(n) then, by key,
// str(key) and the 8-byte hash.
func encodeDigest(d FieldDigest) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := binary.AppendUvarint(nil, uint64(len(keys)))
	for _, k := range keys {
		b = appendStr(b, k)
		b = binary.LittleEndian.AppendUint64(b, d[k])
	}
	return string(b)
}

func decodeDigest(s string) (FieldDigest, bool) {
	r := &ckReader{s: s}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(s)) {
		return nil, false
	}
	d := make(FieldDigest, n)
	for range n {
		k := r.str()
		v := r.bytes(8)
		if r.err != nil {
			return nil, false
		}
		d[k] = binary.LittleEndian.Uint64([]byte(v))
	}
	return d, r.err == nil && r.s == ""
}

// ckReader reads a checkpoint body; its strings are substrings of it.
type ckReader struct {
	s   string
	err error
}

func (r *ckReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint([]byte(r.s[:min(len(r.s), binary.MaxVarintLen64)]))
	if n <= 0 {
		r.err = errBadCheckpoint
		return 0
	}
	r.s = r.s[n:]
	return v
}

func (r *ckReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *ckReader) bytes(n uint64) string {
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.s)) {
		r.err = errBadCheckpoint
		return ""
	}
	out := r.s[:n]
	r.s = r.s[n:]
	return out
}

func (r *ckReader) str() string { return r.bytes(r.uvarint()) }

func (r *ckReader) byte1() byte {
	if r.err != nil || r.s == "" {
		r.err = errBadCheckpoint
		return 0
	}
	b := r.s[0]
	r.s = r.s[1:]
	return b
}

var errBadCheckpoint = errors.New("heads checkpoint does not match the journal")

func (h *Heads) load() error {
	raw, err := os.ReadFile(filepath.Join(h.dir, HeadsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	line, body, ok := bytes.Cut(raw, []byte{'\n'})
	if !ok {
		return errBadCheckpoint
	}
	var hdr headsHeader
	if err := json.Unmarshal(line, &hdr); err != nil {
		return err
	}
	if hdr.V != headsVersion {
		return fmt.Errorf("%w: version %d", errBadCheckpoint, hdr.V)
	}
	if crc32.Checksum(body, castagnoli()) != hdr.CRC || hdr.N < 0 || hdr.N > len(body) {
		return fmt.Errorf("%w: checksum", errBadCheckpoint)
	}
	cur := Cursor{Day: hdr.Day, Offset: hdr.Offset}
	if tail, err := tailDigest(h.dir, cur); err != nil || tail != hdr.Tail {
		return errBadCheckpoint
	}
	// Marked now that the file is known to be the one: a rewrite from
	// here on is told from an append (readDay).
	if cur.last, err = markDay(h.dir, cur); err != nil {
		return errBadCheckpoint
	}
	// Read in place: decodeHeads copies what it keeps.
	paths, err := decodeHeads(unsafe.String(unsafe.SliceData(body), len(body)), hdr.N)
	if err != nil {
		return err
	}
	h.paths, h.cur = paths, cur
	return nil
}

// decodeHeads decodes the n states of a checkpoint's body. No string of
// the result points into body (TestDecodeHeadsCopies).
func decodeHeads(body string, n int) (map[string]*headState, error) {
	// One slab for the states; each path's strings are copied into one
	// allocation of their own, so that those an edit replaces are freed
	// (substrings of the body would keep all of it, and every replaced
	// revision and digest, for the life of the process).
	r := &ckReader{s: body}
	slab := make([]headState, n)
	paths := make(map[string]*headState, n)
	for i := range slab {
		path := r.str()
		flags := r.byte1()
		rev := r.str()
		var last, frev, fields string
		if flags&ckLastOther != 0 {
			last = r.str()
		}
		t := r.varint()
		if flags&ckFields != 0 {
			if flags&ckFieldsRev == 0 {
				frev = r.str()
			}
			fields = r.str()
		}
		if r.err != nil {
			return nil, r.err
		}
		// The path apart (the map's key outlives the states under it),
		// and the digest (SetFields replaces it).
		path = strings.Clone(path)
		all := concat(rev, last, frev)
		a := len(rev)
		rev, last, frev = all[:a], all[a:a+len(last)], all[a+len(last):]
		fields = strings.Clone(fields)
		s := &slab[i]
		s.Rev = rev
		s.Present, s.Valid = flags&ckPresent != 0, flags&ckValid != 0
		switch {
		case flags&ckLastSame != 0:
			s.LastValid = rev
		case flags&ckLastOther != 0:
			s.LastValid = last
		}
		if t != 0 {
			s.At = time.Unix(0, t).UTC()
		}
		if flags&ckFields != 0 {
			s.fieldsRev = rev
			if flags&ckFieldsRev == 0 {
				s.fieldsRev = frev
			}
			s.fields = fields
		}
		// The loaded state is the base HeadAt folds later records on.
		s.base = true
		paths[path] = s
	}
	if r.s != "" {
		return nil, fmt.Errorf("%w: trailing bytes", errBadCheckpoint)
	}
	return paths, nil
}

// concat joins parts in one new allocation. The + operator returns its
// only non-empty operand as it is: a revision joined with an empty
// last-valid and fields revision stayed a substring of the checkpoint
// body, which kept all of it (15 MB at 100k documents) for the life of
// the process.
func concat(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range parts {
		b.WriteString(p)
	}
	return b.String()
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
