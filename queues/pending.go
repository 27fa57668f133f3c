package queues

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/tavernhq/tavern/schema"
	"golang.org/x/sys/unix"
)

// pendingIndex is a Broker's in-memory view of the pending/ directories it
// takes from, kept current by inotify instead of a ReadDir, a sort and a
// name check of the whole directory on every Take (O(queue length) per
// take, O(n²) to drain a queue: the largest CPU cost of a take before).
//
// Correctness does not depend on it being exact:
//   - inotify events are queued inside the syscall that made the change,
//     so draining the queue before choosing a candidate sees every change
//     that finished before the drain (the same as a ReadDir then);
//   - a stale id only costs a failed claim attempt (ENOENT, skipped);
//   - an overflow, a watch error or an unavailable inotify falls back to a
//     full listing, and a Take that finds nothing always relists.
//
// It also keeps the ids that a goroutine of this Broker is trying to claim
// right now (inflight): the Broker's other takers skip them instead of all
// racing for the head of the queue and losing on its lock.
type pendingIndex struct {
	mu     sync.Mutex
	fd     int // inotify instance (nonblocking); -1: none, list every time
	failed bool
	queues map[string]*pendingDir
	byWD   map[int32]*pendingDir
	buf    []byte

	imu      sync.Mutex      // guards inflight (done must not wait for a drain)
	inflight map[string]bool // queue+"/"+id
}

type pendingDir struct {
	queue  string
	wd     int32
	valid  bool                // set and sorted reflect the directory
	set    map[string]struct{} // ids present
	sorted []string            // superset of set, sorted; ids not in set are skipped
	head   int                 // sorted[:head] are all gone (taken): skipped without lookups
	dirty  bool                // sorted is missing ids: rebuild before use
}

func newPendingIndex() *pendingIndex {
	return &pendingIndex{fd: -1, queues: map[string]*pendingDir{}, byWD: map[int32]*pendingDir{}, inflight: map[string]bool{}}
}

func (p *pendingIndex) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
	p.failed = true
	p.queues = map[string]*pendingDir{}
	p.byWD = map[int32]*pendingDir{}
}

const pendingMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// dir returns the current view of queue's pending/ directory; p.mu is held.
// ok is false when the caller must list the directory itself.
func (p *pendingIndex) dir(b *Broker, queue string) (*pendingDir, bool) {
	if p.failed {
		return nil, false
	}
	if p.fd < 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			p.failed = true // e.g. out of inotify instances: list every time
			return nil, false
		}
		p.fd = fd
		p.buf = make([]byte, 64<<10)
	}
	d := p.queues[queue]
	if d == nil {
		d = &pendingDir{queue: queue, wd: -1}
		p.queues[queue] = d
	}
	if d.wd < 0 {
		wd, err := unix.InotifyAddWatch(p.fd, b.path("queues/"+queue+"/"+Pending), pendingMask)
		if err != nil {
			return nil, false // no such directory (yet): list (finds nothing)
		}
		d.wd = int32(wd)
		p.byWD[d.wd] = d
		d.valid = false
	}
	// Watch first, then list: a change racing the listing is in the queue.
	p.drain()
	if d.wd < 0 {
		return nil, false
	}
	if !d.valid {
		ids, err := b.listDir(queue, Pending)
		if err != nil {
			return nil, false
		}
		d.set = make(map[string]struct{}, len(ids))
		for _, id := range ids {
			d.set[id] = struct{}{}
		}
		d.sorted, d.dirty, d.valid, d.head = ids, false, true, 0
		// Changes made while listing: applying them again is harmless
		// (the last event of a name decides whether it is there).
		p.drain()
	}
	if d.dirty {
		d.sorted = d.sorted[:0]
		for id := range d.set {
			d.sorted = append(d.sorted, id)
		}
		sort.Strings(d.sorted)
		d.dirty, d.head = false, 0
	} else if len(d.sorted) > 64 && len(d.sorted) > 2*len(d.set) {
		n := d.sorted[:0]
		for _, id := range d.sorted {
			if _, ok := d.set[id]; ok {
				n = append(n, id)
			}
		}
		clear(d.sorted[len(n):])
		d.sorted, d.head = n, 0
	}
	return d, true
}

// drain applies the queued inotify events; p.mu is held.
func (p *pendingIndex) drain() {
	for {
		n, err := unix.Read(p.fd, p.buf)
		if err != nil || n <= 0 {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				p.invalidateAll()
			}
			return
		}
		short := n < len(p.buf)-(unix.SizeofInotifyEvent+unix.PathMax+1)
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&p.buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := p.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				if i := strings.IndexByte(string(raw), 0); i >= 0 {
					raw = raw[:i]
				}
				name = string(raw)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				p.invalidateAll()
				continue
			}
			d := p.byWD[ev.Wd]
			if d == nil {
				continue
			}
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
				// The directory itself went away: watch again next time.
				if ev.Mask&unix.IN_IGNORED == 0 {
					unix.InotifyRmWatch(p.fd, uint32(d.wd))
				}
				delete(p.byWD, d.wd)
				d.wd, d.valid = -1, false
				continue
			}
			if !d.valid || !strings.HasSuffix(name, ".md") || schema.ValidName(name) != nil {
				continue
			}
			id := strings.TrimSuffix(name, ".md")
			switch {
			case ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				if _, ok := d.set[id]; ok {
					continue
				}
				d.set[id] = struct{}{}
				if k := len(d.sorted); !d.dirty && (k == 0 || d.sorted[k-1] < id) {
					d.sorted = append(d.sorted, id) // the common case: a newer item
				} else if !d.dirty {
					i := sort.SearchStrings(d.sorted, id)
					if i < len(d.sorted) && d.sorted[i] == id {
						d.head = min(d.head, i) // still listed (removed, now back)
						continue
					}
					d.dirty = true
				}
			case ev.Mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
				delete(d.set, id)
			}
		}
		if short {
			// The read took every queued event with room to spare: the
			// queue was empty then, which is all a drain promises. Saves
			// the read that would return EAGAIN.
			return
		}
	}
}

func (p *pendingIndex) invalidateAll() {
	for _, d := range p.queues {
		d.valid = false
	}
}

// next returns the first pending id of queue after `after` (all when
// after is "") that no other taker of this Broker is trying, and marks it
// in flight; the caller must call done(queue, id). ok is false when the
// index cannot serve the queue (the caller lists the directory).
func (p *pendingIndex) next(b *Broker, queue, after string) (id string, found, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.dir(b, queue)
	if !ok {
		return "", false, false
	}
	for d.head < len(d.sorted) {
		if _, ok := d.set[d.sorted[d.head]]; ok {
			break
		}
		d.head++
	}
	i := d.head
	if after != "" {
		i = max(i, sort.Search(len(d.sorted), func(i int) bool { return d.sorted[i] > after }))
	}
	for ; i < len(d.sorted); i++ {
		id := d.sorted[i]
		if _, ok := d.set[id]; !ok {
			continue
		}
		key := queue + "/" + id
		p.imu.Lock()
		busy := p.inflight[key]
		if !busy {
			p.inflight[key] = true
		}
		p.imu.Unlock()
		if busy {
			continue
		}
		return id, true, true
	}
	return "", false, true
}

func (p *pendingIndex) done(queue, id string) {
	p.imu.Lock()
	delete(p.inflight, queue+"/"+id)
	p.imu.Unlock()
}

// invalidate makes the next use of queue's view list the directory again.
func (p *pendingIndex) invalidate(queue string) {
	p.mu.Lock()
	if d := p.queues[queue]; d != nil {
		d.valid = false
	}
	p.mu.Unlock()
}
