package watcher

import (
	"sync"
	"time"

	"github.com/tavernhq/tavern/watcher/journal"
)

// externals decides which observed changes no engine call made. The engine
// journals each mutation (path and new revision) right after writing the
// file, so an observed change waits ExternalGrace for that event; if none
// comes, it is journaled as TypeExternal. Several processes may watch the
// same store: AppendOnce under the journal lock keeps one record per
// (path, rev).
type externals struct {
	p       *Projection
	j       *journal.Journal
	mu      sync.Mutex
	engine  map[string]time.Time   // path\x00rev journaled by the engine
	pending map[string]*time.Timer // path\x00rev waiting for its decision
	stopped bool
	wg      sync.WaitGroup // decisions in flight
}

func newExternals(p *Projection, j *journal.Journal) *externals {
	return &externals{p: p, j: j, engine: map[string]time.Time{}, pending: map[string]*time.Timer{}}
}

func extKey(path, rev string) string { return path + "\x00" + rev }

// engineEvent records a mutation the engine journaled.
func (x *externals) engineEvent(e journal.Event) {
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
func (x *externals) observed(ev journal.Event) {
	if ev.Path == "" || ev.Type == journal.TypeError {
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

func (x *externals) decide(ev journal.Event, key string) {
	x.mu.Lock()
	_, engine := x.engine[key]
	delete(x.pending, key)
	stopped := x.stopped
	x.mu.Unlock()
	if engine || stopped {
		return
	}
	out := journal.Event{Type: journal.TypeExternal, Kind: ev.Kind, Path: ev.Path, Rev: ev.Rev, Data: map[string]any{"op": ev.Type}}
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
