package agents

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// Process trees of spawn instances (doc.go, "Supervision").
//
// The wrapper takes the instance's liveness lock (schema.InstanceLockKey)
// on a descriptor the child inherits, so every process of the tree that
// has not closed it holds the lock: a claim tied to it is never reaped
// while one of them may still be executing it. When the wrapper is gone,
// whoever finds the tree orphaned (the next spawn of the agent, the agent
// reaper) kills it: the processes that hold the lock file open, and the
// process groups they lead or share with the child.

// treeGrace bounds the wait for a killed tree's processes to exit (they
// were sent SIGKILL, so only an uninterruptible sleep delays them).
const treeGrace = 30 * time.Second

// killTree SIGKILLs the processes of instance's tree other than this one
// and waits, up to treeGrace, until none of them holds the lock file. pgid
// is the child's process group (0: unknown); a holder's own group is
// killed too when it leads it or it is pgid (a member that closed the
// descriptor is still in its group). It returns the pids killed.
func (m *Manager) killTree(instance string, pgid int) ([]int, error) {
	key := schema.InstanceLockKey(instance)
	var killed []int
	deadline := time.Now().Add(treeGrace)
	for {
		holders, err := m.Store.LockHolders(key)
		if errors.Is(err, docstore.ErrNoProc) {
			if pgid > 0 {
				_ = unix.Kill(-pgid, unix.SIGKILL)
			}
			return killed, nil
		}
		if err != nil {
			return killed, err
		}
		holders = slices.DeleteFunc(holders, func(p int) bool { return p == os.Getpid() })
		if len(holders) == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("instance %s: processes %v still hold its lock after SIGKILL", instance, holders)
		}
		for _, p := range holders {
			if !slices.Contains(killed, p) {
				killed = append(killed, p)
			}
			// A group of the tree: the child's, or one a holder made for
			// itself (setsid/setpgid), whose members may have closed the
			// descriptor. The group is checked to hold a live holder now,
			// so its id cannot have been reused.
			if g, err := unix.Getpgid(p); err == nil && (g == p || g == pgid) {
				_ = unix.Kill(-g, unix.SIGKILL)
			}
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond) // SIGKILLed processes release their files as they exit
	}
}

// reapTree kills the orphaned tree of a dead wrapper's instance (the
// agent's lock is free: no wrapper runs it) if any process still holds
// the instance's lock, journals agent.orphans_killed, and removes the
// lock file once free. The caller holds the agent's lock.
func (m *Manager) reapTree(a *Agent, by string) error {
	if a.Instance == "" || schema.ValidName(a.Instance) != nil {
		return nil
	}
	key := schema.InstanceLockKey(a.Instance)
	l, free, err := m.Store.TryLock(key)
	if err != nil {
		return err
	}
	if free {
		return l.Remove()
	}
	l = nil
	killed, kerr := m.killTree(a.Instance, a.PID)
	if len(killed) > 0 {
		kerr = errors.Join(kerr, m.event(journal.Event{Type: "agent.orphans_killed", Kind: "agent", Path: AgentPath(a.Name), Agent: a.Name,
			Data: map[string]any{"instance": a.Instance, "pids": killed, "by": by}}))
	}
	if kerr != nil {
		return kerr
	}
	if l, free, err := m.Store.TryLock(key); err == nil && free {
		return l.Remove()
	}
	return nil
}

// waitExited waits until process pid has exited without reaping it: the
// zombie keeps its pid, and so its process group's id, from being reused
// while the group is killed.
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}
