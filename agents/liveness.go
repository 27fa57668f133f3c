package agents

import (
	"errors"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Alive reports whether a process holds the agent's liveness lock.
func (m *Manager) Alive(agent string) (bool, error) {
	l, ok, err := m.Store.TryLock(schema.AgentLockKey(agent))
	if err != nil {
		return false, err
	}
	if ok {
		l.Unlock()
		return false, nil
	}
	return true, nil
}

// ReapAgents marks failed every agent whose wrapper died: the document
// says a wrapper on this host runs it (host is set, in working or waiting)
// but nobody holds its liveness lock. The wrapper sets host when the agent
// starts working and clears host and pid before it lets the lock go, so a
// free lock with host left behind means the wrapper was killed or crashed. Agents running on other hosts are left to those hosts.
// It returns the names reaped.
func (m *Manager) ReapAgents() ([]string, error) {
	agents, errs := m.ListAgents()
	var reaped []string
	var errOut error
	for _, a := range agents {
		if a.Host == "" || a.Host != m.Host || !running(a.Effective()) {
			continue
		}
		name, err := m.reapOne(a.Name)
		if err != nil {
			errOut = errors.Join(errOut, err)
		}
		if name != "" {
			reaped = append(reaped, name)
		}
	}
	return reaped, errors.Join(append(errs, errOut)...)
}

func (m *Manager) reapOne(name string) (string, error) {
	l, ok, err := m.Store.TryLock(schema.AgentLockKey(name))
	if err != nil || !ok {
		return "", err // alive (or unknowable): leave it
	}
	defer l.Unlock()
	// Holding the liveness lock, no wrapper can start for this agent:
	// re-check under it.
	a, err := m.GetAgent(name)
	if err != nil || a.Host == "" || !running(a.Effective()) {
		return "", err
	}
	pid, host := a.PID, a.Host
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
