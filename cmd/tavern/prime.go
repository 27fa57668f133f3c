package main

import (
	"errors"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/docstore"
)

func newPrimeCommand() *cli.Command {
	return &cli.Command{
		Name:  "prime",
		Usage: "print what an agent (or you) needs to start working (at most 1,000 tokens)",
		Description: `Prints who the agent is, the items it holds (for one held as a lease, when
the lease ends and how to renew it) or the next ones nobody holds,
its unread messages, open questions addressed to it, its reservations and
commitments, its core memories, and the commands it will use, each with one
example: at most 1,000 tokens (characters/4), lists cut with a pointer to the
rest. --json gives the same data, lists uncut.

--hook-json wraps the text in the SessionStart envelope Claude Code, Codex CLI
and Gemini CLI share: {"hookSpecificOutput":{"hookEventName":"SessionStart",
"additionalContext":"..."}}. Given a hook payload on stdin, it takes the agent
from the session as 'tavern hook session-start' does (which also registers the
session; prefer it, see 'tavern setup').

The agent is --as, else $TAVERN_AGENT; one that names no agent exits 3
("unknown agent", with the nearest names) and prints nothing on stdout. With
neither, --hook-json takes the session's agent from a payload on stdin, which
may not be registered yet (its own parts are then empty). With no identity at
all (or --as user), prime is the person's: what needs you, as 'tavern ui'
lists it (gates waiting for a decision, questions to the user, dead items,
failed agents...), the next items nobody holds, and the commands only a
person runs (approve, reject, answer, queue retry), each with one example;
--json and --hook-json give the same. Outside a Tavern project prime prints
nothing and exits 0, so a global hook does no harm. .tavern/PRIME.md replaces
the command list; a line {{commands}} in it puts the default list there, and
{{agent}} is replaced by the agent's name.

Examples:
   tavern prime --as alice
   tavern prime
   tavern prime --hook-json < hook-payload.json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Usage: "act as `AGENT` (default: $TAVERN_AGENT, else the person's prime)"},
			&cli.BoolFlag{Name: "hook-json", Usage: "print the SessionStart hook envelope"},
			&cli.BoolFlag{Name: "memories-only", Usage: "only identity, core memories and commands (after a compaction)"},
			jsonFlag(),
		},
		Action: runPrime,
	}
}

func runPrime(c *cli.Context) error {
	s, err := openStore(c)
	if errors.Is(err, docstore.ErrNoStore) {
		return nil // hooks run everywhere: outside a project, say nothing
	}
	if err != nil {
		return err
	}
	if c.Bool("json") && c.Bool("hook-json") {
		return usageErr("give --json or --hook-json, not both")
	}
	agent := asOrEnv(c)
	session := false
	if agent == "" && c.Bool("hook-json") {
		agent = hookPayloadAgent(c.App.Reader)
		session = agent != ""
	}
	if c.IsSet("as") && c.String("as") == "" {
		// --as '' names nobody: a bad name, not "the person".
		return usageErr("--as \"\": empty; name the agent, or leave --as out for the person's prime")
	}
	if agent == "" || agent == agents.Person {
		// The person at a shell, who is no agent: what waits on them.
		return primePerson(c, s)
	}
	// A named agent must exist (exit 3, nothing printed); the session's
	// own agent may be one `hook session-start` has yet to register.
	p, err := kit.BuildPrime(s, agent, kit.PrimeOptions{MemoriesOnly: c.Bool("memories-only"), Unregistered: session})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, p) // its errors are in the answer, not text on stderr
	}
	for _, e := range p.Errors {
		errf(c, "tavern: prime: %s\n", e)
	}
	switch {
	case c.Bool("hook-json"):
		return printJSON(c, kit.HookJSON(p.Text()))
	}
	outf(c, "%s", p.Text())
	return nil
}

// primePerson prints the person's prime: the Needs-you lens of the views
// (gates, questions to the user, dead items, failed agents...), the items
// nobody holds and the person's commands.
func primePerson(c *cli.Context, s *docstore.Store) error {
	v, err := openView(c, false, "prime")
	if err != nil {
		return err
	}
	snap, err := v.Snapshot()
	v.Close()
	if err != nil {
		return err
	}
	needs := make([]kit.PersonNeed, 0, len(snap.Needs))
	for _, n := range snap.Needs {
		needs = append(needs, kit.PersonNeed{Key: n.Key, Kind: n.Kind, What: n.What, Why: n.Why, Do: n.Do, Path: n.Path, Agent: n.Agent, Text: n.Text})
	}
	// Who decides: the name approve and answer record (--as user, else
	// $TAVERN_USER, else the login name).
	p := kit.BuildPersonPrime(s, agents.ResolvePerson(c.String("as")), needs, snap.Time.Time)
	if c.Bool("json") {
		return printJSON(c, p)
	}
	for _, e := range p.Errors {
		errf(c, "tavern: prime: %s\n", e)
	}
	if c.Bool("hook-json") {
		return printJSON(c, kit.HookJSON(p.Text()))
	}
	outf(c, "%s", p.Text())
	return nil
}

// hookPayloadAgent reads a hook payload from stdin (not a terminal) and
// returns the agent of its session, or "".
func hookPayloadAgent(r io.Reader) string {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return ""
		}
	}
	in, err := kit.ReadInput("", kit.SessionStart, r)
	if err != nil {
		return ""
	}
	return kit.HookAgent(in, kit.HookOptions{})
}
