package queues

import (
	"sort"
	"strings"
	"sync"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
)

// Cycle is a dependency cycle among items: each member's depends_on names
// the next member, and the last one's names the first. Add refuses to make
// one, but a hand edit can; its items can never become claimable, so Take
// names it in its empty report and `tavern check` reports it.
type Cycle struct {
	Members []CycleMember
}

// CycleMember is one item of a cycle: where its depends_on line is.
type CycleMember struct {
	ID, Queue, Path string
	Line            int // file line of its depends_on field
}

func (c Cycle) String() string {
	var parts []string
	for _, m := range c.Members {
		parts = append(parts, m.ID)
	}
	if len(c.Members) > 0 {
		parts = append(parts, c.Members[0].ID)
	}
	return "dependency cycle " + strings.Join(parts, " -> ")
}

// Errors returns one *CycleError per member, for reports.
func (c Cycle) Errors() []error {
	var out []error
	for i := range c.Members {
		out = append(out, &CycleError{Cycle: c, Member: i})
	}
	return out
}

// CycleError is one member of a dependency cycle, at its depends_on line:
// "path:line:1: depends_on: dependency cycle: a -> b -> a" (the cycle as
// seen from that member). It matches ErrCycle and, through a
// *schema.FieldError, schema.ErrInvalid (an invalid document: `tavern
// check` exits 5) and docstore.Position.
type CycleError struct {
	Cycle  Cycle
	Member int
}

func (e *CycleError) field() *schema.FieldError {
	n := len(e.Cycle.Members)
	parts := make([]string, 0, n+1)
	for j := 0; j <= n; j++ {
		parts = append(parts, e.Cycle.Members[(e.Member+j)%n].ID)
	}
	m := e.Cycle.Members[e.Member]
	return &schema.FieldError{Path: m.Path, Line: m.Line, Col: 1, Field: "depends_on", Msg: ErrCycle.Error() + ": " + strings.Join(parts, " -> ")}
}

func (e *CycleError) Error() string   { return e.field().Error() }
func (e *CycleError) Unwrap() []error { return []error{ErrCycle, e.field()} }

// installCycleCheck adds the dependency cycle check to s (InstallChecks;
// run by `tavern check`): an item on a dependency cycle is reported at
// its depends_on line. The cycles are found once per check run, over the
// whole store, at the first item checked: a store that lives on (a pool,
// serve) is checked again as it is then, not as its first run saw it.
func installCycleCheck(s *docstore.Store) {
	s.AddRunCheck("queues.cycles", func() docstore.Check {
		var once sync.Once
		var byPath map[string]error
		return func(d *docstore.Doc) []error {
			if d.Kind != schema.Item || !d.Has("depends_on") {
				return nil
			}
			once.Do(func() {
				byPath = map[string]error{}
				cs, err := FindCycles(s)
				if err != nil {
					return
				}
				for _, c := range cs {
					for i, m := range c.Members {
						byPath[m.Path] = &CycleError{Cycle: c, Member: i}
					}
				}
			})
			if err := byPath[d.Path]; err != nil {
				return []error{err}
			}
			return nil
		}
	})
}

// Cycles finds the dependency cycles among the items not yet done or dead
// (pending and claimed, in every queue). Each cycle is reported once,
// starting at its smallest id. Files that do not parse are skipped (Stats
// and Take report them).
func (b *Broker) Cycles() ([]Cycle, error) {
	names, err := b.QueueNames()
	if err != nil {
		return nil, err
	}
	type node struct {
		m    CycleMember
		deps []string
	}
	nodes := map[string]*node{}
	for _, q := range names {
		for _, st := range []string{Pending, Claimed} {
			ids, err := b.listDir(q, st)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				rel := ItemPath(q, st, id)
				d, err := b.get(rel)
				if err != nil {
					continue
				}
				deps := d.Strings("depends_on")
				if len(deps) == 0 {
					continue
				}
				if _, dup := nodes[id]; dup {
					continue // a crash leftover pair: one copy is enough
				}
				nodes[id] = &node{m: CycleMember{ID: id, Queue: q, Path: rel, Line: d.KeyLine("depends_on")}, deps: deps}
			}
		}
	}
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Depth-first search with colours: a dependency on the current path
	// closes a cycle.
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	seen := map[string]bool{}
	var out []Cycle
	var path []string
	var visit func(id string)
	visit = func(id string) {
		colour[id] = grey
		path = append(path, id)
		for _, dep := range nodes[id].deps {
			if nodes[dep] == nil || schema.ValidName(dep) != nil {
				continue // done, dead, missing or not waiting on anything
			}
			switch colour[dep] {
			case white:
				visit(dep)
			case grey:
				i := len(path) - 1
				for path[i] != dep {
					i--
				}
				members := append([]string(nil), path[i:]...)
				// Start at the smallest id: one key per cycle.
				min := 0
				for j, m := range members {
					if m < members[min] {
						min = j
					}
				}
				members = append(members[min:], members[:min]...)
				key := strings.Join(members, " ")
				if !seen[key] {
					seen[key] = true
					c := Cycle{}
					for _, m := range members {
						c.Members = append(c.Members, nodes[m].m)
					}
					out = append(out, c)
				}
			}
		}
		path = path[:len(path)-1]
		colour[id] = black
	}
	for _, id := range ids {
		if colour[id] == white {
			visit(id)
		}
	}
	return out, nil
}

// FindCycles is Broker.Cycles for a reader that has no Broker (`tavern
// check`): it opens no journal and writes nothing.
func FindCycles(s *docstore.Store) ([]Cycle, error) {
	b := &Broker{s: s, dirRecheck: -1, qcache: map[string]cachedQueue{}, pending: newPendingIndex()}
	defer b.Close()
	return b.Cycles()
}
