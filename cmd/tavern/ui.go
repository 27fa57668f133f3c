package main

import (
	"maps"
	"os"
	"slices"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/agents/view/tui"
	"github.com/tavernhq/tavern/schema"
)

// lenses are the parts of the snapshot `tavern ui --json --lens` prints.
var lenses = map[string]func(*view.Snapshot) any{
	"needs":        func(s *view.Snapshot) any { return orEmpty(s.Needs) },
	"agents":       func(s *view.Snapshot) any { return orEmpty(s.Agents) },
	"queues":       func(s *view.Snapshot) any { return orEmpty(s.Queues) },
	"questions":    func(s *view.Snapshot) any { return orEmpty(s.Questions) },
	"commitments":  func(s *view.Snapshot) any { return orEmpty(s.Commitments) },
	"channels":     func(s *view.Snapshot) any { return orEmpty(s.Channels) },
	"reservations": func(s *view.Snapshot) any { return orEmpty(s.Reservations) },
	"tokens":       func(s *view.Snapshot) any { return orEmpty(s.Tokens) },
	"pools":        func(s *view.Snapshot) any { return orEmpty(s.Pools) },
	"invalid":      func(s *view.Snapshot) any { return orEmpty(s.Invalid) },
	"journal":      func(s *view.Snapshot) any { return orEmpty(s.Journal) },
}

func newUICommand() *cli.Command {
	return &cli.Command{
		Name:  "ui",
		Usage: "the live views in the terminal: needs you, agents, queues, messages, journal",
		Description: `A terminal UI over the store, updated live as it changes: Needs you (questions
waiting on a person, failing commitments, failed agents, dead holders, hung
claims, dead letters, blocked items, invalid documents: each with what to do),
Agents, Queues (a board by state), Messages, Journal, Resources (reservations,
tokens, pools). Keys: tab or 1-6 switch, j/k move, / filter, enter acts, a
answer, r retry, x release, R reap, s respawn, m message, e edit in $EDITOR
(nothing is saved until valid), ? help, q quit. Every action asks for a
confirmation and is journaled as view.action with the acting person (--as).

It needs a terminal and refuses to start without one (exit 2), so an agent
that runs it by mistake is never blocked: agents read the same data with
--json (the whole snapshot, or one part with --lens).

Examples:
   tavern ui
   tavern ui --json --lens needs`,
		Flags: []cli.Flag{
			jsonFlag(),
			&cli.StringFlag{Name: "lens", Usage: "with --json, only `PART`: needs, agents, queues, questions, commitments, channels, reservations, tokens, pools, invalid, journal", Action: choiceGiven("lens", "needs, agents, queues, questions, commitments, channels, reservations, tokens, pools, invalid or journal")},
			personFlag(), pollFlag(),
		},
		Action: runUI,
	}
}

func runUI(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("ui takes no arguments")
	}
	lens := c.String("lens")
	if lens != "" {
		if _, ok := lenses[lens]; !ok {
			return usageErr("unknown --lens %q (needs, agents, queues, questions, commitments, channels, reservations, tokens, pools, invalid, journal)%s", lens, schema.ChoiceHint(lens, slices.Sorted(maps.Keys(lenses))))
		}
		if !c.Bool("json") {
			return usageErr("--lens goes with --json")
		}
	}
	if c.Bool("json") {
		v, err := openView(c, false, "json")
		if err != nil {
			return err
		}
		defer v.Close()
		snap, err := v.Snapshot()
		if err != nil {
			return err
		}
		if lens != "" {
			return printJSON(c, lenses[lens](snap))
		}
		return printJSON(c, snap)
	}
	in, inOK := c.App.Reader.(*os.File)
	out, outOK := c.App.Writer.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return usageErr("ui needs a terminal (stdin and stdout are not both one); for the same data as JSON run: tavern ui --json")
	}
	longRunningStart()
	v, err := openView(c, true, "tui")
	if err != nil {
		return err
	}
	defer v.Close()
	defer serveQueries(c, v.Store(), v.Projection(), "tavern ui")()
	longRunningMemory(viewTrimAfter)
	return tui.Run(c.Context, v, tui.Options{}, in, out)
}
