package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newReservationsCommand() *cli.Command {
	return &cli.Command{
		Name:  "reservations",
		Usage: "list live path reservations",
		Description: `List live path reservations.

With coordination etcd or git, a reservation made on another machine whose
file has not synced here yet is listed from the engine (JSON: machine, and no
id, created or path); with the engine out of reach, a warning says those are
not shown (a JSON error object on stderr under --json). In the table, such a
reservation's AGENT says which machine: "ann (on alpha)". With coordination
git each listing fetches the remote's claim refs; --max-age DUR lists from the
refs an earlier command fetched from the same remote less than DUR ago
instead, and a warning says how old that view is (a JSON error object on
stderr under --json): for a script or status line that polls. reserve never
uses it: a reservation always asks the remote.

Examples:
   tavern reservations
   tavern reservations --json
   tavern reservations --max-age 10s`,
		Flags: []cli.Flag{jsonFlag(), &cli.DurationFlag{Name: "max-age", Action: notNegative("max-age"),
			Usage: "with coordination git, list other machines' reservations from a fetch of the claim refs up to `DUR` old (0: fetch now)"}},
		Action: runReservations,
	}
}

func runReservations(c *cli.Context) error {
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	rs, errs := sp.ListReservations(tuples.ReservationListOptions{MaxAge: c.Duration("max-age")})
	for _, e := range errs {
		warn(c, e) // a JSON object under --json
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(rs))
	}
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tGLOB\tEXPIRES\tREASON")
	for _, r := range rs {
		exp := "-"
		if !r.Expires.IsZero() {
			exp = schema.FormatTime(r.Expires.Time)
		}
		agent := r.Agent
		if r.Machine != "" {
			agent += " (on " + r.Machine + ")" // its file has not synced here yet
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", agent, r.Glob, exp, r.Reason)
	}
	return tw.Flush()
}
