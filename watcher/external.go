package watcher

import (
	"sync"
	"time"

	"github.com/tavernhq/tavern/docstore"
)

// externals decides which observed changes no engine call made. The engine
// journals each mutation (path and new revision) right after writing the
// file, so an observed change waits ExternalGrace for that event; if none
// comes, it is journaled as TypeExternal. Several processes may watch the
// same store: AppendOnce under the journal lock keeps one record per
// (path, rev).
type externals struct {
	p       *Projection
	j       *Journal
	mu      sync.Mutex
	engine  map[string]time.Time   // path\x00rev journaled by the engine
	pending map[string]*time.Timer // path\x00rev waiting for its decision
	stopped bool
	wg      sync.WaitGroup // decisions in flight
}

func newExternals(p *Projection, j *Journal) *externals {
	return &externals{p: p, j: j, engine: map[string]time.Time{}, pending: map[string]*time.Timer{}}
}

func extKey(path, rev string) string { return path + "\x00" + rev }

// engineEvent records a mutation the engine journaled.
func (x *externals) engineEvent(e Event) {
	if e.Path == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := time.Now()
	x.engine[extKey(e.Path, e.Rev)] = now
	if from, _ := e.Data["from"].(string); from != "" {
		x.engine[extKey(from, "")] = now // a move removes the old path
	}
	if len(x.engine) > 4096 {
		for k, t := range x.engine {
			if now.Sub(t) > time.Minute {
				delete(x.engine, k)
			}
		}
	}
}

// observed considers one change the projection saw.
func (x *externals) observed(ev Event) {
	if ev.Path == "" || ev.Type == TypeError {
		return
	}
	key := extKey(ev.Path, ev.Rev)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopped {
		return
	}
	if _, ok := x.engine[key]; ok {
		return
	}
	if x.pending[key] != nil {
		return // the same revision is already waiting
	}
	// Every observed revision gets its own decision: a hand edit followed
	// by an engine update is still journaled as external.
	x.wg.Add(1)
	x.pending[key] = time.AfterFunc(x.p.opt.ExternalGrace, func() {
		defer x.wg.Done()
		x.decide(ev, key)
	})
}

func (x *externals) decide(ev Event, key string) {
	x.mu.Lock()
	_, engine := x.engine[key]
	delete(x.pending, key)
	stopped := x.stopped
	x.mu.Unlock()
	if engine || stopped {
		return
	}
	out := Event{Type: TypeExternal, Kind: ev.Kind, Path: ev.Path, Rev: ev.Rev, Data: map[string]any{"op": ev.Type}}
	for k, v := range ev.Data {
		out.Data[k] = v
	}
	_, _, _ = x.j.AppendOnce(out)
}

// stop cancels pending decisions and waits for those already running.
func (x *externals) stop() {
	x.mu.Lock()
	x.stopped = true
	for _, t := range x.pending {
		if t.Stop() {
			x.wg.Done()
		}
	}
	x.pending = map[string]*time.Timer{}
	x.mu.Unlock()
	x.wg.Wait()
}

// MutationEvent converts a docstore mutation into its journal event.
func MutationEvent(m docstore.Mutation) Event {
	e := Event{Path: m.Path}
	switch m.Op {
	case "create":
		e.Type = TypeCreated
	case "update":
		e.Type = TypeUpdated
	case "delete":
		e.Type = TypeRemoved
	case "move":
		e.Type = "doc.moved"
		e.Data = map[string]any{"from": m.From}
	default:
		e.Type = "doc." + m.Op
	}
	if m.Doc != nil {
		e.Rev = m.Doc.Rev
		if m.Doc.Kind != nil {
			e.Kind = m.Doc.Kind.Name
		}
		if m.Prev != nil {
			if ch := changedFields(m.Prev.Fields(), m.Doc.Fields()); len(ch) > 0 {
				if e.Data == nil {
					e.Data = map[string]any{}
				}
				e.Data["changed"] = ch
			}
		}
	} else if m.Prev != nil && m.Prev.Kind != nil {
		e.Kind = m.Prev.Kind.Name
	}
	return e
}

// RecordMutations journals every mutation made through s into j, so the
// watcher can tell engine changes from external ones. agent (may be "")
// is recorded as the acting agent. onErr (may be nil) receives append
// failures: the mutation itself has already happened.
func RecordMutations(s *docstore.Store, j *Journal, agent string, onErr func(error)) {
	s.Observe(func(m docstore.Mutation) {
		e := MutationEvent(m)
		e.Agent = agent
		if _, err := j.Append(e); err != nil && onErr != nil {
			onErr(err)
		}
	})
}
