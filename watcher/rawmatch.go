package watcher

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/tavernhq/tavern/docstore"
)

// Matching conditions on encoded fields (Entry.raw) without decoding
// them: a query over 100k documents looks at one key of each, and builds
// nothing for the documents that do not match.

// rawField finds the top-level key in raw (an encoded map) and returns
// its encoded value. found is false if the key is missing; ok is false if
// raw is not a map (or is malformed). It is the inner loop of a query
// over every document of a kind, hence the hand-written scanning.
func rawField(raw, key string) (val string, found, ok bool) {
	if len(raw) == 0 || raw[0] != tagMap {
		return "", false, false
	}
	n, i, ok := scanUvarint(raw, 1)
	if !ok {
		return "", false, false
	}
	for ; n > 0; n-- {
		kl, j, ok := scanUvarint(raw, i)
		if !ok || kl > uint64(len(raw)-j) {
			return "", false, false
		}
		k := raw[j : j+int(kl)]
		end, ok := scanValue(raw, j+int(kl), 0)
		if !ok {
			return "", false, false
		}
		if len(k) == len(key) && k == key {
			return raw[j+int(kl) : end], true, true
		}
		i = end
	}
	return "", false, true
}

// scanUvarint reads a uvarint at s[i:] and returns it and the index after.
func scanUvarint(s string, i int) (uint64, int, bool) {
	if i < len(s) && s[i] < 0x80 {
		return uint64(s[i]), i + 1, true // the common case: one byte
	}
	var v uint64
	for k := 0; i+k < len(s) && k < binary.MaxVarintLen64; k++ {
		b := s[i+k]
		if b < 0x80 {
			return v | uint64(b)<<(7*k), i + k + 1, true
		}
		v |= uint64(b&0x7f) << (7 * k)
	}
	return 0, 0, false
}

// scanValue returns the index just after the encoded value at s[i:].
func scanValue(s string, i, depth int) (int, bool) {
	if i >= len(s) || depth > 64 {
		return 0, false
	}
	tag := s[i]
	i++
	switch tag {
	case tagNil, tagTrue, tagFalse:
		return i, true
	case tagString:
		n, j, ok := scanUvarint(s, i)
		if !ok || n > uint64(len(s)-j) {
			return 0, false
		}
		return j + int(n), true
	case tagInt, tagInt64, tagUint64:
		_, j, ok := scanUvarint(s, i)
		return j, ok
	case tagFloat:
		if len(s)-i < 8 {
			return 0, false
		}
		return i + 8, true
	case tagList, tagMap:
		n, j, ok := scanUvarint(s, i)
		if !ok {
			return 0, false
		}
		for ; n > 0; n-- {
			if tag == tagMap {
				kl, k, ok := scanUvarint(s, j)
				if !ok || kl > uint64(len(s)-k) {
					return 0, false
				}
				j = k + int(kl)
			}
			if j, ok = scanValue(s, j, depth+1); !ok {
				return 0, false
			}
		}
		return j, true
	}
	return 0, false
}

// rawScalar turns an encoded scalar into the text docstore.Cond compares
// (docstore's scalarString); buf is scratch space for numbers. ok is
// false for values that are not scalars (lists, maps).
func rawScalar(val string, buf []byte) (s string, present, ok bool) {
	d := &decoder{s: val}
	switch tag := d.byte1(); tag {
	case tagNil:
		return "", false, true
	case tagString:
		return d.str(), true, d.err == nil
	case tagInt, tagInt64:
		return string(strconv.AppendInt(buf[:0], d.varint(), 10)), true, d.err == nil
	case tagUint64:
		return string(strconv.AppendUint(buf[:0], d.uvarint(), 10)), true, d.err == nil
	case tagFloat:
		b := d.bytes(8)
		if len(b) != 8 {
			return "", false, false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64([]byte(b)))
		return string(strconv.AppendFloat(buf[:0], f, 'f', -1, 64)), true, true
	case tagTrue:
		return "true", true, true
	case tagFalse:
		return "false", true, true
	}
	return "", false, false
}

// matchRaw evaluates conds on encoded fields. decided is false when a
// condition needs the decoded value (a dotted field, a list or map
// value): the caller then decodes and uses docstore.Cond.Match.
func matchRaw(raw string, conds []docstore.Cond) (match, decided bool) {
	var buf [32]byte
	for _, c := range conds {
		if strings.Contains(c.Field, ".") {
			return false, false
		}
		val, found, ok := rawField(raw, c.Field)
		if !ok {
			return false, true // no fields (unparseable): matches nothing, as Query always did
		}
		s, present := "", false
		if found {
			var scalar bool
			if s, present, scalar = rawScalar(val, buf[:]); !scalar {
				return false, false
			}
		}
		if !c.MatchScalar(s, present) {
			return false, true
		}
	}
	return true, true
}
