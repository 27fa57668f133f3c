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

var itemStates = [...]string{queues.Pending, queues.Claimed, queues.Done, queues.Dead}

func stateIndex(st string) int {
	for i, s := range itemStates {
		if s == st {
			return i
		}
	}
	return -1
}

type itemIndex struct {
	queues map[string]*queueItems
	where  map[string]*itemLoc // by id
}

type queueItems struct {
	ids [len(itemStates)]map[string]struct{}
}

type itemLoc struct {
	queue  string
	states uint8    // bit per itemStates index (two after a crash between writes)
	deps   []string // depends_on, while pending
}

func newItemIndex() *itemIndex {
	return &itemIndex{queues: map[string]*queueItems{}, where: map[string]*itemLoc{}}
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
	x.queue(q).ids[i][id] = struct{}{}
	loc := x.where[id]
	if loc == nil {
		loc = &itemLoc{queue: q}
		x.where[id] = loc
	}
	loc.states |= 1 << i
	if st == queues.Pending {
		loc.deps = fstrings(fields, "depends_on")
	}
}

func (x *itemIndex) drop(q, st, id string) {
	i := stateIndex(st)
	if i < 0 {
		return
	}
	if qi := x.queues[q]; qi != nil {
		delete(qi.ids[i], id)
	}
	if loc := x.where[id]; loc != nil {
		loc.states &^= 1 << i
		if i == 0 {
			loc.deps = nil
		}
		if loc.states == 0 {
			delete(x.where, id)
		}
	}
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
	rest, ok := strings.CutPrefix(rel, "queues/")
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || stateIndex(parts[1]) < 0 {
		return "", "", "", false
	}
	id, ok = strings.CutSuffix(parts[2], ".md")
	return parts[0], parts[1], id, ok && id != ""
}

// idTime is the part of an item id that sorts by creation time: ids are
// "p<priority>-<UUIDv7>".
func idTime(id string) string {
	if _, rest, ok := strings.Cut(id, "-"); ok {
		return rest
	}
	return id
}

// top returns up to n ids of set, the first ones by less, without sorting
// the whole set: a bounded insertion, O(len(set)) for small n.
func top(set map[string]struct{}, n int, less func(a, b string) bool) []string {
	out := make([]string, 0, min(n, len(set)))
	for id := range set {
		if len(out) == n && !less(id, out[n-1]) {
			continue
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
	}
	return out
}
