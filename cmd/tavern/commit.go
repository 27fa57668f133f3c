package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

func newCommitCommand() *cli.Command {
	return &cli.Command{
		Name:  "commit",
		Usage: "record an agent's commitments (claims checked by shell assertions)",
		Description: `Record an agent's commitments (claims checked by shell assertions).

Examples:
   tavern commit add alice --desc "tests pass" --assert "go test ./..." --timeout 5m
   tavern commit ls alice`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a commitment",
				ArgsUsage: "[AGENT]",
				Description: `Writes commitments/AGENT/<id>.md (AGENT: default --as, else $TAVERN_AGENT:
an agent commits itself). AGENT must exist (exit 3 otherwise). The assertion is run by 'tavern verify' or the
verifier daemon with sh -c in the project directory; exit 0 means the claim holds.
The sha256 of the assertion is journaled: an assertion changed afterwards is
reported as tampered and never run.

Example:
   tavern commit add alice --desc "parser tests pass" --assert "go test ./parser/" --timeout 2m`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "desc", Usage: "what the agent claims (required)"},
					&cli.StringFlag{Name: "assert", Usage: "shell `CMD` that exits 0 when the claim holds (required)"},
					asFlag(),
					&cli.DurationFlag{Name: "timeout", Usage: "kill the assertion after `DUR`", Value: 60 * time.Second, Action: positiveDur("timeout", "the assertion would be killed before it runs")},
					jsonFlag(),
				},
				Before: requireFlags("desc", "assert"),
				Action: runCommitAdd,
			},
			{
				Name:      "ls",
				Usage:     "list an agent's commitments and their status",
				ArgsUsage: "AGENT",
				Description: `List an agent's commitments and their status.

Examples:
   tavern commit ls alice
   tavern commit ls alice --json`,
				Flags:  []cli.Flag{jsonFlag()},
				Action: runCommitLs,
			},
		},
	}
}

func runCommitAdd(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("commit add takes at most one AGENT")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	agent := c.Args().First()
	if agent == "" {
		a, err := agentActor(c, m.Store)
		if err != nil {
			return err
		}
		agent = a.Name
	}
	cm, err := m.AddCommitment(agent, c.String("desc"), c.String("assert"), c.Duration("timeout"))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, cm)
	}
	outf(c, "%s\n", cm.Path)
	return nil
}

func runCommitLs(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("commit ls takes one AGENT")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	cs, err := m.Commitments(c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(cs))
	}
	tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tEXIT\tDESCRIPTION\tASSERTION")
	for _, cm := range cs {
		exit := "-"
		if cm.ExitCode != nil {
			exit = fmt.Sprint(*cm.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cm.ID, cm.Status, exit, cm.Description, cm.Assertion)
	}
	return tw.Flush()
}
