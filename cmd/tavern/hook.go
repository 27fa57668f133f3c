package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/kit"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

func newHookCommand() *cli.Command {
	return &cli.Command{
		Name:      "hook",
		Usage:     "run a session hook of Claude Code, Codex CLI or Gemini CLI (stdin: the tool's hook JSON)",
		ArgsUsage: "EVENT",
		Description: `Reads the tool's hook payload on stdin and answers on stdout in the tool's
documented format. 'tavern setup TOOL' installs these hooks; you rarely run
them by hand. EVENT (the tools' own names are accepted too):

   session-start        registers the session as an agent and primes it
                        (also after a resume, /clear or compaction)
   pre-tool-use         denies an edit (Edit, Write, MultiEdit, apply_patch,
                        write_file, replace, shell commands that clearly write
                        a path) of a path another agent reserved
   user-prompt-submit   adds new messages, answers and questions as context
   post-tool-use        the same, after each tool call
   stop                 blocks the stop while the agent holds an item, or
                        marked one done in this session, and its
                        commitments do not pass; not twice in a row (with
                        stop_hook_active it lets the stop through and
                        says which commitments fail)
   session-end          releases what the session held, writes the sleep
                        summary

The agent is --as, else $TAVERN_AGENT, else one named after the session:
TOOL-<first 8 letters and digits of the session id>. Its session exports
TAVERN_AGENT to the tool's shell commands (Claude Code: $CLAUDE_ENV_FILE;
Codex: the SessionStart env answer). Only session-start creates an agent
that does not exist, and not one named by --as or $TAVERN_AGENT near an
existing agent's name (a typo: the answer and stderr say "did you mean" and
how to create it with ` + "`tavern agent new NAME`" + `); the other hooks write
nothing for an unknown agent.

A hook never stops the tool because of Tavern's own trouble: errors go to
stderr and the exit status is 0, usage errors (an event or flag this
Tavern does not know) included, since the tools read exit 2 as block. An
unknown --tool is the exception: it exits 2 (naming the tools, "did you
mean"), so a misconfigured hook refuses edits instead of letting them all
through unchecked; only a stop already held once (stop_hook_active) goes
through. The reservation and stop gates decide
against the tool only on a definite conflict; a reservation file the gate
cannot read is named (path:line:col) in the answer's systemMessage and on
stderr, and the edit goes on. Outside a Tavern project every hook prints
nothing.

Examples:
   tavern hook session-start --tool claude < payload.json
   echo '{"session_id":"s1","tool_name":"Write","tool_input":{"file_path":"src/a.go"}}' | tavern hook pre-tool-use`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tool", Usage: "`TOOL` that runs the hook: claude, codex or gemini (default: from the payload)"},
			sessionAgentFlag(),
			// `tavern hook keep`: the session keeper session-start starts.
			&cli.StringFlag{Name: "agent", Hidden: true},
			&cli.StringFlag{Name: "session", Hidden: true},
			&cli.IntFlag{Name: "pid", Hidden: true},
		},
		Action: runHook,
	}
}

// hookFailsOpen makes the hook's usage errors — an unknown flag, too many
// arguments — fail open like its other errors: exit 2 is what Claude
// Code, Codex CLI and Gemini CLI read as "block" (a denied tool call, an
// erased prompt, a refused stop), and a command line this Tavern cannot
// read (a newer Tavern's hooks in a settings file shared through git, a
// typo in a hand-written hook) is Tavern's trouble, not the tool's.
// `hook keep`, which Tavern itself starts, keeps its usage errors.
func hookFailsOpen(cmd *cli.Command) {
	isKeep := func(c *cli.Context) bool { return c.Args().First() == "keep" }
	cmd.OnUsageError = func(c *cli.Context, err error, sub bool) error {
		return failOpen(c, "", onUsageError(c, err, sub)) // no arguments parsed yet
	}
	before := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		err := before(c)
		if err != nil && !isKeep(c) && errors.Is(err, errUsage) {
			return failOpen(c, kit.Event(c.Args().First()), err)
		}
		return err
	}
}

func runHook(c *cli.Context) error {
	if c.Args().First() == "keep" {
		return runHookKeep(c)
	}
	if c.NArg() != 1 {
		return failOpen(c, "", usageErr("hook takes EVENT (session-start, pre-tool-use, user-prompt-submit, post-tool-use, stop, session-end)"))
	}
	// An event this Tavern does not know fails open too (see
	// hookFailsOpen).
	ev, err := kit.ParseEvent(c.Args().First())
	if err != nil {
		return failOpen(c, kit.Event(c.Args().First()), err)
	}
	var tool kit.Tool
	if t := c.String("tool"); t != "" {
		if tool, err = kit.ParseHookTool(t); err != nil {
			return unknownHookTool(c, ev, err)
		}
	}
	in, err := kit.ReadInput(tool, ev, c.App.Reader)
	if err != nil {
		return failOpen(c, ev, err)
	}
	s, err := hookStore(c, in.Cwd)
	if errors.Is(err, docstore.ErrNoStore) {
		return nil // not a Tavern project: nothing to say
	}
	if err != nil {
		return failOpen(c, ev, err)
	}
	recordJournal(c, s)
	e, err := kit.OpenEnv(s)
	if err != nil {
		return failOpen(c, ev, err)
	}
	defer e.Close()
	opt := kit.HookOptions{Agent: asOrEnv(c), Session: kit.SessionOptions{
		ToolPID:     kit.ToolPID(),
		StartKeeper: startKeeper(s),
		Role:        os.Getenv("TAVERN_ROLE"),
	}}
	resp, herr := kit.Handle(c.Context, e, in, opt)
	if resp != nil && ev == kit.SessionStart && in.Tool == kit.Claude {
		if err := kit.WriteEnvFile(os.Getenv("CLAUDE_ENV_FILE"), resp.Env); err != nil {
			herr = errors.Join(herr, err)
		}
	}
	out, err := resp.Render(in.Tool, ev)
	if err != nil {
		return failOpen(c, ev, errors.Join(herr, err))
	}
	if len(out) > 0 {
		if _, err := c.App.Writer.Write(out); err != nil {
			return err
		}
	}
	if herr != nil {
		return failOpen(c, ev, herr)
	}
	return nil
}

// unknownHookTool refuses a hook run for a tool Tavern does not know
// (--tool cursor): a usage error, exit 2. Failing open would let every
// edit through unchecked without a word anyone reads; exit 2 is the
// tools' "block", so the edit is refused and the error shown. The one
// exception is a stop the tool is already going on from
// (stop_hook_active): blocking it again could keep the session from ever
// stopping, as the stop gate knows (kit.Handle).
func unknownHookTool(c *cli.Context, ev kit.Event, err error) error {
	if ev == kit.Stop {
		if in, rerr := kit.ReadInput("", ev, c.App.Reader); rerr == nil && in.StopHookActive {
			return failOpen(c, ev, err)
		}
	}
	return err
}

// failOpen reports Tavern's own error on stderr, with the advice other
// commands give for it, and lets the tool go on: exit 0, no decision.
func failOpen(c *cli.Context, ev kit.Event, err error) error {
	msg := err.Error() + hint(err)
	var ue *schema.UnknownError
	if ev == kit.SessionStart && errors.As(err, &ue) && ue.What == "agent" && len(ue.Near) > 0 {
		// kit.StartSession took the name for a typo of a near one.
		msg += fmt.Sprintf("; not created (if it is a new agent: `tavern agent new %s`)", ue.Name)
	}
	if ev == "" {
		errf(c, "tavern hook: %s (ignored: the tool goes on)\n", msg)
		return nil
	}
	errf(c, "tavern hook %s: %s (ignored: the tool goes on)\n", ev, msg)
	return nil
}

// hookStore finds the store: --dir / TAVERN_DIR, else upward from the
// payload's cwd, else from the working directory. A store whose tavern.md
// Tavern does not accept is opened too: kit.Handle decides what a hook
// still does on it (the reservation gate) and what it says.
func hookStore(c *cli.Context, cwd string) (*docstore.Store, error) {
	if dirOption(c) == "" && cwd != "" {
		if dir, err := docstore.Find(cwd); err == nil {
			return docstore.OpenAnyConfig(dir)
		}
	}
	dir, err := storeDir(c)
	if err != nil {
		return nil, err
	}
	return docstore.OpenAnyConfig(dir)
}

// startKeeper takes the agent's liveness lock here (an inheritable one);
// launch(true) then starts `tavern hook keep` detached (its own session,
// stdio on /dev/null so the tool does not wait for it) with the lock's
// descriptor as fd 3, and hands the lock off: the keeper holds it from
// the moment it exists, and the hook does not wait for it to start (a
// whole process start of the session-start hook's time).
func startKeeper(s *docstore.Store) func(agent, session string, pid int) (func(bool) error, bool, error) {
	return func(agent, session string, pid int) (func(bool) error, bool, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, false, err
		}
		l, ok, err := s.TryLockInheritable(schema.AgentLockKey(agent))
		if err != nil || !ok {
			return nil, false, err
		}
		launch := func(start bool) error {
			if !start {
				return l.Unlock()
			}
			cmd := exec.Command(exe, "hook", "keep", "--dir", s.Root(), "--agent", agent, "--session", session, "--pid", strconv.Itoa(pid))
			cmd.Dir = filepath.Dir(s.Root())
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, "TAVERN_CPUPROFILE=") { // the hook's profile, not the keeper's
					cmd.Env = append(cmd.Env, e)
				}
			}
			cmd.ExtraFiles = []*os.File{l.File()}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				l.Unlock()
				return fmt.Errorf("session keeper did not start: %w", err)
			}
			_ = cmd.Process.Release()
			return l.HandOff() // the keeper's descriptor holds it now
		}
		return launch, true, nil
	}
}

// runHookKeep is the keeper process: it holds the agent's lock through
// fd 3 (the descriptor session-start locked and handed down) for as long
// as the session lives. Its own errors go to the journal, since nobody
// reads its stderr.
func runHookKeep(c *cli.Context) error {
	fd3 := os.NewFile(3, "agent-lock")
	if c.String("agent") == "" || c.String("session") == "" {
		fd3.Close()
		return usageErr("hook keep takes --agent AGENT --session ID [--pid PID]")
	}
	s, err := openStore(c)
	if err != nil {
		fd3.Close()
		return err
	}
	lock, err := s.AdoptLock(schema.AgentLockKey(c.String("agent")), fd3)
	if err != nil {
		return fmt.Errorf("hook keep is started by session-start, with the agent's lock as fd 3: %w", err)
	}
	defer lock.Unlock()
	e, err := kit.OpenEnv(s)
	if err != nil {
		return err
	}
	defer e.Close()
	// c.Context ends on SIGTERM or SIGINT (`kill PID`): the keeper then
	// lets the lock go as when the session ends. A Ctrl-C in the tool's
	// terminal does not reach it: it runs in its own session.
	err = kit.KeepSession(c.Context, e, c.String("agent"), c.String("session"), c.Int("pid"))
	if err != nil {
		_, _ = e.Manager.Journal.Append(journal.Event{Type: kit.EventKeeperError, Kind: "agent", Agent: c.String("agent"),
			Data: map[string]any{"session": c.String("session"), "error": err.Error()}})
	}
	return err
}
