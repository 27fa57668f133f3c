package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"
)

func newAskCommand() *cli.Command {
	return &cli.Command{
		Name:      "ask",
		Usage:     "raise a question to the parent, an agent or the user",
		ArgsUsage: "[QUESTION...]",
		Description: `Writes questions/<id>.md addressed to --to (parent: the asking agent's parent,
or the user when it has none; user; or an agent name) and moves the asking
agent (--as or TAVERN_AGENT) to waiting. Without QUESTION (or with -) the
question is read from stdin, as send reads its text. The person (no --as,
no TAVERN_AGENT) has no parent and is the user: it asks an agent, with --to
WHO; asking the user, as an agent asking itself, is a usage error (exit 2).
With --wait it blocks until the
question is answered (woken by the watcher) and prints the answer; exit 3 if
the wait times out (the question stays open). The agent waits with or
without --wait (--wait 0s is no wait: ask and return): its answer moves it
back to working. Unanswered questions bubble up
to the next parent after bubble_after (see 'tavern bubble', 'tavern verifier').

Example (inside a spawned agent):
   answer=$(tavern ask --wait 30m "Postgres or SQLite for the cache?")
   git diff | tavern ask --to reviewer`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Value: "parent", Usage: "`parent`, user or an agent name (or @NAME)"},
			&cli.IntFlag{Name: "priority", Usage: "priority `N` (0 is highest)"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to `DUR` for the answer and print it (0: ask and return)", Action: notNegative("wait")},
			asFlag(), jsonFlag(),
		},
		Action: runAsk,
	}
}

func runAsk(c *cli.Context) error {
	// An empty --to (an unset variable in --to "$LEAD") is not the
	// default: asking the parent instead would send it elsewhere unsaid.
	if c.IsSet("to") && strings.TrimSpace(c.String("to")) == "" {
		return usageErr("--to %q: empty; name parent, user or an agent", c.String("to"))
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	from, err := actorOf(c, m.Store)
	if err != nil {
		return err
	}
	text, err := textArg(c, 0)
	if err != nil {
		return err
	}
	q, err := m.Ask(from.Name, c.String("to"), c.Int("priority"), text)
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	if wait <= 0 {
		if c.Bool("json") {
			return printJSON(c, q)
		}
		outf(c, "%s\n", q.ID)
		return nil
	}
	if !c.Bool("json") { // under --json stderr holds the one error object, if any
		errf(c, "asked %s (question %s); waiting up to %s\n", q.To, q.ID, wait)
	}
	ctx, cancel := context.WithTimeout(c.Context, wait)
	defer cancel()
	a, err := m.WaitAnswer(ctx, q.ID)
	err = timedOut(err, wait, "no answer to question %s", q.ID)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, a)
	}
	outf(c, "%s\n", a.Answer)
	return nil
}
