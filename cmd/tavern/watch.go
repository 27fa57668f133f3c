package main

import (
	"encoding/json"
	"time"

	"github.com/urfave/cli/v2"

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
command made (hand edits, git checkout) are also journaled as "external".
A line "watch.missed" means output could not keep up and N events were
dropped: re-run ls or log to resync. --poll forces polling (network
filesystems are detected and polled automatically).

Examples:
   tavern watch
   tavern watch --kind items --json
   tavern watch --type doc.invalid --type external`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Usage: "only documents of `KIND`"},
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "event `TYPE` (repeatable; item. matches by prefix)"},
			&cli.StringFlag{Name: "agent", Usage: "only events of `AGENT`"},
			&cli.StringFlag{Name: "parent", Usage: "only events with parent `AGENT`"},
			&cli.DurationFlag{Name: "poll", Usage: "poll every `DUR` instead of using inotify"},
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
	s, err := openStore(c)
	if err != nil {
		return err
	}
	j, err := journal.Open(s.Root(), journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	reconcile := time.Duration(0)
	if cfg, err := s.Get("tavern.md"); err == nil {
		if d, err := time.ParseDuration(cfg.String("reconcile")); err == nil {
			reconcile = d
		}
	}
	p, err := watcher.Open(s, watcher.Options{
		Watch: true, Poll: c.Duration("poll"), Reconcile: reconcile,
		Cache: true, Journal: j, FollowJournal: true,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	sub := p.Subscribe(f, 4096)
	defer sub.Close()
	// The ready line goes to stderr so scripts (and tests) know
	// that every later change will be reported.
	errf(c, "tavern: watching %s (%s, %d documents)\n", s.Root(), p.Mode(), p.Len())
	asJSON := c.Bool("json")
	for {
		select {
		case <-c.Context.Done():
			return nil
		case e, ok := <-sub.C:
			if !ok {
				return nil
			}
			if asJSON {
				b, _ := json.Marshal(e)
				outf(c, "%s\n", b)
			} else {
				outf(c, "%s\n", formatEvent(e))
			}
		}
	}
}
