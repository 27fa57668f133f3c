package queues

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Broker is the queue engine over one store. It is safe for concurrent
// use by many goroutines; any number of Brokers in any number of processes
// may share one store (the files and their locks are the only shared
// state; a Broker's in-memory state is a cache and a fairness counter).
type Broker struct {
	s       *docstore.Store
	j       *journal.Journal
	ownJ    bool
	now     func() time.Time
	who     string
	inst    string // Options.Instance
	reapGap time.Duration
	recheck time.Duration
	// dirRecheck: see Options.DirRecheck.
	dirRecheck time.Duration

	mu       sync.Mutex
	lastReap map[string]time.Time // queue -> last automatic reap in Take
	pass     map[string]float64   // queue -> stride-scheduling pass (stealing)
	vtime    float64
	rng      *rand.Rand
	qcache   map[string]cachedQueue
	dirs     sync.Map // dir path -> *dirHandle: open item state directories (move.go)
	pending  *pendingIndex

	coord    Coordinator // tavern.md coordination engine; nil: local (coord.go)
	ownCoord bool

	holdMu  sync.Mutex
	hold    *docstore.Lock // the holder lock of HoldLock claims, taken lazily
	holdKey string
}

// Options configure Open. The zero value is right for production.
type Options struct {
	// Journal receives the domain events. Nil opens the store's journal
	// (events/<day>.jsonl); the Broker closes only a journal it opened.
	Journal *journal.Journal
	// Now is the clock (tests move it to expire leases without sleeping).
	Now func() time.Time
	// ReapInterval is the least time between two automatic reaps of one
	// queue inside Take (default 1s; a Take that finds nothing always
	// reaps). Reap and `tavern reap` are not limited.
	ReapInterval time.Duration
	// Seed seeds the stealing rotation (0: random).
	Seed uint64
	// Recheck is how often a blocked Take looks again without an event
	// (default 2s): for what inotify cannot see, a claim holder dying
	// (a dropped flock is no file event) and other machines' writes on a
	// network filesystem.
	Recheck time.Duration
	// DirRecheck is how long an open state directory (move.go) is used
	// before its path is checked again (default 100ms; negative: before
	// every use). Within it, a state directory renamed away by hand may
	// still receive the Broker's writes.
	DirRecheck time.Duration
	// Coordinator arbitrates claims across machines. Nil opens the engine
	// tavern.md names (OpenCoordinator; none for coordination: local);
	// the Broker closes only an engine it opened.
	Coordinator Coordinator
	// Instance is the spawn instance this Broker acts for (the CLI passes
	// $TAVERN_INSTANCE, set by the spawn wrapper for its child; "" for
	// none). Its claims record it in the item's instance field and are
	// tied to its liveness lock (schema.InstanceLockKey) when held; and
	// Complete, Fail, Renew and Release refuse, with ErrStale, a claim
	// recorded with another instance (or none): a late action of a dead
	// instance never touches its successor's claim, whatever the agent
	// name.
	Instance string
}

// Open returns a Broker for s, and installs the item rules
// (InstallRules) on s if it has none.
func Open(s *docstore.Store, opt Options) (*Broker, error) {
	if opt.Instance != "" {
		if err := schema.ValidName(opt.Instance); err != nil {
			return nil, fmt.Errorf("instance: %w", err)
		}
	}
	if !s.HasRule(RuleItemPath) {
		InstallRules(s) // the API obeys what set and edit obey
	}
	b := &Broker{s: s, j: opt.Journal, now: opt.Now, reapGap: opt.ReapInterval, inst: opt.Instance,
		lastReap: map[string]time.Time{}, pass: map[string]float64{}, qcache: map[string]cachedQueue{}, pending: newPendingIndex()}
	if b.now == nil {
		b.now = time.Now
	}
	b.dirRecheck = opt.DirRecheck
	if b.dirRecheck == 0 {
		b.dirRecheck = 100 * time.Millisecond
	}
	b.recheck = opt.Recheck
	if b.recheck <= 0 {
		b.recheck = 2 * time.Second
	}
	if b.reapGap == 0 {
		b.reapGap = time.Second
	}
	seed := opt.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	b.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if b.j == nil {
		j, err := journal.Open(s.Root(), journal.Options{})
		if err != nil {
			return nil, err
		}
		b.j, b.ownJ = j, true
	}
	host, _ := os.Hostname()
	b.who = fmt.Sprintf("%s/%d", host, os.Getpid())
	if b.coord = opt.Coordinator; b.coord == nil {
		c, err := OpenCoordinator(s)
		if err != nil {
			if b.ownJ {
				b.j.Close()
			}
			return nil, err
		}
		b.coord, b.ownCoord = c, c != nil
	}
	return b, nil
}

// Close releases the journal if the Broker opened it.
//
// Close drops the Broker's holder lock: HoldLock claims still claimed
// become dead claims that the next reaper returns to pending.
func (b *Broker) Close() error {
	b.pending.close()
	b.dirs.Range(func(k, v any) bool {
		v.(*dirHandle).d.Close()
		b.dirs.Delete(k)
		return true
	})
	b.mu.Lock()
	for k, c := range b.qcache {
		if c.dir != nil {
			c.dir.Close()
		}
		delete(b.qcache, k)
	}
	b.mu.Unlock()
	b.holdMu.Lock()
	if b.hold != nil {
		b.hold.Remove()
		b.hold = nil
	}
	b.holdMu.Unlock()
	if b.ownCoord {
		b.coord.Close()
	}
	if b.ownJ {
		return b.j.Close()
	}
	return nil
}

// holderLock takes (once) and returns the key of the lock that keeps this
// Broker's HoldLock claims alive.
func (b *Broker) holderLock() (string, error) {
	b.holdMu.Lock()
	defer b.holdMu.Unlock()
	if b.hold != nil {
		return b.holdKey, nil
	}
	host, _ := os.Hostname()
	var nonce [4]byte
	for i := range nonce {
		nonce[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rand.IntN(36)]
	}
	key := HolderLockKey(host, os.Getpid(), string(nonce[:]))
	l, ok, err := b.s.TryLock(key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("holder lock %s is taken", key)
	}
	b.hold, b.holdKey = l, key
	return key, nil
}

func (b *Broker) holderHeld() bool {
	b.holdMu.Lock()
	defer b.holdMu.Unlock()
	return b.hold.Held()
}

// Store returns the underlying document store.
func (b *Broker) Store() *docstore.Store { return b.s }

// Journal returns the journal events are appended to.
func (b *Broker) Journal() *journal.Journal { return b.j }

// Event types journaled by this package (journal.Event.Type).
const (
	EventAdded        = "item.added"
	EventClaimed      = "item.claimed"
	EventCompleted    = "item.completed"
	EventFailed       = "item.failed" // returned to pending with a backoff
	EventDead         = "item.dead"
	EventReleased     = "item.released"
	EventReaped       = "item.reaped"        // owner dead or lease expired: back to pending (or dead)
	EventLeaseExpired = "item.lease_expired" // holder alive but its lease ran out (hung)
	EventRetried      = "item.retried"       // dead -> pending
	EventQueueCreated = "queue.created"
)

// journal appends a domain event. A journal failure does not undo the
// state change (the item files are the truth, the journal their
// history); it is returned to the caller alongside success by the
// operations that can report it, and otherwise dropped.
func (b *Broker) journal(typ string, it *Item, agent string, data map[string]any) error {
	e := journal.Event{Type: typ, Kind: "item", Agent: agent, Data: data}
	if it != nil {
		e.Path, e.Item, e.Queue = it.Path, it.ID, it.Queue
		if it.Doc != nil {
			e.Rev = it.Doc.Rev
		}
	}
	_, err := b.j.Append(e)
	return err
}

func eventQueue(typ, name, path string) journal.Event {
	return journal.Event{Type: typ, Kind: "queue", Queue: name, Path: path}
}
