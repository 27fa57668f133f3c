package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
)

func init() {
	register(&cli.Command{
		Name:  "agent",
		Usage: "create agents, list them, move them through their states",
		Description: `Agents are .tavern/agents/<name>.md. Their state follows a fixed machine:

   idle -> working | failed
   working -> waiting | verifying | done | idle | failed
   waiting -> working | idle | failed
   verifying -> done | working | failed
   done -> idle | failed
   failed -> idle

An illegal transition is refused (exit 4). A state edited by hand is checked
against the state the engine last applied (applied_state): a legal edit is
accepted and journaled, an illegal one is reported by 'agent audit' and
'tavern check' (exit 5) and not acted on until restored or forced.`,
		Subcommands: []*cli.Command{
			{
				Name:      "new",
				Usage:     "create an agent (a themed name if NAME is omitted)",
				ArgsUsage: "[NAME]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "role", Usage: "role `R` (records the sha256 of constitutions/R.md)"},
					&cli.StringFlag{Name: "parent", Usage: "parent agent `P`"},
					&cli.StringFlag{Name: "model", Usage: "model `M`"},
					&cli.StringSliceFlag{Name: "queue", Usage: "queue `Q` (repeatable)"},
					&cli.StringFlag{Name: "assignment", Usage: "the Assignment section `TEXT`"},
					jsonFlag,
				},
				Action: func(c *cli.Context) error {
					if c.NArg() > 1 {
						return usageErr("agent new takes at most one NAME")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					a, err := m.CreateAgent(agents.AgentSpec{Name: c.Args().First(), Role: c.String("role"), Parent: c.String("parent"),
						Model: c.String("model"), Queues: c.StringSlice("queue"), Assignment: c.String("assignment")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, a)
					}
					outf(c, "%s\n", a.Path)
					return nil
				},
			},
			{
				Name:  "ls",
				Usage: "list agents with their state",
				Flags: []cli.Flag{jsonFlag},
				Action: withManager(func(c *cli.Context, m *agents.Manager) error {
					list, errs := m.ListAgents()
					for _, e := range errs {
						errf(c, "tavern: %v\n", e)
					}
					if c.Bool("json") {
						if list == nil {
							list = []*agents.Agent{}
						}
						return printJSON(c, list)
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tSTATE\tROLE\tPARENT\tSPAWNS\tPID")
					for _, a := range list {
						st := a.State
						if a.IllegalEdit() {
							st += " (invalid: applied " + a.AppliedState + ")"
						}
						pid := ""
						if a.PID != 0 {
							pid = fmt.Sprint(a.PID)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, st, dash(a.Role), dash(a.Parent), a.Spawns, pid)
					}
					return tw.Flush()
				}),
			},
			{
				Name:      "show",
				Usage:     "print an agent with its commitments and open questions",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("agent show takes one NAME")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					name := c.Args().First()
					d, err := m.GetAgentDoc(name)
					if err != nil {
						return err
					}
					cs, err := m.Commitments(name)
					if err != nil {
						return err
					}
					qs, _ := m.Questions("", true)
					var mine []*agents.Question
					for _, q := range qs {
						if q.From == name || q.To == name {
							mine = append(mine, q)
						}
					}
					if c.Bool("json") {
						obj := docJSON(m.Store, d, true)
						return printJSON(c, map[string]any{"agent": obj, "commitments": orEmpty(cs), "questions": orEmpty(mine)})
					}
					c.App.Writer.Write(d.Bytes())
					if len(cs) > 0 {
						outf(c, "\n# commitments\n")
						for _, cm := range cs {
							outf(c, "%-8s %s  `%s`\n", cm.Status, cm.Description, cm.Assertion)
						}
					}
					if len(mine) > 0 {
						outf(c, "\n# open questions\n")
						for _, q := range mine {
							outf(c, "%s %s -> %s: %s\n", q.ID, q.From, q.To, q.Text)
						}
					}
					return nil
				},
			},
			{
				Name:      "state",
				Usage:     "move an agent to STATE (legal transitions only)",
				ArgsUsage: "NAME STATE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "force", Usage: "apply any state (journaled as forced)"},
					&cli.StringFlag{Name: "reason", Usage: "journaled `TEXT`"},
					asFlag, jsonFlag,
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usageErr("agent state takes NAME STATE")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					by := actor(c)
					if by == "" {
						by = "user"
					}
					a, err := m.Transition(c.Args().Get(0), c.Args().Get(1), agents.TransitionOptions{By: by, Reason: c.String("reason"), Force: c.Bool("force")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(c, a)
					}
					outf(c, "%s %s\n", a.Name, a.State)
					return nil
				},
			},
			{
				Name:  "audit",
				Usage: "report illegal hand edits of agent states and tampered commitments; accept legal hand edits",
				Flags: []cli.Flag{jsonFlag},
				Action: withManager(func(c *cli.Context, m *agents.Manager) error {
					probs, err := m.Audit()
					tampered, terr := m.Tampered()
					if c.Bool("json") {
						out := []map[string]any{}
						for _, p := range probs {
							out = append(out, map[string]any{"path": p.Path, "agent": p.Agent, "state": p.To, "applied_state": p.From, "error": p.Error()})
						}
						for _, t := range tampered {
							out = append(out, map[string]any{"path": t.Path, "tampered": true, "recorded_sha256": t.Recorded, "sha256": t.Current, "error": t.Error()})
						}
						if perr := printJSON(c, out); perr != nil {
							return perr
						}
					} else {
						for _, p := range probs {
							errf(c, "%v\n", p)
						}
						for _, t := range tampered {
							errf(c, "%v\n", t)
						}
					}
					if err = errors.Join(err, terr); err != nil {
						return err
					}
					if len(probs)+len(tampered) > 0 {
						return withCode(exitInvalid, errSilent)
					}
					return nil
				}),
			},
			{
				Name:  "reap",
				Usage: "mark failed the agents whose spawn wrapper died",
				Flags: []cli.Flag{jsonFlag},
				Action: withManager(func(c *cli.Context, m *agents.Manager) error {
					names, err := m.ReapAgents()
					if c.Bool("json") {
						if names == nil {
							names = []string{}
						}
						if perr := printJSON(c, map[string]any{"reaped": names}); perr != nil {
							return perr
						}
					} else {
						for _, n := range names {
							outf(c, "%s failed (wrapper died)\n", n)
						}
					}
					return err
				}),
			},
			{
				Name:      "note",
				Usage:     "append a paragraph to an agent's Notes",
				ArgsUsage: "NAME TEXT",
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return usageErr("agent note takes NAME TEXT")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					_, err = m.AddNote(c.Args().Get(0), c.Args().Get(1))
					return err
				},
			},
			{
				Name:      "log",
				Usage:     "print the output the spawn wrapper captured for an agent",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{&cli.IntFlag{Name: "tail", Usage: "only the last `N` lines"}, jsonFlag},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageErr("agent log takes one NAME")
					}
					m, err := openManager(c)
					if err != nil {
						return err
					}
					defer m.Close()
					msgs, err := m.ChannelMessages(messages.DirectChannel(c.Args().First()))
					if err != nil {
						return err
					}
					if n := c.Int("tail"); n > 0 && len(msgs) > n {
						msgs = msgs[len(msgs)-n:]
					}
					if c.Bool("json") {
						return printJSON(c, orEmpty(msgs))
					}
					for _, msg := range msgs {
						outf(c, "%s %s: %s\n", msg.Time.UTC().Format("15:04:05.000"), msg.Sender, msg.Text)
					}
					return nil
				},
			},
		},
	})
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
