package main

import (
	"context"

	"github.com/urfave/cli/v2"
)

func newPoolDrainCommand() *cli.Command {
	return &cli.Command{
		Name:      "drain",
		Usage:     "drain a running pool from another terminal, as its first Ctrl-C does",
		ArgsUsage: "NAME",
		Description: `Does what the first Ctrl-C to 'tavern pool run NAME' does, from any process
on the machine that runs it: pools/NAME.md says state: draining at once, so no
drone claims a new item; the run starts no more drones, interrupts those that
wait for an item, and returns once the drones that hold one have finished.
No signal is sent (the run sees its document change). A pool that drains
already is left as it is (a second drain is not a second Ctrl-C: it never
interrupts busy drones). A drain is not lost to a run that is starting (it
holds the pool but has not written its document yet): it is counted in the
document's drain_requests and the run drains from its first write ("was":
"starting" in --json).

--wait DUR waits up to DUR for the run to return (exit 3 if it has not); 0, the
default, returns at once.

A pool that is not running (stopped, or its runner died: tavern doctor) exits
0 saying so ("running": false in --json): nothing of it claims, so
'tavern pool drain NAME --wait 5m && deploy' goes on. An unknown pool exits 3
(did you mean); a pool another machine runs exits 4 (drain it there).

Example:
   tavern pool drain builders --wait 10m`,
		Flags: []cli.Flag{
			waitFlag("wait up to `DUR` for the pool run to return"),
			jsonFlag(),
		},
		Action: runPoolDrain,
	}
}

func runPoolDrain(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("pool drain takes NAME")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	name := c.Args().First()
	d, err := m.DrainPool(name)
	if err != nil {
		return err
	}
	if wait := c.Duration("wait"); wait > 0 && d.Running {
		ctx, cancel := context.WithTimeout(c.Context, wait)
		defer cancel()
		if err := m.WaitPoolStopped(ctx, name); err != nil {
			return timedOut(err, wait, "pool %s did not stop", name)
		}
		d.State = "stopped"
	}
	if c.Bool("json") {
		return printJSON(c, d)
	}
	switch {
	case !d.Running:
		outf(c, "pool %s: not running (state %s)\n", name, d.Was)
	case d.State == "stopped":
		outf(c, "pool %s: drained and stopped\n", name)
	case d.Was == "draining":
		outf(c, "pool %s: draining already (pid %d)\n", name, d.PID)
	case d.PID == 0: // a run starting: its document does not name it yet
		outf(c, "pool %s: draining: no new claims; drones with an item finish\n", name)
	default:
		outf(c, "pool %s: draining (pid %d): no new claims; drones with an item finish\n", name, d.PID)
	}
	return nil
}
