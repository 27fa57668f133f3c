package main

import (
	"context"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
)

// startReaper runs the library's background reaper (agents.Manager.
// RunReaper: agents of dead wrappers, claims of dead holders, every
// second) for a long-running command that has no other reason to touch
// queues (watch). It returns the function that stops it.
func startReaper(c *cli.Context, s *docstore.Store) func() {
	m, err := agents.NewManager(s)
	if err != nil {
		warnf(c, nil, "no background reaper: %w", err)
		return func() {}
	}
	stop := startReaperWith(c, m)
	return func() {
		stop()
		m.Close()
	}
}

// startReaperWith is startReaper with the caller's Manager (whose
// ReapCandidates may come from a projection); the caller closes it.
func startReaperWith(c *cli.Context, m *agents.Manager) func() {
	b, err := queues.Open(m.Store, queues.Options{Journal: m.Journal})
	if err != nil {
		warnf(c, nil, "no background reaper: %w", err)
		return func() {}
	}
	stop := runReaper(c, m, b)
	return func() {
		stop()
		b.Close()
	}
}

// runReaper runs the reaper on the caller's broker until the returned
// function is called; the caller closes b.
func runReaper(c *cli.Context, m *agents.Manager, b *queues.Broker) func() {
	ctx, cancel := context.WithCancel(c.Context)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.RunReaper(ctx, b, time.Second, func(err error) { reportErr(c, "reaper", err) })
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
