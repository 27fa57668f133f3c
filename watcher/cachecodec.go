package watcher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The index cache body is a compact binary encoding, not gob: gob spends
// most of its time on type information for every interface value in
// Entry.Fields, which made a warm `ls` slower than it needs to be.
//
//	body    = str(schema) uvarint(n) record*n
//	record  = str(path) state entry
//	state   = uvarint(dev) uvarint(ino) varint(size) varint(mtime)
//	          varint(ctime) varint(seen) hash[32]
//	entry   = str(kind) str(name) str(rev) byte(valid)
//	          uvarint(nerr) (varint(line) varint(col) str(msg))*nerr
//	          value(fields)        -- a map, or nil
//	value   = tag ...  (see the tag constants)
//	str     = uvarint(len) bytes

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

func (e *encoder) record(r *cacheRecord) error {
	mark := len(e.b)
	e.str(r.Entry.Path)
	st := &r.State
	e.uvarint(st.Dev)
	e.uvarint(st.Ino)
	e.varint(st.Size)
	e.varint(st.MTime)
	e.varint(st.CTime)
	e.varint(st.Seen)
	e.b = append(e.b, st.Hash[:]...)
	en := &r.Entry
	e.str(en.Kind)
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
	var fields any
	if en.Fields != nil {
		fields = en.Fields
	}
	if err := e.value(fields); err != nil {
		e.b = e.b[:mark] // leave this one out: it is re-read next time
		return err
	}
	return nil
}

func encodeCache(cd *cacheData) []byte {
	e := &encoder{b: make([]byte, 0, 256*len(cd.Records)+64)}
	e.str(cd.Schema)
	countAt := len(e.b)
	e.b = append(e.b, make([]byte, binary.MaxVarintLen64)...) // patched below
	n := 0
	for i := range cd.Records {
		if e.record(&cd.Records[i]) == nil {
			n++
		}
	}
	// Fixed-width count, so it can be patched in after the records.
	copy(e.b[countAt:], padUvarint(uint64(n)))
	return e.b
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

type decoder struct {
	b   []byte
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
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string { return string(d.bytes(d.uvarint())) }

func (d *decoder) byte1() byte {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

// count reads a length and checks it against what is left (each element
// takes at least one byte), so corrupt input cannot make us allocate.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
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
		if b == nil {
			return nil
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
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

func decodeCache(body []byte) (*cacheData, error) {
	d := &decoder{b: body}
	cd := &cacheData{Schema: d.str()}
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
		if m, ok := d.value(0).(map[string]any); ok {
			en.Fields = m
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return cd, nil
}
