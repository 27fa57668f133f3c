package main

import "github.com/urfave/cli/v2"

func newUnreserveCommand() *cli.Command {
	return &cli.Command{
		Name:      "unreserve",
		Usage:     "drop an agent's reservations (of GLOBs, or all)",
		ArgsUsage: "[GLOB...]",
		Description: `Drop an agent's reservations (of GLOBs, or all).

Examples:
   tavern unreserve 'src/parser/**' --as alice
   tavern unreserve --as alice   # all of alice's`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runUnreserve,
	}
}

func runUnreserve(c *cli.Context) error {
	if c.String("as") == "" {
		return usageErr("unreserve takes [GLOB...] --as AGENT")
	}
	sp, err := openSpace(c)
	if err != nil {
		return err
	}
	n, err := sp.Unreserve(c.String("as"), c.Args().Slice())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]int{"released": n})
	}
	outf(c, "released %d\n", n)
	return nil
}
