package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
)

func newTokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "resource tokens (merge slots, API quota) with holder liveness",
		Description: `A token NAME with --count N is N slot tuples under .tavern/tuples/token/.
acquire takes a free slot (exactly one caller gets each) and prints its
handle ID:EPOCH; release gives it back. What keeps a slot held:

   --as A, A alive   held while agent A's liveness lock (agents/A, held by A's
                     spawn wrapper) is held: it comes back when A's process dies
   --as A --ttl DUR  (A alive) back when A dies or the lease runs out
   --as A, A not alive
                     a lease in A's name: held until --ttl passes (default:
                     default_lease; a note on stderr says so); --ttl 0 refuses
                     (exit 2: a usage error, nothing would give the slot back)
   no --as           a lease: held until --ttl passes (default: default_lease
                     in tavern.md, 5m), then it comes back

A token held by a process that died, an agent that died (or whose instance
a newer spawn replaced) or an expired lease comes back at the next acquire,
token ls or tuple gc. acquire --wait is woken by a release at once, and
looks again every second while a live holder holds a slot (a death is not
a filesystem event) or when the first lease runs out.

Instances: a slot records the acquirer's instance (--instance, default
$TAVERN_INSTANCE, set by tavern spawn). release --as A, or by bare ID, from
another instance of A changes nothing (exit 4, "fenced"): a late release of
a dead instance cannot free what its successor holds. An acquire by a dead
instance (replaced by a newer spawn of A, or whose spawn wrapper is gone: an
orphan of a killed wrapper) exits 4 ("fenced") and takes nothing, not even a
lease. A full handle
ID:EPOCH releases that holding whatever the instance, and from anyone
(without --as: with --as, only as its holder).

A release with a stale handle (the slot was reclaimed and taken again) is
refused with exit 4. Exit 3: no free slot within --wait, no such token, or a
release whose ID names no slot of the token (its slots are listed).

Examples:
   tavern token init merge --count 2
   h=$(tavern token acquire merge --wait 10m --as alice)
   tavern token release merge "$h"
   tavern token release merge --as alice
   tavern token ls --json`,
		Subcommands: []*cli.Command{
			{
				Name:      "init",
				Usage:     "create a token with N slots (or change its count)",
				ArgsUsage: "NAME",
				Description: `Create a token with N slots (or change its count). --count 0 retires every
free slot of an existing token; a token that has no slots is unknown (exit 3,
nothing created). A negative count exits 2.

init creates or changes, so a new token whose name is near an existing one's
(gpsu next to gpus) is refused as a likely typo (exit 2, "did you mean"),
nothing written, unless --new. Numbered names (gpu-2 next to gpu-1) are a
series, not typos.

Examples:
   tavern token init merge --count 2
   tavern token init gpu-2 --count 1`,
				Before: requireFlags("count"),
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "count", Usage: "number of slots `N` (required; 0 retires every free slot)"},
					&cli.BoolFlag{Name: "new", Usage: "NAME is a new token, though its name is near an existing one"},
					jsonFlag(),
				},
				Action: runTokenInit,
			},
			{
				Name:      "acquire",
				Usage:     "take a slot; prints its handle ID:EPOCH",
				ArgsUsage: "NAME",
				Description: `Take a slot; prints its handle ID:EPOCH.

Examples:
   h=$(tavern token acquire merge --wait 10m --as alice)
   tavern token acquire api-quota --ttl 1m --json`,
				Flags: []cli.Flag{
					waitFlag("wait up to `DUR` for a free slot"),
					asFlag(),
					instanceFlag(),
					&cli.DurationFlag{Name: "ttl", Usage: "lease: the slot comes back after `DUR` (0: no lease, held while the agent's spawn lives)", DefaultText: "an agent's liveness, else tavern.md default_lease", Action: notNegative("ttl")},
					jsonFlag(),
				},
				Action: runTokenAcquire,
			},
			{
				Name:      "release",
				Usage:     "give a slot back, by handle or every slot an agent holds",
				ArgsUsage: "NAME [ID[:EPOCH]]",
				Description: `Give a slot back, by handle or every slot an agent holds.

Examples:
   tavern token release merge "$h"
   tavern token release merge --as alice`,
				Flags:  []cli.Flag{asFlag(), instanceFlag(), jsonFlag()},
				Action: runTokenRelease,
			},
			{
				Name:      "ls",
				Usage:     "list the slots of a token (of every token)",
				ArgsUsage: "[NAME]",
				Description: `List the slots of a token (of every token).

With coordination etcd or git, a slot held on another machine is listed as
held by its holder, its HANDLE "(on MACHINE)" (JSON: machine, and no id, epoch
or path: only that machine has them); with the engine out of reach, a warning
says such slots may be listed free (a JSON error object on stderr under --json).
With coordination git each listing fetches the remote's claim refs; --max-age
DUR lists from the refs an earlier command fetched from the same remote less
than DUR ago instead, and a warning says how old that view is (a JSON error
object on stderr under --json): for a script or status line that polls.

Examples:
   tavern token ls
   tavern token ls merge --json
   tavern token ls --max-age 10s`,
				Flags: []cli.Flag{jsonFlag(), &cli.DurationFlag{Name: "max-age", Action: notNegative("max-age"),
					Usage: "with coordination git, list other machines' slots from a fetch of the claim refs up to DUR old (0: fetch now)"}},
				Action: runTokenLs,
			},
		},
	}
}

func runTokenInit(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("token init takes NAME --count N")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	name := c.Args().First()
	n, err := sp.InitTokenWith(name, c.Int("count"), tuples.InitTokenOptions{New: c.Bool("new")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]any{"token": name, "count": c.Int("count"), "added": n})
	}
	outf(c, "%s: %s (%+d)\n", name, counted(c.Int("count"), "slot"), n)
	return nil
}

func runTokenAcquire(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("token acquire takes NAME")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, sp.Store())
	if err != nil {
		return err
	}
	opt := tuples.AcquireOptions{As: as.Name, TTL: c.Duration("ttl"), Instance: c.String("instance")}
	if !as.Agent && !c.IsSet("ttl") {
		// This process exits right away: without a live agent nothing
		// would stand for the hold, so it is a lease.
		if opt.TTL, err = queues.DefaultLease(sp.Store()); err != nil {
			return err
		}
	}
	name := c.Args().First()
	acquire := func() (*tuples.Token, error) {
		if wait := c.Duration("wait"); wait > 0 {
			ctx, cancel := context.WithTimeout(c.Context, wait)
			defer cancel()
			tok, err := sp.Acquire(ctx, name, opt)
			if errors.Is(err, tuples.ErrTokenBusy) && ctx.Err() != nil {
				// The wait ran out on a busy token: say so, with why.
				return nil, fmt.Errorf("%w: %v", timedOut(context.DeadlineExceeded, wait, "no slot of token %s came free", name), err)
			}
			return tok, timedOut(err, wait, "no slot of token %s came free", name)
		}
		return sp.TryAcquire(name, opt)
	}
	tok, err := acquire()
	if errors.Is(err, tuples.ErrHolderNotAlive) && !c.IsSet("ttl") {
		// `token acquire NAME --as A` from a shell: nothing alive stands
		// for A, so the hold is a lease in A's name, like reserve --as.
		// Said on stderr so it is not a silent downgrade.
		if opt.TTL, err = queues.DefaultLease(sp.Store()); err != nil {
			return err
		}
		if tok, err = acquire(); err == nil && !c.Bool("json") {
			errf(c, "tavern: note: %s has no live `tavern spawn` process; the slot is held as a lease for %s (release it, or pass --ttl)\n", opt.As, opt.TTL)
		}
	}
	if err != nil {
		return err
	}
	tok.Detach() // the hold is the agent's liveness or the lease, not us
	if c.Bool("json") {
		return printJSON(c, tokenJSON(tok))
	}
	outf(c, "%s\n", tok.Handle())
	return nil
}

func tokenJSON(t *tuples.Token) map[string]any {
	o := map[string]any{"token": t.Name, "id": t.ID, "handle": t.Handle(), "slot": t.Slot, "epoch": t.Epoch, "hold": t.Hold, "held_by": t.HeldBy}
	if !t.LeaseUntil.IsZero() {
		o["lease_until"] = schema.FormatTime(t.LeaseUntil)
	}
	return o
}

func runTokenRelease(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return usageErr("token release takes NAME ID[:EPOCH], or NAME [--as AGENT]")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, sp.Store())
	if err != nil {
		return err
	}
	name := c.Args().First()
	n := 1
	opt := tuples.ReleaseOptions{As: as.Name, Instance: c.String("instance")}
	if c.NArg() == 2 {
		if strings.Contains(c.Args().Get(1), ":") && !c.IsSet("as") {
			// A full handle names one holding exactly: it works from
			// anywhere (README, Identity), not only as its holder.
			opt.As = ""
		}
		err = sp.ReleaseToken(name, c.Args().Get(1), opt)
	} else {
		n, err = sp.ReleaseAgentTokens(name, opt)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]any{"token": name, "released": n})
	}
	outf(c, "%s: released %d\n", name, n)
	return nil
}

func runTokenLs(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("token ls takes at most one NAME")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	slots, bad, err := sp.ListTokenSlots(c.Args().First(), tuples.TokenListOptions{MaxAge: c.Duration("max-age")})
	for _, e := range bad {
		warn(c, e) // a JSON object under --json
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(slots))
	}
	tw := newTable(c.App.Writer, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tSLOT\tSTATE\tHELD BY\tHOLD\tLEASE UNTIL\tHANDLE")
	for _, s := range slots {
		state, lease := "free", ""
		if !s.Free {
			state = "held"
		}
		if !s.LeaseUntil.IsZero() {
			lease = schema.FormatTime(s.LeaseUntil.Time)
		}
		handle := s.ID + ":" + strconv.FormatInt(s.Epoch, 10)
		if s.Machine != "" {
			handle = "(on " + s.Machine + ")" // its handle is that machine's
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Slot, state, s.HeldBy, s.Hold, lease, handle)
	}
	return tw.Flush()
}
