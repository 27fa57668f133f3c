package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"

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
("unknown agent", with the nearest names; not under --hook-json, below) and
prints nothing on stdout. With neither, --hook-json takes the session's agent
from a payload on stdin, which may not be registered yet (its own parts are
then empty). With no identity at all (or --as user), prime is the person's:
what needs you, as 'tavern ui' lists it (gates waiting for a decision,
questions to the user, dead items, failed agents...), the next items nobody
holds, and the commands only a person runs (approve, reject, answer, item
retry), each with one example;
--json and --hook-json give the same ("for": "user" in the JSON, "agent" in
an agent's). A hook payload without a session id and no --as or
$TAVERN_AGENT gets the person's brief, which says so at its top. Outside a
Tavern project prime prints nothing and exits 0, so a global hook does no
harm.

Under --hook-json prime fails soft, as the hooks do: an --as or
$TAVERN_AGENT naming no agent, a usage error, a tavern.md Tavern does not
accept exit 0, the error on stderr and in the envelope ("Tavern could not
brief this session: ...", also as its systemMessage), no brief.

.tavern/PRIME.md, the project's word to whoever works in it, replaces the
command list of both briefs: a line {{commands}} in it puts the reader's
default list there (an agent's, or the person's), and {{agent}} is replaced
by the agent's name, or by "user" in the person's brief (the name --as takes
for the person).

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
	err := prime(c)
	if err != nil && c.Bool("hook-json") {
		return primeFailSoft(c, err)
	}
	return err
}

func prime(c *cli.Context) error {
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
	why := ""
	if agent == "" && c.Bool("hook-json") {
		var payload bool
		agent, payload = hookPayloadAgent(c.App.Reader)
		session = agent != ""
		if payload && !session {
			// A hook, in some agent's session perhaps: its reader must
			// not take the person's brief for that agent's.
			why = kit.NoSessionNote
		}
	}
	if c.IsSet("as") && c.String("as") == "" {
		// --as '' names nobody: a bad name, not "the person".
		return usageErr("--as \"\": empty; name the agent, or leave --as out for the person's prime")
	}
	if agent == "" || agent == agents.Person {
		// The person at a shell, who is no agent: what waits on them.
		return primePerson(c, s, why)
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

// primeFailSoft answers a --hook-json prime that failed (an --as or
// $TAVERN_AGENT naming no agent, a broken tavern.md, a usage error in a
// hand-written hook) as the hooks do: exit 0, the error on stderr, and
// the envelope telling the model and the user, since the tools read a
// hook's exit 2 as "block" and show its stderr to nobody.
func primeFailSoft(c *cli.Context, err error) error {
	msg := err.Error() + hint(err)
	errf(c, "tavern prime: %s (ignored: the tool goes on)\n", msg)
	return printJSON(c, kit.HookJSONFailed(msg))
}

// primeFailsSoft makes prime's command-line errors under --hook-json (an
// unknown flag, an argument too many: a newer Tavern's hook in a shared
// settings file) fail soft as its other errors do.
func primeFailsSoft(cmd *cli.Command) {
	usage := cmd.OnUsageError
	cmd.OnUsageError = func(c *cli.Context, err error, sub bool) error {
		err = usage(c, err, sub)
		// Nothing of prime's command line is parsed yet: it is in the
		// parent's arguments.
		if l := c.Lineage(); len(l) > 1 {
			hook := func(a string) bool {
				name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
				return strings.HasPrefix(a, "-") && name == "hook-json"
			}
			if slices.ContainsFunc(l[1].Args().Slice(), hook) {
				return primeFailSoft(c, err)
			}
		}
		return err
	}
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		err := before(c)
		if err != nil && c.Bool("hook-json") {
			return primeFailSoft(c, err)
		}
		return err
	}
}

// primePerson prints the person's prime: the Needs-you lens of the views
// (gates, questions to the user, dead items, failed agents...), the items
// nobody holds and the person's commands.
func primePerson(c *cli.Context, s *docstore.Store, why string) error {
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
	p := kit.BuildPersonPrime(s, agents.ResolvePerson(c.String("as")), needs, kit.PersonPrimeOptions{Now: snap.Time.Time, Why: why})
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
// returns the agent of its session, or "", and whether there was a
// payload at all (stdin not empty).
func hookPayloadAgent(r io.Reader) (string, bool) {
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return "", false
		}
	}
	data, err := io.ReadAll(io.LimitReader(r, kit.MaxPayload+1))
	if err != nil || len(bytes.TrimSpace(data)) == 0 || len(data) > kit.MaxPayload {
		return "", false
	}
	in, err := kit.ParseInput("", kit.SessionStart, data)
	if err != nil {
		return "", true
	}
	return kit.HookAgent(in, kit.HookOptions{}), true
}
