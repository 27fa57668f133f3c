package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
)

func init() {
	register(&cli.Command{
		Name:      "ask",
		Usage:     "raise a question to the parent, an agent or the user",
		ArgsUsage: "QUESTION",
		Description: `Writes questions/<id>.md addressed to --to (parent: the asking agent's parent,
or the user when it has none; user; or an agent name) and moves the asking
agent (--as or TAVERN_AGENT) to waiting. With --wait it blocks until the
question is answered (woken by the watcher) and prints the answer; exit 3 if
the wait times out (the question stays open). Unanswered questions bubble up
to the next parent after bubble_after (see 'tavern bubble', 'tavern verifier').

Example (inside a spawned agent):
   answer=$(tavern ask --wait 30m "Postgres or SQLite for the cache?")`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Value: "parent", Usage: "`parent`, user or an agent name"},
			&cli.IntFlag{Name: "priority", Usage: "priority `N` (0 is highest)"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to `DUR` for the answer and print it"},
			asFlag, jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usageErr("ask takes the QUESTION")
			}
			m, err := openManager(c)
			if err != nil {
				return err
			}
			defer m.Close()
			q, err := m.Ask(actor(c), c.String("to"), c.Int("priority"), strings.Join(c.Args().Slice(), " "))
			if err != nil {
				return err
			}
			if c.Duration("wait") <= 0 {
				if c.Bool("json") {
					return printJSON(c, q)
				}
				outf(c, "%s\n", q.ID)
				return nil
			}
			errf(c, "asked %s (question %s); waiting up to %s\n", q.To, q.ID, c.Duration("wait"))
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("wait"))
			defer cancel()
			a, err := m.WaitAnswer(ctx, q.ID)
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("no answer to %s within %s: %w", q.ID, c.Duration("wait"), err)
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, a)
			}
			outf(c, "%s\n", a.Answer)
			return nil
		},
	})
	register(&cli.Command{
		Name:  "questions",
		Usage: "list open questions addressed to an agent (or, without --as, to the user)",
		Flags: []cli.Flag{
			asFlag,
			&cli.BoolFlag{Name: "all", Usage: "every question, open or answered, for anyone"},
			jsonFlag,
		},
		Action: withManager(func(c *cli.Context, m *agents.Manager) error {
			to := actor(c)
			if to == "" {
				to = agents.User
			}
			var qs []*agents.Question
			var err error
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
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPRI\tFROM\tTO\tSTATUS\tAGE\tQUESTION")
			for _, q := range qs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", q.ID, q.Priority, q.From, q.To, q.Status,
					time.Since(q.Created).Round(time.Second), clipLine(q.Text, 70))
			}
			return tw.Flush()
		}),
	})
	register(&cli.Command{
		Name:      "answer",
		Usage:     "answer a question (wakes the asker)",
		ArgsUsage: "ID ANSWER",
		Flags:     []cli.Flag{asFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return usageErr("answer takes ID ANSWER")
			}
			m, err := openManager(c)
			if err != nil {
				return err
			}
			defer m.Close()
			q, err := m.Answer(c.Args().First(), strings.Join(c.Args().Slice()[1:], " "), actor(c))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c, q)
			}
			outf(c, "%s answered\n", q.ID)
			return nil
		},
	})
	register(&cli.Command{
		Name:  "bubble",
		Usage: "move questions unanswered for longer than bubble_after up to the next parent",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "after", Usage: "override bubble_after (`DUR`)"},
			jsonFlag,
		},
		Action: withManager(func(c *cli.Context, m *agents.Manager) error {
			after := c.Duration("after")
			if after <= 0 {
				after = m.BubbleAfter()
			}
			moved, _, err := m.Bubble(after)
			if c.Bool("json") {
				if perr := printJSON(c, orEmpty(moved)); perr != nil {
					return perr
				}
			} else {
				for _, q := range moved {
					outf(c, "%s -> %s\n", q.ID, q.To)
				}
			}
			return err
		}),
	})
	register(&cli.Command{
		Name:  "constitution",
		Usage: "write a role's constitution or print its sha256",
		Subcommands: []*cli.Command{
			{
				Name:      "set",
				Usage:     "create or replace constitutions/ROLE.md (agents under the old text must --accept-constitution)",
				ArgsUsage: "ROLE",
				Flags:     []cli.Flag{bodyFlag, &cli.StringFlag{Name: "description"}, &cli.StringFlag{Name: "text", Usage: "the constitution `TEXT` (or --body)"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("constitution set takes one ROLE")
					}
					text := c.String("text")
					if text == "" {
						b, err := readBody(c)
						if err != nil {
							return err
						}
						text = string(b)
					}
					if strings.TrimSpace(text) == "" {
						return usageErr("constitution set needs --text or --body")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					sha, err := m.WriteConstitution(c.Args().First(), c.String("description"), strings.TrimSpace(text))
					if err != nil {
						return err
					}
					outf(c, "%s %s\n", agents.ConstitutionPath(c.Args().First()), sha)
					return nil
				},
			},
			{
				Name:      "sha",
				Usage:     "print the sha256 agents record for ROLE",
				ArgsUsage: "ROLE",
				Flags:     []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("constitution sha takes ROLE")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					sha, err := m.ConstitutionSHA(c.Args().First())
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, map[string]string{"role": c.Args().First(), "sha256": sha})
					}
					outf(c, "%s\n", sha)
					return nil
				},
			},
		},
	})
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
