package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func newQuestionsCommand() *cli.Command {
	return &cli.Command{
		Name:  "questions",
		Usage: "list open questions addressed to an agent (or, without --as, to the user)",
		Description: `List open questions addressed to an agent (or, without --as, to the user).

Examples:
   tavern questions              # questions that reached the user
   tavern questions --as lead --json`,
		Flags: []cli.Flag{
			asFlag(),
			&cli.BoolFlag{Name: "all", Usage: "every question, open or answered, for anyone"},
			jsonFlag(),
		},
		Action: withManager(runQuestions),
	}
}

func runQuestions(c *cli.Context, m *agents.Manager) error {
	who, err := actorOf(c, m.Store)
	if err != nil {
		return err
	}
	to := who.AgentName()
	if to == "" {
		to = agents.User
	}
	var qs []*agents.Question
	if c.Bool("all") {
		qs, err = m.Questions("", false)
	} else {
		qs, err = m.Questions(to, true)
	}
	if err != nil && len(qs) == 0 {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(qs))
	}
	tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPRI\tFROM\tTO\tSTATUS\tAGE\tQUESTION")
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", q.ID, q.Priority, q.From, q.To, q.Status,
			time.Since(q.Created.Time).Round(time.Second), clipLine(q.Text, 70))
	}
	return tw.Flush()
}
