package view

import (
	"strings"

	"github.com/tavernhq/tavern/queues"
)

// The item index. A store may hold 100k items, nearly all of them done:
// the snapshot must not copy or sort them all on every change. The index
// keeps, per queue and state, the set of item ids, fed by the projection's
// events, and for pending items their dependencies; the fields of the few
// items a board column shows are read from the projection when it is built.
// Each column's first ids are cached and kept up to date as ids come and
// go (an id that sorts before the column's last one is inserted), and
// chosen again from the whole set only when one of them leaves: a
// completion moves one id out of pending (usually not among the first) and
// one into done (the newest: inserted at the top).

var itemStates = [...]string{queues.Pending, queues.Claimed, queues.Done, queues.Dead}

func stateIndex(st string) int {
	for i, s := range itemStates {
		if s == st {
			return i
		}
	}
	return -1
}

// columnOrder is how each state's column is ordered: pending and claimed
// in take order (the id: priority, then age), done and dead newest first.
var columnOrder = [len(itemStates)]func(a, b string) bool{
	func(a, b string) bool { return a < b },
	func(a, b string) bool { return a < b },
	func(a, b string) bool { return idTime(a) > idTime(b) },
	func(a, b string) bool { return idTime(a) > idTime(b) },
}

func olderID(a, b string) bool { return idTime(a) < idTime(b) }

type itemIndex struct {
	queues  map[string]*queueItems
	where   map[string]*itemLoc // by id
	deps    map[string]struct{} // pending ids with depends_on
	invalid map[string]struct{} // paths of documents (any kind) that are invalid
	limit   [len(itemStates)]int
}

type queueItems struct {
	ids    [len(itemStates)]map[string]struct{}
	top    [len(itemStates)][]string // the column's first ids; nil: choose again
	oldest string                    // oldest pending id; "" with stale: choose again
	stale  bool
}

type itemLoc struct {
	queue  string
	states uint8    // bit per itemStates index (two after a crash between writes)
	deps   []string // depends_on, while pending
}

// newItemIndex makes an index for about docs documents (a size hint).
func newItemIndex(column, docs int) *itemIndex {
	x := &itemIndex{queues: map[string]*queueItems{}, where: make(map[string]*itemLoc, docs), deps: map[string]struct{}{}, invalid: map[string]struct{}{}}
	x.limit = [len(itemStates)]int{column, max(column, 200), column, column}
	return x
}

func (x *itemIndex) queue(q string) *queueItems {
	qi := x.queues[q]
	if qi == nil {
		qi = &queueItems{}
		for i := range qi.ids {
			qi.ids[i] = map[string]struct{}{}
		}
		x.queues[q] = qi
	}
	return qi
}

func (x *itemIndex) put(q, st, id string, fields map[string]any) {
	i := stateIndex(st)
	if i < 0 {
		return
	}
	qi := x.queue(q)
	ids := qi.ids[i]
	n := len(ids)
	ids[id] = struct{}{}
	if len(ids) != n { // new to the column (one hash, not a lookup and an insert)
		if qi.top[i] != nil {
			qi.top[i] = insertTop(qi.top[i], id, x.limit[i], columnOrder[i])
		}
		if i == 0 && !qi.stale && (qi.oldest == "" || olderID(id, qi.oldest)) {
			qi.oldest = id
		}
	}
	loc := x.where[id]
	if loc == nil {
		loc = &itemLoc{queue: q}
		x.where[id] = loc
	}
	loc.states |= 1 << i
	if i == 0 {
		loc.deps = fstrings(fields, "depends_on")
		if len(loc.deps) > 0 {
			x.deps[id] = struct{}{}
		} else {
			delete(x.deps, id)
		}
	}
}

func (x *itemIndex) drop(q, st, id string) {
	i := stateIndex(st)
	if i < 0 {
		return
	}
	if qi := x.queues[q]; qi != nil {
		if _, ok := qi.ids[i][id]; ok {
			delete(qi.ids[i], id)
			for _, t := range qi.top[i] {
				if t == id {
					qi.top[i] = nil // choose again at the next snapshot
					break
				}
			}
			if i == 0 && qi.oldest == id {
				qi.oldest, qi.stale = "", true
			}
		}
	}
	if loc := x.where[id]; loc != nil {
		loc.states &^= 1 << i
		if i == 0 {
			loc.deps = nil
			delete(x.deps, id)
		}
		if loc.states == 0 {
			delete(x.where, id)
		}
	}
}

// column returns the first ids of a queue's state, from the cache or
// chosen again.
func (x *itemIndex) column(qi *queueItems, i int) []string {
	if qi.top[i] == nil {
		qi.top[i] = top(qi.ids[i], x.limit[i], columnOrder[i])
	}
	return qi.top[i]
}

// oldestPending returns the oldest pending id of a queue ("" if none).
func (x *itemIndex) oldestPending(qi *queueItems) string {
	if qi.stale {
		qi.oldest, qi.stale = "", false
		if o := top(qi.ids[0], 1, olderID); len(o) == 1 {
			qi.oldest = o[0]
		}
	}
	return qi.oldest
}

// state is where an item is, preferring the later state when a crash left
// two copies (as the queue's readers do); "" if unknown.
func (x *itemIndex) state(id string) string {
	loc := x.where[id]
	if loc == nil {
		return ""
	}
	for _, i := range []int{2, 3, 1, 0} {
		if loc.states&(1<<i) != 0 {
			return itemStates[i]
		}
	}
	return ""
}

// itemPath splits queues/<q>/<state>/<id>.md.
func itemPath(rel string) (queue, state, id string, ok bool) {
	// Cut by hand: the view's index splits 100k paths when it opens.
	rest, ok := strings.CutPrefix(rel, "queues/")
	if !ok {
		return "", "", "", false
	}
	queue, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", "", "", false
	}
	state, rest, ok = strings.Cut(rest, "/")
	if !ok || stateIndex(state) < 0 || strings.IndexByte(rest, '/') >= 0 {
		return "", "", "", false
	}
	id, ok = strings.CutSuffix(rest, ".md")
	return queue, state, id, ok && id != ""
}

// idTime is the part of an item id that sorts by creation time: ids are
// "p<two-digit priority>-<UUIDv7>". Other names (hand-made items) sort by
// the whole name.
func idTime(id string) string {
	if len(id) > 4 && id[0] == 'p' && id[3] == '-' {
		return id[4:]
	}
	return id
}

// top returns up to n ids of set, the first ones by less, without sorting
// the whole set: a bounded insertion, O(len(set)) for small n.
func top(set map[string]struct{}, n int, less func(a, b string) bool) []string {
	out := make([]string, 0, min(n, len(set)))
	for id := range set {
		out = insertTop(out, id, n, less)
	}
	return out
}

// insertTop inserts id into the sorted out, keeping at most n entries.
func insertTop(out []string, id string, n int, less func(a, b string) bool) []string {
	if len(out) == n && !less(id, out[n-1]) {
		return out
	}
	i := len(out)
	for i > 0 && less(id, out[i-1]) {
		i--
	}
	if len(out) < n {
		out = append(out, "")
	}
	copy(out[i+1:], out[i:len(out)-1])
	out[i] = id
	return out
}
