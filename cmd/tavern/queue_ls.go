package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
)

func init() {
	addQueueCmd(&cli.Command{
		Name:      "ls",
		Usage:     "queue depths per state, oldest pending age, claim owners",
		ArgsUsage: "[Q]",
		Description: `One line per queue (or just Q): items per state; of the pending ones how many
are ready, in backoff, waiting for dependencies; the age of the oldest pending
item; who holds the claims (a holder that died and was not reaped yet is shown
as dead: NAME(N, D dead)). Items blocked by a dead dependency and invalid
item files are reported on stderr (path:line:col).

Examples:
   tavern queue ls
   tavern queue ls build --json`,
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageErr("queue ls takes at most one queue name")
			}
			_, b, err := openBroker(c)
			if err != nil {
				return err
			}
			defer b.Close()
			var names []string
			if c.NArg() == 1 {
				names = []string{c.Args().First()}
			} else {
				qs, errs := b.Queues()
				warnDiag(c, errs, nil)
				for _, q := range qs {
					names = append(names, q.Name)
				}
			}
			var stats []*queues.Stats
			for _, n := range names {
				st, err := b.Stats(n)
				if err != nil {
					return err
				}
				stats = append(stats, st)
			}
			now := time.Now()
			if c.Bool("json") {
				out := []map[string]any{}
				for _, st := range stats {
					m := map[string]any{
						"queue": st.Queue, "priority": st.Priority, "steal": st.Steal, "on_empty": st.OnEmpty,
						"pending": st.Pending, "claimed": st.Claimed, "done": st.Done, "dead": st.Dead,
						"ready": st.Ready, "backoff": st.Backoff, "waiting": st.Waiting, "hung": st.Hung,
						"blocked": blockedJSON(st.Blocked), "invalid": errorsJSON(st.Invalid), "owners": st.Owners, "dead_owners": st.DeadOwners,
					}
					if !st.OldestPending.IsZero() {
						m["oldest_pending"] = st.OldestPending.UTC().Format(time.RFC3339Nano)
						m["oldest_pending_age_seconds"] = now.Sub(st.OldestPending).Seconds()
					}
					out = append(out, m)
				}
				return printJSON(c, out)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "QUEUE\tPRI\tPENDING\tREADY\tBACKOFF\tWAITING\tBLOCKED\tCLAIMED\tDONE\tDEAD\tOLDEST\tOWNERS")
			for _, st := range stats {
				age := "-"
				if !st.OldestPending.IsZero() {
					age = now.Sub(st.OldestPending).Round(time.Second).String()
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", st.Queue, st.Priority, st.Pending, st.Ready,
					st.Backoff, st.Waiting, len(st.Blocked), st.Claimed, st.Done, st.Dead, age, owners(st.Owners, st.DeadOwners))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, st := range stats {
				warnDiag(c, st.Invalid, st.Blocked)
			}
			return nil
		},
	})
}

// owners renders claim holders as NAME(N), or NAME(N, D dead) when D of
// the claims have a dead holder that no reaper has seen yet.
func owners(m, dead map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for k, n := range m {
		if d := dead[k]; d > 0 {
			out = append(out, fmt.Sprintf("%s(%d, %d dead)", k, n, d))
			continue
		}
		out = append(out, fmt.Sprintf("%s(%d)", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
