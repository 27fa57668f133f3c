package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"

	"github.com/tavernhq/tavern/watcher"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newWatchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "stream document changes and journal events as they happen",
		Description: `Prints every change to the store's documents (created, updated, removed,
invalid with path:line:col) and every event other processes journal
(item.claimed, agent.spawned...), until interrupted. Changes no tavern
command made (hand edits, git checkout) are also journaled as "external";
each is printed once, as the change (an "external" line only for a change
not printed as one, e.g. with --type external), except a change another
machine made, which tavern sync brought: its "external" line follows,
naming that machine. Interrupted, it exits once the changes it printed are
journaled (within external_grace, 2s).
A line "watch.missed" means output could not keep up and N events were
dropped: re-run ls or log to resync. --poll forces polling (network
filesystems are detected and polled automatically, and a store too big for
the inotify watch limit is polled with a warning). While it runs, watch reaps
every second (claims of dead holders go back to pending, agents of dead
wrappers to failed), like tavern reap.

--where keeps the documents whose fields match (the expressions of ls
--where, all must hold, with its warnings of a likely typo) after each change; a change that makes a document
stop matching is printed once as doc.left. --path keeps one document (a
path, a reference such as agents/bob, or the file's path), or the documents
under a directory (agents/ or agents); a path that names nothing in the
store but is near one that does (agnets/) is warned about.

Examples:
   tavern watch
   tavern watch --kind items --json
   tavern watch --type doc.invalid --type external
   tavern watch --kind agents --where state=working
   tavern watch --path queues/build/`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Usage: "only documents of `KIND`"},
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "event `TYPE` (repeatable; item. matches by prefix, *.claimed as a glob)"},
			&cli.StringFlag{Name: "agent", Usage: "only events of `AGENT`"},
			&cli.StringFlag{Name: "parent", Usage: "only events with parent `AGENT`"},
			whereFlag(), pathFlag(),
			&cli.DurationFlag{Name: "poll", Usage: "poll every `DUR` instead of using inotify (0: inotify)", Action: notNegative("poll")},
			jsonFlag(),
		},
		Action: runWatch,
	}
}

func runWatch(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("watch takes no arguments")
	}
	f, err := eventFilter(c)
	if err != nil {
		return err
	}
	where, kind, err := whereConds(c)
	if err != nil {
		return err
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	warnNearAgent(c, s, "agent", f.Agent)
	warnNearAgent(c, s, "parent", f.Parent)
	warnNearTypes(c, f.Types)
	warnWhere(c, s, kind, where)
	f.Path = eventPath(s, f.Path)
	warnNearPath(c, s, c.String("path"), f.Path)
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	// Timings from tavern.md (defaults when absent or unreadable).
	var reconcile, settle, grace time.Duration
	if cfg, err := s.Get("tavern.md"); err == nil {
		for _, f := range []struct {
			key string
			d   *time.Duration
		}{{"reconcile", &reconcile}, {"settle", &settle}, {"external_grace", &grace}} {
			if d, err := time.ParseDuration(cfg.String(f.key)); err == nil {
				*f.d = d
			}
		}
	}
	longRunningStart()
	p, err := watcher.Open(s, watcher.Options{
		Watch: true, Poll: c.Duration("poll"), Reconcile: reconcile,
		Settle: settle, ExternalGrace: grace,
		Cache: true, Journal: j, FollowJournal: true,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	// A long-running process reaps: a holder's death is no file event,
	// and nobody else may be taking from its queue. Its agents come from
	// the projection, not from reading every agent document each second.
	m, err := agents.NewManager(s)
	if err != nil {
		return err
	}
	defer m.Close()
	m.SetReapCandidates(reapCandidates(p, m.Host))
	defer startReaperWith(c, m)()
	defer serveQueries(c, s, p, "tavern watch")()
	longRunningMemory(0)
	sub := p.SubscribeWhere(f, where, 4096)
	defer sub.Close()
	// The ready line goes to stderr so scripts (and tests) know
	// that every later change will be reported.
	// Under --json it is a JSON object too, so that stderr parses.
	if c.Bool("json") {
		b, _ := json.Marshal(map[string]any{"watching": s.Root(), "mode": p.Mode(), "documents": p.Len()})
		errf(c, "%s\n", b)
	} else {
		errf(c, "tavern: watching %s (%s, %s)\n", s.Root(), p.Mode(), counted(p.Len(), "document"))
	}
	asJSON := c.Bool("json")
	var once onceEach
	for {
		select {
		case <-c.Context.Done():
			// Interrupted: the hand edits printed are journaled before
			// exiting (within external_grace), not left to the next
			// watcher.
			ctx, cancel := context.WithTimeout(context.Background(), max(grace, 2*time.Second)+5*time.Second)
			p.SettleExternals(ctx)
			cancel()
			return nil
		case e, ok := <-sub.C:
			if !ok {
				return nil
			}
			if !once.first(e) {
				continue
			}
			if asJSON {
				if e.ID == "" {
					// A change the watcher saw, which no journal
					// entry names yet: an event id of its own, so
					// that "id" keys every line of the stream.
					e.ID = docstore.NewID()
				}
				b, _ := json.Marshal(e)
				outf(c, "%s\n", b)
			} else {
				outf(c, "%s\n", formatEvent(e))
			}
		}
	}
}

// onceEach keeps a hand edit to one line of the stream: the change is
// printed as the watcher sees it (doc.updated...), and the "external"
// entry this process journals for it after the grace period would print
// it a second time. An external entry is printed only when the change it
// records was not (a --type filter that keeps external, a change seen
// before watch started, or another process's change it journaled), or
// when it names the machine a sync brought the change from.
type onceEach struct {
	// "path type rev" of changes printed, until their externals: a
	// count, since a revision toggled back and forth is printed (and
	// journaled) once per change.
	printed map[string]int
}

// first reports whether e is to be printed.
func (o *onceEach) first(e journal.Event) bool {
	switch e.Type {
	case journal.TypeCreated, journal.TypeUpdated, journal.TypeRemoved, journal.TypeInvalid:
		if o.printed == nil || len(o.printed) > 1<<14 {
			// Engine writes are never followed by an external entry: a
			// bound on what waits for one.
			o.printed = map[string]int{}
		}
		o.printed[e.Path+" "+e.Type+" "+e.Rev]++
	case journal.TypeExternal:
		op, _ := e.Data["op"].(string)
		k := e.Path + " " + op + " " + e.Rev
		if m, _ := e.Data["machine"].(string); m != "" {
			// A change that came through a sync: the watcher's line
			// cannot say from which machine, this one does.
			if o.printed[k] > 0 {
				if o.printed[k]--; o.printed[k] == 0 {
					delete(o.printed, k)
				}
			}
			return true
		}
		if o.printed[k] > 0 {
			if o.printed[k]--; o.printed[k] == 0 {
				delete(o.printed, k)
			}
			return false
		}
	}
	return true
}
