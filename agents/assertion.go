package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// An assertion is shell code the verifier runs, so it is treated as code:
// AddCommitment journals the sha256 of its text in the commitment.added
// event, and the verifier runs an assertion only if its text still has
// that hash. The record is the journal, not the commitment file: an edit
// of the file (by hand, by sed, by the agent that made it) cannot update
// it. The event is looked up by the time in the commitment's id (a
// UUIDv7, part of its path), so only the journal's day files around the
// moment it was made are read: this machine's, and those of the other
// machines of a synced store (events/<machine>/, brought by the sync).

// AssertionHash is the hex sha256 of an assertion's text, as journaled
// when the commitment is made.
func AssertionHash(assertion string) string {
	sum := sha256.Sum256([]byte(assertion))
	return hex.EncodeToString(sum[:])
}

// TamperedError is a commitment whose assertion does not match the hash
// journaled when it was made, or that has no such record (a commitment
// written by hand). Its assertion is never run.
type TamperedError struct {
	Path     string
	Recorded string // "" when the journal has no record of the commitment
	Current  string
}

func (e *TamperedError) Error() string {
	if e.Recorded == "" {
		return fmt.Sprintf("%s: %v: the journal has no record of this commitment being made; its assertion is never run", e.Path, ErrTampered)
	}
	return fmt.Sprintf("%s: %v (recorded sha256 %.12s, now %.12s); it is never run", e.Path, ErrTampered, e.Recorded, e.Current)
}

func (e *TamperedError) Unwrap() error { return ErrTampered }

// assertionRecords reads the recorded hashes from the journal, one day
// file at a time, and keeps them.
type assertionRecords struct {
	root string
	mu   sync.Mutex
	days map[string]map[string]string // day → commitment path → sha256
}

func newAssertionRecords(root string) *assertionRecords {
	return &assertionRecords{root: root, days: map[string]map[string]string{}}
}

// check returns a *TamperedError unless c's assertion has the recorded
// hash.
func (r *assertionRecords) check(c *Commitment) error {
	cur := AssertionHash(c.Assertion)
	rec := r.lookup(c.Path)
	if rec == cur {
		return nil
	}
	return &TamperedError{Path: c.Path, Recorded: rec, Current: cur}
}

// lookup finds the hash journaled for the commitment at rel, "" if none.
func (r *assertionRecords) lookup(rel string) string {
	_, caps, err := schema.KindOfPath(rel)
	if err != nil {
		return ""
	}
	made, ok := docstore.IDTime(caps["id"])
	if !ok {
		return ""
	}
	// The event follows the create within moments: the same day, or the
	// next one just after midnight.
	days := []string{day(made)}
	if d := day(made.Add(time.Hour)); d != days[0] {
		days = append(days, d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reload := range []bool{false, true} { // a commitment made since the last read
		for _, d := range days {
			if h, ok := r.load(d, reload)[rel]; ok {
				return h
			}
		}
	}
	return ""
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func (r *assertionRecords) load(d string, reload bool) map[string]string {
	if m, ok := r.days[d]; ok && !reload {
		return m
	}
	m := map[string]string{}
	start, _ := time.Parse(time.DateOnly, d)
	f := journal.Filter{Types: []string{"commitment.added"}, Kinds: []string{schema.Commitment.Name},
		Since: start, Until: start.Add(24*time.Hour - time.Nanosecond)}
	journal.Read(r.root, f, func(e journal.Event, err error) bool {
		if h, ok := e.Data["assertion_sha256"].(string); err == nil && ok {
			m[e.Path] = h
		}
		return true
	})
	// A commitment made on another machine of a synced store is recorded
	// in that machine's journal, which the sync brings along: the record
	// is still the journal, never the commitment file.
	journal.ReadOthers(r.root, f, func(_ string, e journal.Event, err error) bool {
		if h, ok := e.Data["assertion_sha256"].(string); err == nil && ok {
			if _, own := m[e.Path]; !own {
				m[e.Path] = h
			}
		}
		return true
	})
	r.days[d] = m
	return m
}
