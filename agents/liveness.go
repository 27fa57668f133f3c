package agents

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Alive reports whether a process holds the agent's liveness lock.
// The probe shares the lock, so concurrent probes never see each other as
// the agent (docstore.Store.LockFree).
func (m *Manager) Alive(agent string) (bool, error) {
	return LockHeld(m.Store, schema.AgentLockKey(agent))
}

// ReapAgents marks failed every agent whose wrapper died: the document
// says a wrapper on this host runs it (host is set, in working or waiting)
// but nobody holds its liveness lock. The wrapper sets host when the agent
// starts working and clears host and pid before it lets the lock go, so a
// free lock with host left behind means the wrapper was killed or crashed. Agents running on other hosts are left to those hosts.
// It returns the names reaped. Agent documents that do not parse or
// validate are skipped and returned in invalid, one error each
// (path:line:col), never as err: one bad file must not stop the reaping of
// the others, nor fail the caller's work (BadFile).
func (m *Manager) ReapAgents() (reaped []string, invalid []error, err error) {
	agents, errs := m.reapList()
	var names []string
	invalid, errs = splitBad(errs)
	for _, a := range agents {
		if a.Host == "" || a.Host != m.Host || !running(a.Effective()) {
			continue
		}
		name, err := m.reapOne(a.Name)
		if err != nil {
			errs = append(errs, err)
		}
		if name != "" {
			names = append(names, name)
		}
	}
	return names, invalid, errors.Join(errs...)
}

// reapList is the agents ReapAgents looks at: ReapCandidates' when set
// (read afresh: the reaper decides from the documents), else all.
func (m *Manager) reapList() ([]*Agent, []error) {
	fn := m.reapCandidates.Load()
	if fn == nil {
		return m.ListAgents()
	}
	names, err := (*fn)()
	if err != nil {
		return m.ListAgents()
	}
	var out []*Agent
	var errs []error
	for _, name := range names {
		a, err := m.GetAgent(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		out = append(out, a)
	}
	return out, errs
}

// Reap is what a long-running process (a pool, the verifier, `tavern
// watch`) runs on every tick, and `tavern reap` once: ReapAgents first
// (it kills the orphaned trees of dead wrappers, which hold their items'
// claims), then the queue reaper on queues (all when none are given),
// which returns the claims of dead holders. Agent documents that do not
// parse join the item files that do not in the report's Invalid.
func (m *Manager) Reap(b *queues.Broker, qs ...string) (*queues.ReapReport, error) {
	_, invalid, aerr := m.ReapAgents()
	rep, qerr := b.Reap(qs...)
	if rep == nil {
		rep = &queues.ReapReport{}
	}
	rep.Invalid = append(invalid, rep.Invalid...)
	return rep, errors.Join(aerr, qerr)
}

// BadFile reports whether err is about one document file that is reported
// and skipped, never a reason to fail a whole command: it does not parse
// or validate, or it is not a document file at all (a FIFO, a directory,
// an unreadable file). Such errors carry the file's path (and line:col
// where known: docstore.Position).
func BadFile(err error) bool {
	return errors.Is(err, docstore.ErrParse) || errors.Is(err, schema.ErrInvalid) || errors.Is(err, docstore.ErrOddFile)
}

// splitBad separates the errors about single bad files from the others.
func splitBad(errs []error) (bad, other []error) {
	for _, err := range errs {
		if BadFile(err) {
			bad = append(bad, err)
		} else {
			other = append(other, err)
		}
	}
	return bad, other
}

// RunReaper runs Reap on b every interval (default 1s) until ctx is done,
// reporting errors to onErr (may be nil). A holder's death drops a flock,
// which is no file event: long-running processes poll liveness this way
// so that a dead holder's item returns without anyone taking or reaping.
func (m *Manager) RunReaper(ctx context.Context, b *queues.Broker, every time.Duration, onErr func(error)) {
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := m.Reap(b); err != nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Manager) reapOne(name string) (string, error) {
	// The document before the probe: the instance it names is over if
	// the agent's lock is free after (a wrapper holds that lock from
	// before it names its instance until after the instance ends).
	dead, err := m.GetAgent(name)
	if err != nil || dead.Host == "" || !running(dead.Effective()) {
		return "", err
	}
	// A shared probe first, so that reaping live agents never holds their
	// lock for an instant in which another process's probe would take
	// this reaper for the agent.
	if alive, err := m.Alive(name); err != nil || alive {
		return "", err
	}
	// The wrapper is dead; its child died with it (Pdeathsig), but the
	// rest of the tree may live on, holding the instance's lock and so
	// the item: kill it, before taking the agent's lock, which a spawn
	// of the agent meanwhile waits for (spawnRun.lock) only as long as
	// the writes below take.
	if err := m.reapTree(dead, "reaper"); err != nil {
		return "", err
	}
	l, ok, err := m.Store.TryLock(schema.AgentLockKey(name))
	if err != nil || !ok {
		return "", err // a wrapper started (or unknowable): leave it
	}
	defer l.Unlock()
	// Holding the liveness lock, no wrapper can start for this agent:
	// re-check under it.
	a, err := m.GetAgent(name)
	if err != nil || a.Host == "" || !running(a.Effective()) {
		return "", err
	}
	pid, host := a.PID, a.Host
	if a.Instance != dead.Instance {
		// Another wrapper ran and died meanwhile.
		if err := m.reapTree(a, "reaper"); err != nil {
			return "", err
		}
	}
	if _, err := m.Transition(name, Failed, TransitionOptions{By: "reaper", Reason: "wrapper died (liveness lock free)",
		Edit: func(d *docstore.Doc) error { return clearProcess(d) }}); err != nil {
		return "", err
	}
	return name, m.event(journal.Event{Type: "agent.reaped", Kind: "agent", Path: AgentPath(name), Agent: name, Parent: a.Parent,
		Data: map[string]any{"pid": pid, "host": host}})
}

func clearProcess(d *docstore.Doc) error {
	for _, f := range []string{"pid", "host"} {
		if d.Has(f) {
			if err := d.Delete(f); err != nil {
				return err
			}
		}
	}
	return nil
}
