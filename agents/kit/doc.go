// Package kit is the agent integration kit: what an LLM coding tool (Claude
// Code, Codex CLI, Gemini CLI, Aider) needs to work in a Tavern project —
// a short prime, a "what next" answer, session hooks in each tool's own
// format, the installer that wires them in, and a small MCP server.
//
// # Prime and next
//
// BuildPrime gathers who an agent is, the items it holds (or, holding
// none, the next ones nobody holds), unread messages, open questions to
// it, its reservations, commitments and core memories, and the commands it
// will use with one example each. Prime.Text renders it in at most
// PrimeTokens (1,000) tokens, counted as characters / 4: lists are filled
// in turns and a cut list says how to see the rest. .tavern/PRIME.md
// replaces the command list ({{commands}} keeps it, {{agent}} is the
// name). Next lists claimable pending items in take order and never one
// someone holds; Take claims one as a liveness claim when the agent's lock
// is held (a hooked session, a spawn wrapper), else as a lease.
//
// # Hooks
//
// ParseInput reads a hook payload (the fields each tool documents; fixtures
// in testdata/hooks cite the sources), Handle runs the event's handler and
// Response.Render answers in the tool's format. Events, by Tavern's names
// (Gemini's own: BeforeAgent, BeforeTool, AfterTool, AfterAgent):
//
//	session-start       StartSession: register and prime (also resume, clear, compact)
//	pre-tool-use        CheckWrite: deny a write to a path another agent reserved
//	user-prompt-submit  Deliver: new messages, answers, questions, once each
//	post-tool-use       Deliver
//	stop                StopGate: block while an item is held (or was done in
//	                    this session) and commitments fail; not twice in a
//	                    row (stop_hook_active: let through, said, journaled)
//	session-end         EndSession: release items and reservations, sleep summary
//
// Identity: --as / $TAVERN_AGENT, else SessionAgent(tool, session id), a
// pure function of the session, so every hook of one session agrees
// without a lookup. A session owns its agent when session start took the
// agent's liveness lock and handed it to its keeper (`tavern hook keep`,
// KeepSession); see session.go for the model. Ownership is what makes the
// session's claims liveness claims and its end release them.
//
// Failure policy: a handler's error is Tavern's own trouble and never
// stops the tool (the cmd prints it on stderr and exits 0). The two gates
// decide against the tool only on a definite conflict: a live reservation
// of another agent covering a path the call will write; an assertion that
// ran and failed.
//
// # Setup
//
// Setup, Check and Remove install, verify and take out the hooks of one
// tool in the project: .claude/settings.json, .codex/hooks.json,
// .gemini/settings.json, and the marker block in AGENTS.md (CLAUDE.md and
// GEMINI.md import it; Aider gets it through .aider.conf.yml's read list).
// Settings files are edited as text (jsonedit.go): what setup adds is
// spliced in, indented like its surroundings, and every other byte —
// keys, order, formatting, Gemini's comments — stays. What setup adds is
// recognisable (commands starting with "tavern hook", the
// <!-- tavern:begin --> block, Aider's marker comment), so Remove takes
// out exactly that and gives a file back byte for byte. Check also warns
// about switches that keep a tool from running hooks (Gemini's
// hooksConfig, Codex's [features] hooks).
//
// # MCP
//
// NewMCPServer is the optional second door: at most eight tools over stdio
// (the official Go SDK), their schemas within MCPSchemaTokens tokens.
// StdioTransport carries it: unlike the SDK's, it answers every request
// read before the input ended (piped requests all get their answers).
//
// Caveats:
//   - WritePaths reads shell commands with a small tokenizer: it knows
//     redirections, tee, sed -i, cp/mv, cd and a few more, and skips words with
//     expansions — but for a branch a git checkout or switch names with
//     one ("$B"), which may be any, so the switch is taken as a write of
//     the whole work tree. A write it cannot see is not denied (the git
//     guard still checks at commit time): among them, whatever the code
//     an interpreter runs writes (python -c, node -e, perl -e or ruby -e
//     without -i, a script file); perl -i and ruby -i write their file
//     operands, as sed -i does. A write it sees but whose files only running
//     it would tell (git merge, rebase, pull, stash pop; a patch from a
//     pipe) is taken as a write of everything it may write: the whole
//     work tree, which any reservation of another agent in it denies.
//   - The stop gate runs the agent's commitments' assertions in the hook;
//     a slow assertion makes a slow stop (tools allow long Stop hooks:
//     setup gives it ten minutes).
//   - Codex runs project hooks only once you trust them, and SessionEnd
//     only in releases that have the event; the keeper ends a session whose
//     tool exited without it.
package kit
