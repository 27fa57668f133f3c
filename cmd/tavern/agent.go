package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/agents/view"
)

func newAgentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "create agents, list them, move them through their states",
		Description: `Agents are .tavern/agents/<name>.md. Their state follows a fixed machine:

   idle -> working | failed
   working -> waiting | verifying | done | idle | failed
   waiting -> working | idle | failed
   verifying -> done | working | failed
   done -> idle | failed
   failed -> idle

An illegal transition is refused (exit 4), whatever writes it: agent state,
set, edit. A state edited by hand is checked against the state the engine
last applied (applied_state): a legal edit is accepted and journaled, an
illegal one is reported by 'agent audit' and 'tavern check' (exit 5) and not
acted on until restored or forced.

Examples:
   tavern agent new alice --role builder --queue build
   tavern agent state alice working
   tavern agent ls --json`,
		Subcommands: []*cli.Command{
			newAgentNewCommand(),
			newAgentLsCommand(),
			newAgentShowCommand(),
			newAgentStateCommand(),
			newAgentAuditCommand(),
			newAgentReapCommand(),
			newAgentNoteCommand(),
			newAgentLogCommand(),
		},
	}
}

func newAgentNewCommand() *cli.Command {
	return &cli.Command{
		Name:      "new",
		Usage:     "create an agent (a themed name if NAME is omitted)",
		ArgsUsage: "[NAME]",
		Description: `Create an agent (a themed name if NAME is omitted). --parent and every
--queue must name an existing agent and queue: an unknown one exits 3 and
creates nothing.

A --role needs no constitution, but one that has none and that no agent has
is a new role, under constitution set's rule: a name near a role that has a
constitution is refused as a likely typo (exit 2, did you mean), and the name
is lower-case letters, digits, '-', '_' and '.' (exit 2). Nothing is written
then. Make a near role on purpose with constitution set --new first. The same
holds for spawn --role, pool run --role and new agent role=R.

Examples:
   tavern agent new alice --role builder --parent lead --queue build
   tavern agent new --role reviewer   # a themed name`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "role", Usage: "role `R` (records the sha256 of constitutions/R.md)"},
			&cli.StringFlag{Name: "parent", Usage: "parent agent `P`"},
			&cli.StringFlag{Name: "model", Usage: "model `M`"},
			&cli.StringSliceFlag{Name: "queue", Usage: "queue `Q` (repeatable)"},
			&cli.StringFlag{Name: "assignment", Usage: "the Assignment section `TEXT`"},
			jsonFlag(),
		},
		Action: runAgentNew,
	}
}

func runAgentNew(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("agent new takes at most one NAME")
	}
	// An unset variable ("$NAME") must not make an agent of a themed name.
	if c.NArg() == 1 && c.Args().First() == "" {
		return usageErr(`agent new "": empty NAME; give a name, or leave NAME out for a themed one`)
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
}

func newAgentLsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list agents with their state",
		Description: `List agents with their state.

Examples:
   tavern agent ls
   tavern agent ls --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: withManager(runAgentLs),
	}
}

func runAgentLs(c *cli.Context, m *agents.Manager) error {
	list, errs := m.ListAgents()
	for _, e := range errs {
		errf(c, "tavern: %v\n", e)
	}
	if c.Bool("json") {
		return printJSON(c, orEmpty(list))
	}
	tw := newTable(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tROLE\tPARENT\tSPAWNS\tPID")
	for _, a := range list {
		st := a.State
		if a.IllegalEdit() {
			st += " (invalid: applied " + a.AppliedState + ")"
		} else if a.Attention() != "" {
			st += " (needs attention)"
		}
		pid := ""
		if a.PID != 0 {
			pid = fmt.Sprint(a.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", a.Name, st, dash(a.Role), dash(a.Parent), a.Spawns, pid)
	}
	return tw.Flush()
}

func newAgentShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print an agent with its commitments and open questions",
		ArgsUsage: "NAME",
		Description: `Print an agent with its commitments and open questions.

Examples:
   tavern agent show alice
   tavern agent show alice --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: runAgentShow,
	}
}

func runAgentShow(c *cli.Context) error {
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
		return printJSON(c, map[string]any{"agent": docJSON(m.Store, d, true), "commitments": orEmpty(cs), "questions": orEmpty(mine)})
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
			outf(c, "%s %s -> %s: %s\n", q.ID, q.From, q.To, view.Visible(q.Text))
		}
	}
	return nil
}

func newAgentStateCommand() *cli.Command {
	return &cli.Command{
		Name:      "state",
		Usage:     "move an agent to STATE (legal transitions only)",
		ArgsUsage: "NAME STATE",
		Description: `Move an agent to STATE (legal transitions only).

Examples:
   tavern agent state alice working
   tavern agent state alice verifying --reason "parser done"`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "apply any state (journaled as forced)"},
			&cli.StringFlag{Name: "reason", Usage: "journaled `TEXT`"},
			asFlag(), jsonFlag(),
		},
		Action: runAgentState,
	}
}

func runAgentState(c *cli.Context) error {
	if c.NArg() != 2 {
		return usageErr("agent state takes NAME STATE")
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
	a, err := m.Transition(c.Args().Get(0), c.Args().Get(1), agents.TransitionOptions{By: by.Name, Reason: c.String("reason"), Force: c.Bool("force")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, a)
	}
	outf(c, "%s %s\n", a.Name, a.State)
	return nil
}

func newAgentAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "report illegal hand edits of agent states and tampered commitments; accept legal hand edits",
		Description: `Reports agents whose state was edited by hand to one that cannot follow the
state last applied, and commitments whose assertion changed since they were
made (their recorded sha256 no longer matches: they are never run), and
agent files that do not parse or validate (one line each, path:line:col;
"invalid": true with --json; the others are audited all the same); exit 5
if there is any. Legal hand edits of a state are accepted and journaled.

Examples:
   tavern agent audit
   tavern agent audit --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: withManager(runAgentAudit),
	}
}

func runAgentAudit(c *cli.Context, m *agents.Manager) error {
	probs, invalid, err := m.Audit()
	tampered, terr := m.Tampered()
	if c.Bool("json") {
		out := []map[string]any{}
		for _, p := range probs {
			out = append(out, map[string]any{"path": p.Path, "agent": p.Agent, "state": p.To, "applied_state": p.From, "error": p.Error() + hint(p)})
		}
		for _, t := range tampered {
			out = append(out, map[string]any{"path": t.Path, "tampered": true, "recorded_sha256": t.Recorded, "sha256": t.Current, "error": t.Error()})
		}
		for _, e := range errorsJSON(invalid) {
			e["invalid"] = true
			out = append(out, e)
		}
		if perr := printJSON(c, out); perr != nil {
			return perr
		}
	} else {
		for _, p := range probs {
			errf(c, "%v%s\n", p, hint(p))
		}
		for _, t := range tampered {
			errf(c, "%v\n", t)
		}
		for _, e := range invalid {
			errf(c, "%v\n", e)
		}
		if len(probs)+len(tampered)+len(invalid) == 0 && err == nil && terr == nil {
			errf(c, "tavern: audit: no problems (every agent's state and constitution check out)\n")
		}
	}
	if err := errors.Join(err, terr); err != nil {
		return err
	}
	if len(probs)+len(tampered)+len(invalid) > 0 {
		return withCode(exitInvalid, errSilent)
	}
	return nil
}

func newAgentReapCommand() *cli.Command {
	return &cli.Command{
		Name:  "reap",
		Usage: "mark failed the agents whose spawn wrapper died",
		Description: `Mark failed the agents whose spawn wrapper died.

An agent file that does not parse or validate is skipped and reported on
stderr as a warning with its path:line:col ("invalid" with --json); the
others are reaped all the same and the exit code stays 0 (` + "`tavern check`" + `
exits 5 for it).

Examples:
   tavern agent reap
   tavern agent reap --json`,
		Flags:  []cli.Flag{jsonFlag()},
		Action: withManager(runAgentReap),
	}
}

func runAgentReap(c *cli.Context, m *agents.Manager) error {
	names, invalid, err := m.ReapAgents()
	if c.Bool("json") {
		if perr := printJSON(c, map[string]any{"reaped": orEmpty(names), "invalid": errorsJSON(invalid)}); perr != nil {
			return perr
		}
	} else {
		for _, n := range names {
			outf(c, "%s failed (wrapper died)\n", n)
		}
		if len(names) == 0 && err == nil {
			// On stderr: a script reading stdout still sees nothing.
			errf(c, "tavern: no agent to reap (every spawned agent's wrapper is alive)\n")
		}
		// With --json they are in the answer's "invalid", as reap's.
		warnDiag(c, invalid, nil)
	}
	return err
}

func newAgentNoteCommand() *cli.Command {
	return &cli.Command{
		Name:      "note",
		Usage:     "append a paragraph to an agent's Notes",
		ArgsUsage: "NAME TEXT",
		Description: `Append a paragraph to an agent's Notes.

Examples:
   tavern agent note alice "blocked on the lexer"`,
		Action: runAgentNote,
	}
}

func runAgentNote(c *cli.Context) error {
	if c.NArg() != 2 {
		return usageErr("agent note takes NAME TEXT")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	a, err := m.AddNote(c.Args().Get(0), c.Args().Get(1))
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, a)
	}
	outf(c, "%s\n", a.Path)
	return nil
}

func newAgentLogCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "print the output the spawn wrapper captured for an agent",
		ArgsUsage: "NAME",
		Description: `Print the output the spawn wrapper captured for an agent.

Examples:
   tavern agent log alice
   tavern agent log alice --tail 20 --json`,
		Flags:  []cli.Flag{&cli.IntFlag{Name: "tail", Usage: "only the last `N` lines", Action: atLeastOne("tail", "the last 0 lines are nothing (omit --tail for every line)")}, jsonFlag()},
		Action: runAgentLog,
	}
}

func runAgentLog(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("agent log takes one NAME")
	}
	m, err := openManager(c)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := agents.AgentExists(m.Store, c.Args().First()); err != nil {
		return err
	}
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
		outf(c, "%s %s: %s\n", msg.Time.UTC().Format("15:04:05.000"), msg.Sender, view.Visible(msg.Text))
	}
	if len(msgs) == 0 {
		errf(c, "tavern: %s has no log yet (nothing captured)\n", c.Args().First())
	}
	return nil
}
