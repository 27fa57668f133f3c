package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/gitsync"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Doctor finds what a crash can leave behind in the store (docstore.
// Finding) and, with fix, repairs each as it is found. Without fix it
// changes nothing. The checks run in an order that lets each repair make
// the next check's findings real ones:
//
//  1. agents: dead-wrapper (working or waiting for a wrapper of this host
//     that died; repair: ReapAgents' work: kill its tree, mark it failed),
//     orphan-process (a dead wrapper's tree still holds its instance
//     lock, and so its item; repair: kill it) and invalid-document (an
//     agent file that does not parse or validate, so none of this could
//     be judged for it; no repair: InvalidFinding);
//     dead-pool (a pool document that says running, paused or draining
//     for a `pool run` of this host whose liveness lock is free: the
//     runner died; repair: state stopped, drones 0, journaled as
//     pool.reaped);
//  2. queues (Broker.Findings): duplicate-copy, dead-claim, journal-gap,
//     dangling-gate, stale item and holder locks;
//  3. stale-lock: instance locks nobody holds (their instance is over),
//     agent locks of removed agents;
//  4. temp-file: temp files and spares in .tmp/ nobody will reuse
//     (docstore.Store.TempFindings);
//  5. stale-index: index cache sections with entries of missing files;
//  6. stray-messages: message directories without a channel document
//     (messages.Findings);
//  7. clone-leftover and restore-leftover: copies of the store that a
//     killed `sync --clone` or `restore` left next to it.
//
// The machine name is DoctorMachine's: it is judged before the Broker
// opens (b's claims engine needs it).
//
// The report lists every finding with Fixed or Error set when fix is on.
// Liveness is judged on this host only (locks, pids): run doctor where
// the store's processes run.
func (m *Manager) Doctor(b *queues.Broker, fix bool) ([]docstore.Finding, error) {
	var all []docstore.Finding
	var errs []error
	phase := func(fs []docstore.Finding, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		for i := range fs {
			f := &fs[i]
			if fix && f.Repair != nil {
				if err := f.Repair(); err != nil {
					f.Error = err.Error()
				} else {
					f.Fixed = true
				}
			}
			all = append(all, *f)
		}
	}
	phase(m.configFindings())
	phase(m.agentFindings())
	phase(m.poolFindings())
	phase(b.Findings())
	phase(m.lockFindings())
	phase(m.Store.TempFindings())
	phase(m.Store.DocLockFindings())
	phase(watcher.IndexFindings(m.Store.Root()))
	phase(messages.Findings(m.Store))
	phase(cloneFindings(m.Store.Root()), nil)
	phase(restoreFindings(m.Store.Root()), nil)
	return all, errors.Join(errs...)
}

// DoctorMachine is the doctor's look at this clone's machine name, made
// before anything that needs the name (the claims engine of
// coordination: git or etcd opens under it, and refuses a bad one): a
// .tavern/.machine holding a name every sync and engine refuses
// (queues.CheckMachineFile) is a machine-name finding. With fix it is
// repaired when the clone never synced or claimed under that name
// (gitsync.SyncedAs): the clone gets back the name it last synced as,
// else a new default name (queues.NewMachineName). Under a name it did
// sync as, the remote holds its journal and claims: no name is made up
// for it, and the finding says what to do.
func (m *Manager) DoctorMachine(fix bool) ([]docstore.Finding, error) {
	var mn *queues.MachineNameError
	if !errors.As(queues.CheckMachineFile(m.Store.Root()), &mn) {
		return nil, nil
	}
	path := filepath.Join(m.Store.Root(), queues.MachineFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	old := strings.TrimSpace(string(b))
	f := docstore.Finding{Kind: docstore.FindingMachineName, Path: queues.MachineFile, Detail: mn.Err.Error()}
	synced, last, err := gitsync.SyncedAs(m.Store.Root(), old)
	switch {
	case err != nil:
		f.Detail += fmt.Sprintf("; whether this clone synced as %q is unknown (%v): write its name there by hand", old, err)
	case synced:
		f.Detail += fmt.Sprintf("; this clone synced as %q, so its journal and claims on the remote are under that name and no other is made up for it: "+
			"write a valid name there (or set %s); the next tavern sync renames the clone, its journal so far staying under %q", old, queues.EnvMachineVar, old)
	default:
		name, why := last, ", the name it syncs as"
		if schema.ValidMachineName(name) != nil {
			name, why = queues.NewMachineName(), ""
		}
		f.Detail += fmt.Sprintf("; this clone never synced as %q: --fix names it %s%s", old, name, why)
		f.Repair = func() error {
			b, err := os.ReadFile(path)
			if err != nil || strings.TrimSpace(string(b)) != old {
				return err // named again since: nothing to repair
			}
			return queues.SaveMachineName(m.Store, name)
		}
	}
	if fix && f.Repair != nil {
		if err := f.Repair(); err != nil {
			f.Error = err.Error()
		} else {
			f.Fixed = true
		}
	}
	return []docstore.Finding{f}, nil
}

// restoreFindings reports the new stores that killed `tavern restore`s
// were assembling next to the store (RestoreLeftovers); the repair
// removes one if its process is still gone.
func restoreFindings(root string) []docstore.Finding {
	var out []docstore.Finding
	for _, p := range RestoreLeftovers(root) {
		out = append(out, docstore.Finding{Kind: docstore.FindingRestoreLeftover, Path: "../" + filepath.Base(p),
			Detail: "the new store a killed `tavern restore` was assembling (its process is gone; the store was not replaced)",
			Repair: func() error {
				if !slices.Contains(RestoreLeftovers(root), p) {
					return nil
				}
				return os.RemoveAll(p)
			}})
	}
	return out
}

// cloneFindings reports the copies of the store that killed `tavern sync
// --clone`s left next to it (gitsync.CloneLeftovers); the repair removes
// one if its process is still gone.
func cloneFindings(root string) []docstore.Finding {
	var out []docstore.Finding
	for _, p := range gitsync.CloneLeftovers(root) {
		out = append(out, docstore.Finding{Kind: docstore.FindingCloneLeftover, Path: "../" + filepath.Base(p),
			Detail: "a copy of the store a killed `tavern sync --clone` left (its process is gone)",
			Repair: func() error {
				if !slices.Contains(gitsync.CloneLeftovers(root), p) {
					return nil
				}
				return os.RemoveAll(p)
			}})
	}
	return out
}

// agentFindings reports agents whose wrapper died on this host and the
// orphaned trees of instances whose wrapper is gone.
func (m *Manager) agentFindings() ([]docstore.Finding, error) {
	list, errs := m.ListAgents()
	bad, errs := splitBad(errs)
	var out []docstore.Finding
	for _, err := range bad {
		out = append(out, InvalidFinding(err))
	}
	for _, a := range list {
		if a.IllegalEdit() {
			continue // reported by check
		}
		free, err := m.Store.LockFree(schema.AgentLockKey(a.Name))
		if err != nil || !free {
			continue // a wrapper runs it (or unknowable)
		}
		name := a.Name
		if a.Host == m.Host && running(a.Effective()) {
			out = append(out, docstore.Finding{Kind: docstore.FindingDeadAgent, Path: AgentPath(name),
				// The wrapper is known dead by its free lock; the pid on
				// record is the agent's command's, not the wrapper's.
				Detail: "state " + a.Effective() + " but its wrapper is gone (the agent's process was pid " + itoa(a.PID) + ")",
				Repair: func() error { _, err := m.reapOne(name); return err }})
			// Its tree may outlive it too (reported below: the repair
			// above kills it, the one below then finds nothing to do).
		}
		if a.Instance == "" || schema.ValidName(a.Instance) != nil {
			continue
		}
		if tfree, err := m.Store.LockFree(schema.InstanceLockKey(a.Instance)); err == nil && !tfree {
			out = append(out, docstore.Finding{Kind: docstore.FindingOrphan, Path: AgentPath(name),
				Detail: "processes of instance " + a.Instance + " outlived their wrapper",
				Repair: func() error {
					l, ok, err := m.Store.TryLock(schema.AgentLockKey(name))
					if err != nil || !ok {
						return err // a wrapper started meanwhile: it reaps the tree itself
					}
					defer l.Unlock()
					a, err := m.GetAgent(name)
					if err != nil {
						return err
					}
					return m.reapTree(a, "doctor")
				}})
		}
	}
	return out, errors.Join(errs...)
}

// poolFindings reports pools whose document says a runner of this host
// runs them while nobody holds the pool's liveness lock (a `pool run`
// killed before it could write stopped).
func (m *Manager) poolFindings() ([]docstore.Finding, error) {
	files, err := m.Store.Names("pools")
	if err != nil && !errors.Is(err, docstore.ErrNotExist) {
		return nil, err
	}
	var out []docstore.Finding
	var errs []error
	for _, f := range files {
		name, ok := strings.CutSuffix(f, ".md")
		if !ok || schema.ValidName(name) != nil {
			continue
		}
		d, err := m.Store.Get(PoolPath(name))
		if err != nil {
			if BadFile(err) {
				out = append(out, InvalidFinding(err))
			} else if !errors.Is(err, docstore.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if !poolLive(d.String("state")) || d.String("host") != m.Host {
			continue
		}
		if free, err := m.Store.LockFree(schema.PoolLockKey(name)); err != nil || !free {
			continue // its runner lives (or unknowable)
		}
		out = append(out, docstore.Finding{Kind: docstore.FindingDeadPool, Path: PoolPath(name),
			Detail: "state " + d.String("state") + " but its runner (pid " + itoa(docInt(d, "pid")) + ") is gone",
			Repair: func() error { return m.reapPool(name) }})
	}
	return out, errors.Join(errs...)
}

// docInt is an integer field of d (0 when it has none).
func docInt(d *docstore.Doc, key string) int {
	v, _ := d.Int(key)
	return int(v)
}

// poolLive reports whether a pool document's state says a runner runs it.
func poolLive(state string) bool {
	return state == "running" || state == "paused" || state == "draining"
}

// reapPool records that a pool's runner died: state stopped, no drones
// (they died with it, or finish as orphans the agent reaper handles),
// journaled as pool.reaped. It holds the pool's lock while it writes, so
// a `pool run` starting meanwhile is not marked stopped.
func (m *Manager) reapPool(name string) error {
	l, ok, err := m.Store.TryLock(schema.PoolLockKey(name))
	if err != nil || !ok {
		return err // a runner started: the document is its own again
	}
	defer l.Unlock()
	// Under the lock no runner writes the document: what it says now is
	// what is changed.
	d, err := m.Store.Get(PoolPath(name))
	if err != nil {
		return err
	}
	was, pid := d.String("state"), docInt(d, "pid")
	if !poolLive(was) || d.String("host") != m.Host {
		return nil
	}
	if _, err := m.Store.Update(PoolPath(name), func(d *docstore.Doc) error {
		return d.SetMany([]docstore.Field{{Key: "state", Value: "stopped"}, {Key: "drones", Value: 0}, {Key: "updated", Value: m.now()}})
	}); err != nil {
		return err
	}
	return m.event(journal.Event{Type: "pool.reaped", Kind: "pool", Path: PoolPath(name),
		Data: map[string]any{"state": was, "pid": pid, "host": m.Host, "by": "doctor"}})
}

// configFindings reports what `tavern check` finds wrong with tavern.md
// although the store opened (coordination: git on a clone that names no
// remote): the same problem, where check puts it, as an InvalidFinding
// with no repair: the setting is a person's to make.
func (m *Manager) configFindings() ([]docstore.Finding, error) {
	r, err := m.Store.Check([]string{docstore.ConfigFile}, false)
	if err != nil {
		return nil, err
	}
	var out []docstore.Finding
	for _, p := range r.Problems {
		if p.Warning || p.Unknown || p.Err == nil {
			continue
		}
		var mn *queues.MachineNameError
		if errors.As(p.Err, &mn) {
			continue // DoctorMachine's finding, with its repair
		}
		out = append(out, InvalidFinding(p.Err))
	}
	return out, nil
}

// InvalidFinding is the doctor's finding for a document that does not
// parse or validate (BadFile). It has no repair: the file is a person's
// to fix (`tavern edit` shows the error and saves only a valid document),
// never rewritten behind their back.
func InvalidFinding(err error) docstore.Finding {
	path, line, col := docstore.Position(err)
	detail := err.Error()
	if line > 0 {
		// The path and position lead the line: "PATH: LINE:COL: ...".
		loc := fmt.Sprintf("%s:%d:%d: ", path, line, col)
		detail = fmt.Sprintf("%d:%d: %s", line, col, strings.TrimPrefix(detail, loc))
	} else {
		detail = strings.TrimPrefix(detail, path+": ")
	}
	return docstore.Finding{Kind: docstore.FindingInvalid, Path: path, Detail: detail}
}

// lockFindings reports instance locks nobody holds and agent locks of
// agents that no longer exist.
func (m *Manager) lockFindings() ([]docstore.Finding, error) {
	keys, err := m.Store.LockKeys()
	if err != nil {
		return nil, err
	}
	var out []docstore.Finding
	for _, key := range keys {
		why := ""
		switch {
		case strings.HasPrefix(key, "instances/"):
			why = "its instance is over"
		case strings.HasPrefix(key, "agents/"):
			name := strings.TrimPrefix(key, "agents/")
			if name == Person {
				break // the person has no document; liveness probes of it make the file again
			}
			if _, err := m.Store.ReadFile(AgentPath(name)); errors.Is(err, docstore.ErrNotExist) {
				why = "agent " + name + " no longer exists"
			}
		}
		if why == "" {
			continue
		}
		if free, err := m.Store.LockFree(key); err != nil || !free {
			continue
		}
		key := key
		out = append(out, docstore.Finding{Kind: docstore.FindingStaleLock, Path: ".locks/" + key + ".lock", Detail: why,
			Repair: func() error { _, err := m.Store.RemoveLock(key); return err }})
	}
	return out, nil
}

func itoa(n int) string {
	if n == 0 {
		return "unknown"
	}
	return strconv.Itoa(n)
}
