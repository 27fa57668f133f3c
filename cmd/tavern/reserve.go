package main

import (
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
holding .tavern/), for agent --as (or $TAVERN_AGENT). All or nothing: if any
GLOB overlaps another agent's live reservation — either way round, e.g.
src/**/*.go against src/a/b.go or src/a/* — nothing is reserved and the
conflicts are listed (exit 4). Re-reserving your own glob renews it.
Reservations lapse after --ttl (default 1h; 0 = until unreserve).
tavern guard, as a pre-commit hook, refuses commits touching others' paths.

GLOB: * and ? within a path segment, [a-z] classes, ** for any number of
segments, a trailing / for everything below, \x for a literal x.

Examples:
   tavern reserve 'src/parser/**' docs/parser.md --as alice --ttl 2h --reason "parser rewrite"
   tavern reserve --list --json
   tavern unreserve --as alice`,
		Flags: []cli.Flag{
			asFlag(),
			&cli.DurationFlag{Name: "ttl", Value: time.Hour, Usage: "the reservation lapses after `DUR` (0: never)"},
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
	if c.NArg() == 0 || c.String("as") == "" {
		return usageErr("reserve takes GLOB... --as AGENT")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	rs, err := sp.Reserve(c.String("as"), c.Args().Slice(), tuples.ReserveOptions{TTL: c.Duration("ttl"), Reason: c.String("reason")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, rs)
	}
	for _, r := range rs {
		outf(c, "%s\t%s\t%s\n", r.ID, r.Glob, until(r.Expires))
	}
	return nil
}

func until(t time.Time) string {
	if t.IsZero() {
		return "until unreserved"
	}
	return "until " + schema.FormatTime(t)
}
