package watcher

import (
	"strings"

	"github.com/tavernhq/tavern/docstore"
)

// Field indexes. A watching projection answers `field=value` queries
// over a kind from an index of that field, built on the first such query
// and kept current by put and drop: the daemon answers `ls agents --where
// state=working` over 100k agents by looking at the matching ones only.
// A one-shot projection never builds one (a scan is cheaper than an index
// it would use once).
//
// An index maps each scalar text of the field (as docstore.Cond compares
// it; every element of a list of scalars) to the entries that have it.
// Entries whose value the index cannot hold (a map, a list holding lists
// or maps) are kept aside and always checked, and so are the entries of
// files that did not parse, for a query that selects them (Unparsed).
// Entries without the field never match an equality and are not indexed.

// maxIndexes bounds the indexes of a projection; the least recently
// used one is dropped for a new one.
const maxIndexes = 8

// indexMinEntries: kinds with fewer documents are scanned.
const indexMinEntries = 2048

type fieldIndex struct {
	kind, field string
	vals        map[string]*entrySet
	odd         map[*Entry]struct{}
	used        uint64 // p.indexClock at the last query
}

// entrySet is a set of entries: a slice while small (most values of a
// field like name or id have one entry), a map once large.
type entrySet struct {
	small []*Entry
	big   map[*Entry]struct{}
}

const smallSet = 32

func (s *entrySet) add(e *Entry) {
	if s.big != nil {
		s.big[e] = struct{}{}
		return
	}
	s.small = append(s.small, e)
	if len(s.small) > smallSet {
		s.big = make(map[*Entry]struct{}, 2*smallSet)
		for _, x := range s.small {
			s.big[x] = struct{}{}
		}
		s.small = nil
	}
}

func (s *entrySet) remove(e *Entry) {
	if s.big != nil {
		delete(s.big, e)
		return
	}
	for i, x := range s.small {
		if x == e {
			s.small[i] = s.small[len(s.small)-1]
			s.small[len(s.small)-1] = nil
			s.small = s.small[:len(s.small)-1]
			return
		}
	}
}

func (s *entrySet) len() int {
	if s == nil {
		return 0
	}
	if s.big != nil {
		return len(s.big)
	}
	return len(s.small)
}

func (s *entrySet) appendTo(out []*Entry) []*Entry {
	if s == nil {
		return out
	}
	if s.big != nil {
		for e := range s.big {
			out = append(out, e)
		}
		return out
	}
	return append(out, s.small...)
}

type indexKey struct{ kind, field string }

// indexable reports whether an equality on field can use an index.
func indexable(c docstore.Cond) bool {
	return c.Op == docstore.OpEq && !strings.Contains(c.Field, ".")
}

// texts returns the index keys of e's value of the field; odd is true if
// the value cannot be indexed.
func (x *fieldIndex) texts(e *Entry, buf []byte) (keys []string, odd bool) {
	if !e.Parsed() {
		return nil, true
	}
	raw := e.raw
	if raw == "" {
		var err error
		if raw, err = encodeFields(e); err != nil {
			return nil, true
		}
	}
	val, found, ok := rawField(raw, x.field)
	if !ok || !found {
		return nil, false
	}
	if s, present, scalar := rawScalar(val, buf); scalar {
		if !present {
			return nil, false
		}
		return []string{keyText(val, s)}, false
	}
	if val[0] != tagList {
		return nil, true
	}
	d := &decoder{s: val[1:]}
	n := d.count()
	for range n {
		start := d.s
		d.skip(1)
		if d.err != nil {
			return nil, true
		}
		v := start[:len(start)-len(d.s)]
		s, present, scalar := rawScalar(v, buf)
		if !scalar {
			return nil, true
		}
		if present {
			keys = append(keys, keyText(v, s))
		}
	}
	return keys, false
}

// keyText is s as an index key: a string value is a substring of the
// entry's encoding already; numbers were formatted into scratch space
// and are copied.
func keyText(val, s string) string {
	if val[0] == tagString {
		return s
	}
	return strings.Clone(s)
}

func (x *fieldIndex) add(e *Entry) {
	var buf [32]byte
	keys, odd := x.texts(e, buf[:])
	if odd {
		x.odd[e] = struct{}{}
		return
	}
	for _, k := range keys {
		set := x.vals[k]
		if set == nil {
			set = &entrySet{}
			x.vals[k] = set
		}
		set.add(e)
	}
}

func (x *fieldIndex) remove(e *Entry) {
	var buf [32]byte
	keys, odd := x.texts(e, buf[:])
	if odd {
		delete(x.odd, e)
		return
	}
	for _, k := range keys {
		if set := x.vals[k]; set != nil {
			set.remove(e)
			if set.len() == 0 {
				delete(x.vals, k)
			}
		}
	}
}

// indexPut and indexDrop keep the kind's indexes current; p.mu is held.
func (p *Projection) indexPut(old, e *Entry) {
	if len(p.indexes) == 0 {
		return
	}
	if old != nil {
		p.indexDrop(old)
	}
	for k, x := range p.indexes {
		if k.kind == e.Kind {
			x.add(e)
		}
	}
}

func (p *Projection) indexDrop(old *Entry) {
	for k, x := range p.indexes {
		if k.kind == old.Kind {
			x.remove(old)
		}
	}
}

// candidates returns the entries of kind that can satisfy where, from an
// index of one of its equalities (built if missing), or ok false when the
// query must scan. p.mu is held for writing (an index may be built).
func (p *Projection) candidates(kind string, where []docstore.Cond) (out []*Entry, ok bool) {
	if !p.opt.Watch || len(p.byKind[kind]) < indexMinEntries {
		return nil, false
	}
	var best *entrySet
	var bestX *fieldIndex
	for _, c := range where {
		if !indexable(c) {
			continue
		}
		x := p.index(kind, c.Field)
		set := x.vals[c.Value]
		if bestX == nil || set.len()+len(x.odd) < best.len()+len(bestX.odd) {
			best, bestX = set, x
		}
	}
	if bestX == nil {
		return nil, false
	}
	out = best.appendTo(make([]*Entry, 0, best.len()+len(bestX.odd)))
	for e := range bestX.odd {
		out = append(out, e)
	}
	return out, true
}

// index returns the index of kind's field, building it (and dropping the
// least recently used one beyond maxIndexes). p.mu is held for writing.
func (p *Projection) index(kind, field string) *fieldIndex {
	p.indexClock++
	k := indexKey{kind, field}
	if x := p.indexes[k]; x != nil {
		x.used = p.indexClock
		return x
	}
	if len(p.indexes) >= maxIndexes {
		var oldest indexKey
		var min uint64
		for k, x := range p.indexes {
			if min == 0 || x.used < min {
				oldest, min = k, x.used
			}
		}
		delete(p.indexes, oldest)
	}
	x := &fieldIndex{kind: kind, field: field, vals: map[string]*entrySet{}, odd: map[*Entry]struct{}{}, used: p.indexClock}
	for _, e := range p.byKind[kind] {
		x.add(e)
	}
	if p.indexes == nil {
		p.indexes = map[indexKey]*fieldIndex{}
	}
	p.indexes[k] = x
	return x
}
