package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newReserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "reserve",
		Usage:     "reserve paths for an agent (exclusive, with a TTL)",
		ArgsUsage: "GLOB...",
		Description: `Reserves the paths GLOB matches, relative to the project root (the directory
holding .tavern/), for --as AGENT (default: $TAVERN_AGENT, else you, "user").
All or nothing: if any
GLOB overlaps another agent's live reservation — either way round, e.g.
src/**/*.go against src/a/b.go or src/a/* — nothing is reserved and the
conflicts are listed (exit 4). Re-reserving your own glob renews it.
Reservations lapse after --ttl (default 1h; 0 = until unreserve).
tavern guard, as a pre-commit hook, refuses commits touching others' paths.

--wait DUR blocks until the paths are free or DUR passes (exit 3 then, as
every wait that runs out), woken by every unreserve at once; the refusals
while it waits are not journaled one by one.

A reservation made --as a live agent (one running under tavern spawn) is
tied to that agent's life, like a claim or a token: when its process dies,
or a newer instance replaces it, the reservation is released at the next
look (a note on stderr names what was released in your way). Expired
reservations are collected as they are met.

Instances: a reservation records --instance (default $TAVERN_INSTANCE, set
by tavern spawn); unreserve --as A from another instance of A changes
nothing (exit 4, "fenced"). A reserve by a dead instance (replaced by a
newer spawn of its agent, or whose spawn wrapper is gone: an orphan of a
killed wrapper) exits 4 ("fenced") and writes nothing. unreserve --id ID
drops one reservation by its id, whatever the instance.

GLOB: * and ? within a path segment, [a-z] classes, ** for any number of
segments, a trailing / for everything below, \x for a literal x.

Examples:
   tavern reserve 'src/parser/**' docs/parser.md --as alice --ttl 2h --reason "parser rewrite"
   tavern reserve src/lexer.go --as alice --wait 10m
   tavern reserve --list --json
   tavern unreserve --as alice`,
		Flags: []cli.Flag{
			asFlag(),
			instanceFlag(),
			waitFlag("wait up to `DUR` for the paths to be free"),
			&cli.DurationFlag{Name: "ttl", Value: time.Hour, Usage: "the reservation lapses after `DUR` (0: never)", Action: notNegative("ttl")},
			&cli.StringFlag{Name: "reason", Usage: "why, shown to agents that conflict"},
			&cli.BoolFlag{Name: "list", Usage: "list live reservations instead"},
			jsonFlag(),
		},
		Action: runReserve,
	}
}

func runReserve(c *cli.Context) error {
	if c.Bool("list") {
		return runReservations(c)
	}
	if c.NArg() == 0 {
		return usageErr("reserve takes GLOB... [--as AGENT]")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, sp.Store())
	if err != nil {
		return err
	}
	opt := tuples.ReserveOptions{TTL: c.Duration("ttl"), Reason: c.String("reason"), Instance: c.String("instance"),
		Released: func(cf tuples.Conflict) {
			if c.Bool("json") { // a JSON object on stderr, as every warning under --json
				warn(c, fmt.Errorf("note: %s", cf))
				return
			}
			errf(c, "tavern: note: %s\n", cf)
		}}
	var rs []*tuples.Reservation
	if wait := c.Duration("wait"); wait > 0 {
		ctx, cancel := context.WithTimeout(c.Context, wait)
		defer cancel()
		rs, err = sp.ReserveWait(ctx, as.Name, c.Args().Slice(), opt)
		if errors.Is(err, tuples.ErrReserved) { // still reserved when the wait ran out: say by whom
			err = fmt.Errorf("%w: %v", timedOut(context.DeadlineExceeded, wait, "the paths did not become free"), err)
		} else {
			err = timedOut(err, wait, "the paths did not become free")
		}
	} else {
		rs, err = sp.Reserve(as.Name, c.Args().Slice(), opt)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, rs)
	}
	for _, r := range rs {
		outf(c, "%s\t%s\t%s\n", r.ID, r.Glob, until(r.Expires.Time))
	}
	return nil
}

func until(t time.Time) string {
	if t.IsZero() {
		return "until unreserved"
	}
	return "until " + schema.FormatTime(t)
}
