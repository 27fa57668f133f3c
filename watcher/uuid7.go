package watcher

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// v7Source makes the journal's event ids: UUIDv7 (RFC 9562) with the
// layout of github.com/google/uuid's NewV7 (48-bit Unix milliseconds,
// then 12 bits of sub-millisecond time, increased by one when the clock
// has not moved, so ids of one source strictly increase), but with the
// 62 random bits from a ChaCha8 stream seeded once from crypto/rand
// rather than a crypto/rand read and a process-wide mutex per id. It is
// not safe for concurrent use: the journal's group leader owns it, so the
// ids of a Journal increase in file order.
type v7Source struct {
	last int64 // milliseconds<<12 | sub-millisecond fraction of the last id
	rnd  *rand.ChaCha8
}

func newV7Source() v7Source {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (Go 1.24+: it cannot)
	return v7Source{rnd: rand.NewChaCha8(seed)}
}

type uuid7 [16]byte

// next returns an id for time now, greater than every id s returned.
func (s *v7Source) next(now time.Time) uuid7 {
	nano := now.UnixNano()
	milli := nano / 1e6
	t := milli<<12 | (nano-milli*1e6)>>8 // the fraction is < 3907 < 1<<12
	if t <= s.last {
		t = s.last + 1
	}
	s.last = t
	milli, frac := t>>12, t&0xfff
	var u uuid7
	u[0], u[1], u[2] = byte(milli>>40), byte(milli>>32), byte(milli>>24)
	u[3], u[4], u[5] = byte(milli>>16), byte(milli>>8), byte(milli)
	u[6], u[7] = 0x70|byte(frac>>8)&0x0f, byte(frac)
	r := s.rnd.Uint64()
	for i := 8; i < 16; i++ {
		u[i] = byte(r >> (8 * (15 - i)))
	}
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return u
}

// appendString appends the canonical 8-4-4-4-12 lowercase hex form.
func (u uuid7) appendString(b []byte) []byte {
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return append(b, s[:]...)
}

func (u uuid7) String() string { return string(u.appendString(nil)) }
