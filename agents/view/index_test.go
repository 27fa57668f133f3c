package view

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tavernhq/tavern/queues"
)

// TestIndexColumnsIncremental checks the cached board columns against a
// fresh choice from the whole set after every change of a random mix of
// adds, moves and removals.
func TestIndexColumnsIncremental(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := newItemIndex(5, 0)
	var ids []string
	for step := 0; step < 3000; step++ {
		switch op := r.IntN(10); {
		case op < 5 || len(ids) == 0: // add pending
			id := queues.NewItemID(r.IntN(3))
			ids = append(ids, id)
			x.put("q", queues.Pending, id, nil)
		case op < 8: // move to another state
			id := ids[r.IntN(len(ids))]
			from := x.state(id)
			to := itemStates[r.IntN(len(itemStates))]
			if from != "" {
				x.drop("q", from, id)
			}
			x.put("q", to, id, nil)
		default: // remove
			i := r.IntN(len(ids))
			if st := x.state(ids[i]); st != "" {
				x.drop("q", st, ids[i])
			}
			ids = slices.Delete(ids, i, i+1)
		}
		qi := x.queues["q"]
		for i := range itemStates {
			got := slices.Clone(x.column(qi, i))
			want := top(qi.ids[i], x.limit[i], columnOrder[i])
			if !slices.Equal(got, want) {
				t.Fatalf("step %d, %s column: got %v, want %v", step, itemStates[i], got, want)
			}
		}
		var oldest string
		if o := top(qi.ids[0], 1, olderID); len(o) == 1 {
			oldest = o[0]
		}
		if got := x.oldestPending(qi); got != oldest {
			t.Fatalf("step %d: oldest pending %q, want %q", step, got, oldest)
		}
	}
}

func TestItemPath(t *testing.T) {
	for _, tc := range []struct {
		rel              string
		queue, state, id string
		ok               bool
	}{
		{"queues/bulk/done/p05-x.md", "bulk", "done", "p05-x", true},
		{"queues/q/pending/a.md", "q", "pending", "a", true},
		{"queues/q/queue.md", "", "", "", false},
		{"queues/q/later/a.md", "", "", "", false},
		{"queues/q/done/sub/a.md", "", "", "", false},
		{"queues/q/done/a.txt", "", "", "", false},
		{"queues/q/done/.md", "", "", "", false},
		{"agents/q/done/a.md", "", "", "", false},
	} {
		q, st, id, ok := itemPath(tc.rel)
		if ok != tc.ok || (ok && (q != tc.queue || st != tc.state || id != tc.id)) {
			t.Errorf("itemPath(%q) = %q %q %q %v, want %q %q %q %v", tc.rel, q, st, id, ok, tc.queue, tc.state, tc.id, tc.ok)
		}
	}
}
