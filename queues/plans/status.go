package plans

import (
	"errors"
	"io/fs"

	"github.com/tavernhq/tavern/queues"
)

// Status is a plan's progress: its boxes and the state of their items.
type Status struct {
	Name      string       `json:"name"`
	Path      string       `json:"path"`
	Queue     string       `json:"queue"`
	Tasks     []TaskStatus `json:"tasks"`
	Total     int          `json:"total"` // boxes
	Done      int          `json:"done"`  // boxes whose item is done (or ticked without an item)
	Claimed   int          `json:"claimed"`
	Pending   int          `json:"pending"`
	Dead      int          `json:"dead"`
	Cancelled int          `json:"cancelled"`
	Gated     int          `json:"gated"` // items waiting for a person
	Report    *Report      `json:"sync,omitempty"`
}

// TaskStatus is one box.
type TaskStatus struct {
	Line     int    `json:"line"`
	Depth    int    `json:"depth"`
	Box      string `json:"box"` // " ", "x" or "-"
	Title    string `json:"title"`
	Item     string `json:"item,omitempty"`
	State    string `json:"state,omitempty"` // the item's state
	Holder   string `json:"holder,omitempty"`
	Gate     string `json:"gate,omitempty"` // pending | passed | rejected
	Attempts int    `json:"attempts,omitempty"`
	Error    string `json:"last_error,omitempty"`
	// The item's dependencies, and those a pending item still waits for
	// (not done; a dead one blocks it).
	DependsOn []string `json:"depends_on,omitempty"`
	WaitsFor  []string `json:"waits_for,omitempty"`
	Blocked   []string `json:"blocked_by,omitempty"` // of WaitsFor, the dead or missing ones
}

// GetStatus syncs the plan (sync: true) and reports its progress.
func GetStatus(b *queues.Broker, name string, sync bool) (*Status, error) {
	var rep *Report
	if sync {
		r, err := Sync(b, name, SyncOptions{})
		if err != nil {
			return nil, err
		}
		rep = r
	}
	d, err := readPlan(b.Store(), name)
	if err != nil {
		return nil, err
	}
	tasks, err := Parse(d.Body())
	if err != nil {
		return nil, err
	}
	first := bodyLine(d)
	m := taskMap(d)
	byKey := map[string]string{}
	for id, k := range m {
		byKey[k] = id
	}
	// Tasks is a list even when the plan has no boxes yet: --json
	// prints [] there, never null.
	st := &Status{Name: name, Path: Path(name), Queue: d.String("queue"), Report: rep, Tasks: []TaskStatus{}}
	depth := make([]int, len(tasks))
	for _, t := range tasks {
		if t.Parent >= 0 {
			depth[t.Index] = depth[t.Parent] + 1
		}
		ts := TaskStatus{Line: first + t.Line, Depth: depth[t.Index], Box: string(t.State), Title: t.Title, Item: byKey[t.Key]}
		st.Total++
		if ts.Item != "" {
			it, err := b.Get(ts.Item)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				ts.State = "missing"
			case err != nil:
				return nil, err
			default:
				ts.State, ts.Holder, ts.Attempts, ts.Error = it.State, it.ClaimedBy, it.Attempts, it.LastError
				ts.DependsOn = it.DependsOn
				if it.State == queues.Pending {
					if err := waits(b, it, &ts); err != nil {
						return nil, err
					}
				}
				if it.Cancelled {
					ts.State = "cancelled"
				}
				for _, g := range b.ItemGates(it) {
					if g.Type == queues.GateHuman && (ts.Gate == "" || g.State != queues.GateStatePassed) {
						ts.Gate = g.State
					}
				}
				if ts.Gate == queues.GateStatePending && it.State != queues.Done && it.State != queues.Dead {
					st.Gated++
				}
			}
		}
		st.count(t, ts.State)
		st.Tasks = append(st.Tasks, ts)
	}
	return st, nil
}

// waits fills in what pending item it still waits for.
func waits(b *queues.Broker, it *queues.Item, ts *TaskStatus) error {
	for _, dep := range it.DependsOn {
		d, err := b.Get(dep)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			ts.WaitsFor = append(ts.WaitsFor, dep)
			ts.Blocked = append(ts.Blocked, dep)
		case err != nil:
			return err
		case d.State == queues.Done:
		default:
			ts.WaitsFor = append(ts.WaitsFor, dep)
			if d.State == queues.Dead {
				ts.Blocked = append(ts.Blocked, dep)
			}
		}
	}
	return nil
}

// count adds a box to the totals by the state listed for it: its item's
// state when it has one, so the totals and the boxes never disagree (a
// box ticked by hand while its item is claimed is listed claimed, a
// conflict Sync reports, and counted claimed, not done). A box without
// an item (ticked at import, or an item gone) counts by its mark; an
// open one without an item yet (new, before a sync) by none.
func (st *Status) count(t *Task, state string) {
	switch state {
	case queues.Done:
		st.Done++
	case queues.Claimed:
		st.Claimed++
	case queues.Pending:
		st.Pending++
	case queues.Dead:
		st.Dead++
	case "cancelled":
		st.Cancelled++
	default: // no item, or a missing one
		switch {
		case t.Cancelled():
			st.Cancelled++
		case t.Checked():
			st.Done++
		}
	}
}
