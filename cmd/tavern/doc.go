// Command tavern is the command-line interface to a Tavern store: a
// .tavern/ directory of markdown documents that many agents coordinate
// through. Run `tavern --help` for the commands, `tavern CMD --help` for
// one with examples; README.md lists them all.
//
// # Basics
//
// Each command parses its flags, calls the library (docstore, watcher,
// queues, queues/tuples, agents/messages, agents/recall, agents), where
// the rules live, and prints text or, with --json, JSON. The commands are
// listed once, in app.go; each has its file (agent.go: newAgentCommand and
// its runAgent... functions). run(ctx, args, stdin, stdout, stderr) is
// the whole program but for exiting. The store is opened with the agent
// rules installed (agents.InstallRules), so set and edit obey them too. The store is
// found with --dir or $TAVERN_DIR, else by searching upward from the
// working directory; the acting agent (--as) defaults to $TAVERN_AGENT,
// which `tavern spawn` sets for its child, else the person "user"
// (agents.ResolveActor). The views (ui, serve, export) and gate decisions
// act as a person instead: --as/--by, else $TAVERN_USER, else the login
// name (agents.ResolvePerson).
//
// The contract every command keeps (tests walk the command definitions
// to hold each to it): --json before or after the name means the same
// (docs/json.md pins the shapes); a numeric or duration flag given as 0
// is honoured or refused with exit 2 (flags.go); extra arguments are a
// usage error (checkArity); a name that names nothing is exit 3 with the
// nearest names, never created.
//
// The agent tools' commands — prime, next, setup, hook, mcp — are thin
// too: package agents/kit holds their logic (prime's data, next-item
// selection, hook decisions, setup's merging, the MCP tools).
//
// Exit codes (exit.go maps errors to them, in one table; README.md says
// the rule): 0 ok, also a listing that found nothing; 1 error; 2 usage;
// 3 not found (a command that must find one thing), nothing to claim, a
// wait that ran out; 4 conflict (stale revision, lost claim, illegal
// transition, stale attempt); 5 invalid documents. With --json, errors go
// to stderr as one JSON object with the code.
//
// # Caveats
//
//   - Every command opens the store anew: there is no daemon. Long-running
//     commands (watch, pool run, verifier, spawn, ui, serve) hold their own
//     locks and watches for as long as they run.
//   - $TAVERN_CPUPROFILE writes a CPU profile of one run (a developer aid).
package main
