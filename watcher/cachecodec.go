package watcher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tavernhq/tavern/docstore"
)

// The index cache is a compact binary encoding, not gob: gob spends most
// of its time on type information for every interface value in
// Entry.Fields. One section (file) holds the documents of one kind:
//
//	body    = str(schema) str(kind) uvarint(n) record*n
//	record  = str(path) state entry
//	state   = uvarint(dev) uvarint(ino) varint(size) varint(mtime)
//	          varint(ctime) varint(seen) hash[32]
//	entry   = str(name) str(rev) byte(valid)
//	          uvarint(nerr) (varint(line) varint(col) str(msg))*nerr
//	          str(fields)          -- value(map) or value(nil), length-prefixed
//	value   = tag ...  (see the tag constants)
//	str     = uvarint(len) bytes
//
// The fields are length-prefixed so a load can keep them encoded: they
// are decoded only for the entries a query touches, and of those first
// only the keys its conditions name (see Entry.raw).

const (
	tagNil byte = iota
	tagString
	tagInt
	tagInt64
	tagUint64
	tagFloat
	tagTrue
	tagFalse
	tagList
	tagMap
)

// rawNil is the encoding of no fields at all: a document that does not
// parse.
const rawNil = string(rune(tagNil))

var errShort = errors.New("truncated")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.b = append(e.b, tagNil)
	case string:
		e.b = append(e.b, tagString)
		e.str(x)
	case int:
		e.b = append(e.b, tagInt)
		e.varint(int64(x))
	case int64:
		e.b = append(e.b, tagInt64)
		e.varint(x)
	case uint64:
		e.b = append(e.b, tagUint64)
		e.uvarint(x)
	case float64:
		e.b = append(e.b, tagFloat)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x))
	case bool:
		if x {
			e.b = append(e.b, tagTrue)
		} else {
			e.b = append(e.b, tagFalse)
		}
	case []any:
		e.b = append(e.b, tagList)
		e.uvarint(uint64(len(x)))
		for _, y := range x {
			if err := e.value(y); err != nil {
				return err
			}
		}
	case map[string]any:
		e.b = append(e.b, tagMap)
		e.uvarint(uint64(len(x)))
		for k, y := range x {
			e.str(k)
			if err := e.value(y); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("cannot cache a %T", v)
	}
	return nil
}

// encodeFields returns the encoded fields of an entry: its still-encoded
// raw form when it was never decoded.
func encodeFields(en *Entry) (string, error) {
	if en.raw != "" {
		return en.raw, nil
	}
	var fields any
	if en.Fields != nil {
		fields = en.Fields
	}
	var f encoder
	if err := f.value(fields); err != nil {
		return "", err
	}
	return string(f.b), nil
}

func (e *encoder) record(r *cacheRecord) error { return e.recordOf(&r.State, &r.Entry) }

func (e *encoder) recordOf(st *FileState, en *Entry) error {
	fields, err := encodeFields(en)
	if err != nil {
		return err // leave this one out: it is re-read next time
	}
	e.str(en.Path)
	e.uvarint(st.Dev)
	e.uvarint(st.Ino)
	e.varint(st.Size)
	e.varint(st.MTime)
	e.varint(st.CTime)
	e.varint(st.Seen)
	e.b = append(e.b, st.Hash[:]...)
	e.entryBody(en, fields)
	return nil
}

// encodeCache encodes one section. Records of another kind than cd.Kind
// are a programming error and left out.
func encodeCache(cd *cacheData) []byte {
	e := &encoder{b: make([]byte, 0, 256*len(cd.Records)+64)}
	e.str(cd.Schema)
	e.str(cd.Kind)
	countAt := len(e.b)
	e.b = append(e.b, make([]byte, binary.MaxVarintLen64)...) // patched below
	n := 0
	for i := range cd.Records {
		if cd.Records[i].Entry.Kind == cd.Kind && e.record(&cd.Records[i]) == nil {
			n++
		}
	}
	// Fixed-width count, so it can be patched in after the records.
	copy(e.b[countAt:], padUvarint(uint64(n)))
	return e.b
}

// encodeSection encodes the section of kind from a projection's entries
// and the watcher's states, without copying them first (a copy of 100k
// records is 20 MB more at the peak of building the index).
func encodeSection(kind string, recs []sectionRecord) []byte {
	if testHookEncoding != nil {
		testHookEncoding()
	}
	e := &encoder{b: make([]byte, 0, 256*len(recs)+64)}
	e.str(schemaFingerprint())
	e.str(kind)
	countAt := len(e.b)
	e.b = append(e.b, make([]byte, binary.MaxVarintLen64)...) // patched below
	n := 0
	for i := range recs {
		if e.recordOf(&recs[i].st, recs[i].en) == nil {
			n++
		}
	}
	copy(e.b[countAt:], padUvarint(uint64(n)))
	return e.b
}

// testHookEncoding, when set, runs as a section starts encoding (tests).
var testHookEncoding func()

// sectionRecord is one entry of a section to encode, with its file state.
type sectionRecord struct {
	en *Entry
	st FileState
}

// sectionRecords picks the entries of kind that the watcher has a state
// for (the others are not yet confirmed by it). Entries are never changed
// once projected (a change replaces them), so the records can be encoded
// after the locks guarding the maps are released.
func sectionRecords(kind string, entries map[string]*Entry, states map[string]FileState) []sectionRecord {
	recs := make([]sectionRecord, 0, len(entries))
	for path, en := range entries {
		if st, ok := states[path]; ok && en.Kind == kind {
			recs = append(recs, sectionRecord{en, st})
		}
	}
	return recs
}

// padUvarint encodes v as a uvarint of exactly MaxVarintLen64 bytes.
func padUvarint(v uint64) []byte {
	out := make([]byte, binary.MaxVarintLen64)
	for i := 0; i < len(out)-1; i++ {
		out[i] = byte(v&0x7f) | 0x80
		v >>= 7
	}
	out[len(out)-1] = byte(v)
	return out
}

// decoder reads from a string, so every string it returns (paths, names,
// raw fields) is a substring of one allocation rather than one each.
type decoder struct {
	s   string
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(d.s) && i < binary.MaxVarintLen64; i++ {
		b := d.s[i]
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break // overflow
			}
			d.s = d.s[i+1:]
			return v | uint64(b)<<(7*i)
		}
		v |= uint64(b&0x7f) << (7 * i)
	}
	d.fail(errShort)
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *decoder) bytes(n uint64) string {
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)) {
		d.fail(errShort)
		return ""
	}
	out := d.s[:n]
	d.s = d.s[n:]
	return out
}

func (d *decoder) str() string { return d.bytes(d.uvarint()) }

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.s) == 0 {
		d.fail(errShort)
		return 0
	}
	b := d.s[0]
	d.s = d.s[1:]
	return b
}

// count reads a length and checks it against what is left (each element
// takes at least one byte), so corrupt input cannot make us allocate.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

func (d *decoder) value(depth int) any {
	if depth > 64 {
		d.fail(errors.New("nesting too deep"))
		return nil
	}
	switch tag := d.byte1(); tag {
	case tagNil:
		return nil
	case tagString:
		return d.str()
	case tagInt:
		return int(d.varint())
	case tagInt64:
		return d.varint()
	case tagUint64:
		return d.uvarint()
	case tagFloat:
		b := d.bytes(8)
		if len(b) != 8 {
			return nil
		}
		return math.Float64frombits(binary.LittleEndian.Uint64([]byte(b)))
	case tagTrue:
		return true
	case tagFalse:
		return false
	case tagList:
		n := d.count()
		out := make([]any, n)
		for i := range out {
			out[i] = d.value(depth + 1)
		}
		return out
	case tagMap:
		n := d.count()
		out := make(map[string]any, n)
		for range n {
			k := d.str()
			out[k] = d.value(depth + 1)
		}
		return out
	default:
		d.fail(fmt.Errorf("bad value tag %d", tag))
		return nil
	}
}

// skip checks and passes over one value without building it.
func (d *decoder) skip(depth int) {
	if depth > 64 {
		d.fail(errors.New("nesting too deep"))
		return
	}
	switch tag := d.byte1(); tag {
	case tagNil, tagTrue, tagFalse:
	case tagString:
		d.str()
	case tagInt, tagInt64:
		d.varint()
	case tagUint64:
		d.uvarint()
	case tagFloat:
		d.bytes(8)
	case tagList:
		for range d.count() {
			d.skip(depth + 1)
		}
	case tagMap:
		for range d.count() {
			d.str()
			d.skip(depth + 1)
		}
	default:
		d.fail(fmt.Errorf("bad value tag %d", tag))
	}
}

// checkFields reports whether raw is exactly one map or nil value.
func checkFields(raw string) error {
	d := &decoder{s: raw}
	if raw == "" || (raw[0] != tagMap && raw[0] != tagNil) {
		return errors.New("fields are not a map")
	}
	d.skip(0)
	if d.err == nil && d.s != "" {
		d.err = errors.New("trailing bytes after fields")
	}
	return d.err
}

// decodeFields decodes raw fields checked by checkFields.
func decodeFields(raw string) map[string]any {
	d := &decoder{s: raw}
	m, _ := d.value(0).(map[string]any)
	return m
}

// decodeSomeFields decodes only the top-level keys in want (nil if raw
// holds no map): enough to evaluate conditions on those keys.
func decodeSomeFields(raw string, want []string) map[string]any {
	return decodeSomeFieldsInto(nil, raw, want)
}

// decodeSomeFieldsInto is decodeSomeFields reusing out (cleared) if not
// nil, so filtering many entries does not allocate a map for each.
func decodeSomeFieldsInto(out map[string]any, raw string, want []string) map[string]any {
	d := &decoder{s: raw}
	if d.byte1() != tagMap {
		return nil
	}
	if out == nil {
		out = make(map[string]any, len(want))
	}
	clear(out)
	for range d.count() {
		k := d.str()
		hit := false
		for _, w := range want {
			if w == k {
				hit = true
				break
			}
		}
		if hit {
			out[k] = d.value(1)
		} else {
			d.skip(1)
		}
	}
	return out
}

// decodeCache decodes one section. Entries keep their fields encoded
// (Entry.raw), checked but not built.
func decodeCache(body string) (*cacheData, error) {
	d := &decoder{s: body}
	cd := &cacheData{Schema: d.str(), Kind: d.str()}
	n := d.count()
	cd.Records = make([]cacheRecord, n)
	for i := range cd.Records {
		r := &cd.Records[i]
		r.Entry.Path = d.str()
		st := &r.State
		st.Dev = d.uvarint()
		st.Ino = d.uvarint()
		st.Size = d.varint()
		st.MTime = d.varint()
		st.CTime = d.varint()
		st.Seen = d.varint()
		copy(st.Hash[:], d.bytes(32))
		en := &r.Entry
		en.Kind = cd.Kind
		en.Name = d.str()
		en.Rev = d.str()
		en.Valid = d.byte1() == 1
		if ne := d.count(); ne > 0 {
			en.Errors = make([]Problem, ne)
			for j := range en.Errors {
				en.Errors[j] = Problem{Line: int(d.varint()), Col: int(d.varint()), Msg: d.str()}
			}
		}
		en.raw = d.str()
		if d.err != nil {
			return nil, d.err
		}
	}
	if d.err == nil && len(d.s) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	// Fields stay encoded, but they are checked now (on every core), so
	// decoding them later cannot fail.
	var bad atomic.Bool
	const chunk = 4096
	parallel((len(cd.Records)+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(c int) {
		for i := c * chunk; i < min((c+1)*chunk, len(cd.Records)) && !bad.Load(); i++ {
			if checkFields(cd.Records[i].Entry.raw) != nil {
				bad.Store(true)
			}
		}
	})
	if bad.Load() {
		return nil, errors.New("bad fields")
	}
	return cd, nil
}

// AppendEntries encodes entries for another process (the query daemon's
// answers) in the index cache's record layout without file states:
// uvarint(n) then per entry str(path) str(kind) entry. Fields keep their
// exact types (ints stay ints), which JSON would not.
func AppendEntries(b []byte, es []Entry) []byte {
	size := binary.MaxVarintLen64
	for i := range es {
		en := &es[i]
		size += len(en.Path) + len(en.Kind) + len(en.Name) + len(en.Rev) + len(en.raw) + 8*binary.MaxVarintLen64
		for _, pr := range en.Errors {
			size += len(pr.Msg) + 3*binary.MaxVarintLen64
		}
	}
	e := &encoder{b: slices.Grow(b, size)}
	e.uvarint(uint64(len(es)))
	for i := range es {
		en := &es[i]
		fields, err := encodeFields(en)
		if err != nil {
			fields = rawNil // unreachable: projected fields always encode
		}
		e.str(en.Path)
		e.str(en.Kind)
		e.entryBody(en, fields)
	}
	return e.b
}

// DecodeEntries decodes what AppendEntries wrote. The entries' fields are
// checked and left encoded, as Query.Encoded leaves them: Entry.Decode
// decodes them, AppendFieldsJSON writes them as JSON.
func DecodeEntries(b []byte) ([]Entry, error) {
	d := &decoder{s: string(b)}
	n := d.count()
	out := make([]Entry, n)
	for i := range out {
		en := &out[i]
		en.Path = d.str()
		en.Kind = d.str()
		en.Name = d.str()
		en.Rev = d.str()
		en.Valid = d.byte1() == 1
		if ne := d.count(); ne > 0 {
			en.Errors = make([]Problem, ne)
			for j := range en.Errors {
				en.Errors[j] = Problem{Line: int(d.varint()), Col: int(d.varint()), Msg: d.str()}
			}
		}
		raw := d.str()
		if d.err != nil {
			return nil, d.err
		}
		if err := checkFields(raw); err != nil {
			return nil, err
		}
		en.raw = raw
	}
	if d.err == nil && d.s != "" {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheCorrupt, d.err)
	}
	return out, nil
}

// entryBody writes what the index cache's records and the daemon's
// answers share after their heads: name, rev, validity, problems, fields.
func (e *encoder) entryBody(en *Entry, fields string) {
	e.str(en.Name)
	e.str(en.Rev)
	if en.Valid {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
	e.uvarint(uint64(len(en.Errors)))
	for _, p := range en.Errors {
		e.varint(int64(p.Line))
		e.varint(int64(p.Col))
		e.str(p.Msg)
	}
	e.str(fields)
}

// AppendFieldsJSON appends the fields of e as JSON, as docstore.AppendJSON
// writes the map Decode would give (null for a document that did not
// parse), without decoding them first when they are still encoded.
func AppendFieldsJSON(b []byte, e *Entry, indent string) ([]byte, error) {
	if e.raw == "" {
		if e.Fields == nil {
			return append(b, "null"...), nil
		}
		return docstore.AppendJSON(b, e.Fields, indent)
	}
	d := &decoder{s: e.raw}
	b, err := appendRawJSON(b, d, indent, 0)
	if err == nil && d.err == nil && d.s != "" {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCacheCorrupt, d.err)
	}
	return b, err
}

// deeper is indent one step (two spaces) deeper, without allocating for
// the usual indents (all spaces).
func deeper(indent string) string {
	const spaces = "                                "
	if len(indent)+2 <= len(spaces) && indent == spaces[:len(indent)] {
		return spaces[:len(indent)+2]
	}
	return indent + "  "
}

// rawPair is a key of an encoded map and its encoded value.
type rawPair struct{ key, val string }

// appendRawJSON writes the value d is at as JSON. Map keys come out
// sorted, and of a key encoded twice the last value, as decoding into a
// map keeps it.
func appendRawJSON(b []byte, d *decoder, indent string, depth int) ([]byte, error) {
	if depth > 64 {
		d.fail(errors.New("nesting too deep"))
		return b, nil
	}
	switch tag := d.byte1(); tag {
	case tagNil:
		return append(b, "null"...), nil
	case tagString:
		return docstore.AppendJSONString(b, d.str()), nil
	case tagInt, tagInt64:
		return strconv.AppendInt(b, d.varint(), 10), nil
	case tagUint64:
		return strconv.AppendUint(b, d.uvarint(), 10), nil
	case tagFloat:
		f := d.bytes(8)
		if len(f) != 8 {
			return b, nil
		}
		return docstore.AppendJSON(b, math.Float64frombits(binary.LittleEndian.Uint64([]byte(f))), indent)
	case tagTrue:
		return append(b, "true"...), nil
	case tagFalse:
		return append(b, "false"...), nil
	case tagList:
		n := d.count()
		if n == 0 {
			return append(b, "[]"...), nil
		}
		inner := deeper(indent)
		b = append(b, '[')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '\n')
			b = append(b, inner...)
			var err error
			if b, err = appendRawJSON(b, d, inner, depth+1); err != nil || d.err != nil {
				return b, err
			}
		}
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, ']'), nil
	case tagMap:
		n := d.count()
		if n == 0 {
			return append(b, "{}"...), nil
		}
		var small [16]rawPair // a document's fields, without an allocation
		pairs := small[:0]
		for range n {
			k := d.str()
			rest := d.s
			d.skip(depth + 1)
			if d.err != nil {
				return b, nil
			}
			pairs = append(pairs, rawPair{k, rest[:len(rest)-len(d.s)]})
		}
		after := d.s
		slices.SortStableFunc(pairs, func(x, y rawPair) int { return strings.Compare(x.key, y.key) })
		inner := deeper(indent)
		b = append(b, '{')
		first := true
		for i, p := range pairs {
			if i+1 < len(pairs) && pairs[i+1].key == p.key {
				continue // a later value for the same key wins
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '\n')
			b = append(b, inner...)
			b = docstore.AppendJSONString(b, p.key)
			b = append(b, ": "...)
			d.s = p.val // checked by skip above
			var err error
			if b, err = appendRawJSON(b, d, inner, depth+1); err != nil || d.err != nil {
				return b, err
			}
		}
		d.s = after
		b = append(b, '\n')
		b = append(b, indent...)
		return append(b, '}'), nil
	default:
		d.fail(fmt.Errorf("bad value tag %d", tag))
		return b, nil
	}
}
