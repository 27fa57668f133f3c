package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

func newAnswerCommand() *cli.Command {
	return &cli.Command{
		Name:      "answer",
		Usage:     "answer a question (wakes the asker)",
		ArgsUsage: "ID ANSWER...",
		Description: `Answer a question (wakes the asker).

Examples:
   tavern questions --as lead
   tavern answer 01a2f0c4 "use postgres"`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runAnswer,
	}
}

func runAnswer(c *cli.Context) error {
	if c.NArg() < 2 {
		return usageErr("answer takes ID ANSWER")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	by, err := actorOf(c, m.Store)
	if err != nil {
		return err
	}
	q, err := m.Answer(c.Args().First(), strings.Join(c.Args().Slice()[1:], " "), by.AgentName())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, q)
	}
	outf(c, "%s answered\n", q.ID)
	return nil
}
