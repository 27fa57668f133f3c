package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// A hooked session. The tools run a hook as a short process per event, so
// no hook can hold the agent's liveness lock for the session. Session
// start therefore takes the lock and hands it to a keeper: a small
// detached process (`tavern hook keep`) that inherits the lock's
// descriptor, holds it while the tool process lives, and exits when the
// session ends. While it holds the lock, items the session
// takes are liveness claims (they return to pending the moment the keeper
// dies), the agent counts as alive to the reapers, and `tavern wake` in
// the session does not count a second spawn.
//
// A session owns its agent when it started the keeper: the agent document
// then records session_id, host and the tool's pid. Session start finds
// the lock held by someone else — the spawn wrapper of `tavern spawn --
// claude -p …`, or another session acting as the same $TAVERN_AGENT — and
// then only primes: the holder owns the agent's state, and session end
// leaves it alone.

// KeeperPoll is how often the keeper looks at the tool process and the
// agent document. A process exit is not a filesystem event, so it has to
// be looked at; four looks a second cost nothing measurable.
const KeeperPoll = 250 * time.Millisecond

// SessionOptions are what a session-start needs from its caller.
type SessionOptions struct {
	// ToolPID is the tool's process (the hook's nearest ancestor that is
	// not a shell; $TAVERN_SESSION_PID overrides). 0: unknown, the keeper
	// then lives until session end.
	ToolPID int
	// StartKeeper takes the agent's liveness lock for the session (taken
	// false: someone else holds it) and returns launch: launch(true)
	// starts the keeper, which holds the lock from then on, and
	// launch(false) lets the lock go. StartSession records the session
	// in the agent document between the two, so the keeper never looks
	// before the session is there. The cmd hands the lock to `tavern hook
	// keep`; nil runs none (the session then never owns its agent).
	StartKeeper func(agent, session string, toolPID int) (launch func(start bool) error, taken bool, err error)
	// Role for a new agent ($TAVERN_ROLE).
	Role string
	// Named is set when the agent was named (--as, $TAVERN_AGENT) rather
	// than derived from the session id: a named agent that does not exist
	// and whose name is near an existing agent's is taken for a typo and
	// not created.
	Named bool
}

// StartSession registers the session of in as agent, owning it when the
// agent's lock is free, and returns the prime to add as context. A
// resumed or compacted session that already owns the agent is re-primed
// without counting anything.
//
// An agent that does not exist is created: that is how a session
// registers a new agent. But a named one (opt.Named) whose name is near
// an existing agent's ("alcie" next to "alice") is a likely typo, and a
// typo never creates state: nothing is written, and the session gets the
// *schema.UnknownError (with the near names) and a response saying the
// same to the model (Context) and the user (Message), and how to make
// the agent on purpose. Names derived from the session id are never
// judged: two sessions' ids may well be a letter apart.
func StartSession(e *Env, in *Input, agent string, opt SessionOptions) (*Response, error) {
	m := e.Manager
	if _, err := m.GetAgent(agent); errors.Is(err, docstore.ErrNotExist) {
		var ue *schema.UnknownError
		if opt.Named && errors.As(err, &ue) && len(ue.Near) > 0 {
			return nearAgentResponse(ue), ue
		}
		if _, err := m.CreateAgent(agents.AgentSpec{Name: agent, Role: opt.Role}); err != nil && !errors.Is(err, docstore.ErrExist) {
			if errors.Is(err, schema.ErrBadAgentName) { // "user", the person
				return invalidAgentResponse(agent, err), err
			}
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	a, err := m.GetAgent(agent)
	if err != nil {
		return nil, err
	}
	held, err := agents.LockHeld(e.Store, schema.AgentLockKey(agent))
	if err != nil {
		return nil, err
	}
	mode := "identity"
	switch {
	case held && a.SessionID == in.SessionID && in.SessionID != "":
		mode = "resumed" // ours already (resume, clear, compact)
	case !held && opt.StartKeeper != nil && in.SessionID != "":
		launch, ok, err := opt.StartKeeper(agent, in.SessionID, opt.ToolPID)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := ownAgent(e, a, in, opt.ToolPID); err != nil {
				return nil, errors.Join(err, launch(false))
			}
			if err := launch(true); err != nil {
				return nil, err // recorded, but nothing holds the lock: the reapers see a dead session
			}
			mode = "owned"
		}
	}
	_, _ = m.Journal.Append(journal.Event{Type: "session.started", Kind: "agent", Path: agents.AgentPath(agent), Agent: agent,
		Data: map[string]any{"tool": string(in.Tool), "session": in.SessionID, "source": in.Source, "mode": mode}})
	p, err := BuildPrime(e.Store, agent, PrimeOptions{Now: e.now()})
	if err != nil {
		return nil, err
	}
	r := &Response{Context: p.Text(), Env: map[string]string{"TAVERN_AGENT": agent}}
	// Another live session owns the agent (its keeper holds the lock):
	// this one acts under the same name, and the items and reservations
	// its prime lists are that session's. Both must know, or they work
	// one claim twice. A spawn wrapper holding the lock sets no session.
	if mode == "identity" && held && a.SessionID != "" && a.SessionID != in.SessionID {
		head := fmt.Sprintf("Tavern: %s is already in another session (%s, pid %d on %s), which owns its items and reservations; this session acts under the same name.",
			agent, a.SessionID, a.PID, a.Host)
		r.Context = head + " Do not work on the items listed below unless the user says so: ask the user whether this session should be another agent (start it with TAVERN_AGENT set to another name, or unset).\n\n" + r.Context
		r.Message = head + " Two sessions as one agent are not told apart: start this one with another TAVERN_AGENT (or unset) unless that is meant."
	}
	return r, nil
}

// nearAgentResponse is session-start's answer for a named agent that
// does not exist and is near one that does (StartSession).
func nearAgentResponse(ue *schema.UnknownError) *Response {
	head := fmt.Sprintf("Tavern: there is no agent %q (did you mean %s?), and this session was not registered under it: a name this near an existing agent's is taken for a typo.", ue.Name, schema.NearList(ue.Near))
	ctx := head + fmt.Sprintf("\nUntil that is settled, do not use --as %s in tavern commands, and ask the user which agent this session is. "+
		"To act as an existing agent, start the session with TAVERN_AGENT set to its name; "+
		"if %q is meant as a new agent, create it with `tavern agent new %s` and start the session again.", ue.Name, ue.Name, ue.Name)
	msg := head + fmt.Sprintf(" If it is a new agent: `tavern agent new %s`, then start the session again.", ue.Name)
	return &Response{Context: ctx, Message: msg}
}

// invalidAgentResponse is session-start's answer for a name given by
// --as or $TAVERN_AGENT that no agent can have: nothing is registered,
// and the model and the user are told, as for a typo (nearAgentResponse)
// — the hook's stderr alone reaches neither.
func invalidAgentResponse(agent string, err error) *Response {
	head := fmt.Sprintf("Tavern: %q is not a valid agent name (%s), and this session was not registered under it.", agent, nameReason(err))
	ctx := head + " Until that is settled, do not use it in tavern commands, and ask the user which agent this session is. " +
		"Start the session again with TAVERN_AGENT set to an agent's name (`tavern agent ls` lists them), or unset to be named after the session."
	msg := head + " Set TAVERN_AGENT to an agent's name (or unset it) and start the session again."
	return &Response{Context: ctx, Message: msg}
}

// ownAgent moves the agent into the session: working, spawns+1 (one
// session is one spawn), host, the tool's pid and session_id.
func ownAgent(e *Env, a *agents.Agent, in *Input, toolPID int) error {
	m := e.Manager
	edit := func(d *docstore.Doc) error {
		n, _ := d.Int("spawns")
		fs := []docstore.Field{{Key: "spawns", Value: n + 1}, {Key: "host", Value: m.Host}, {Key: "session_id", Value: in.SessionID}}
		if toolPID > 0 {
			fs = append(fs, docstore.Field{Key: "pid", Value: toolPID})
		}
		return d.SetMany(fs)
	}
	reason := fmt.Sprintf("%s session %s", in.Tool, in.SessionID)
	switch a.Effective() {
	case agents.Working, agents.Waiting, agents.Verifying:
		// A session that died without its end hook (nobody held the lock):
		// this one takes over as it stands.
		_, err := m.EditAgent(a.Name, edit)
		return err
	case agents.Done, agents.Failed:
		if _, err := m.Transition(a.Name, agents.Idle, agents.TransitionOptions{By: "session", Reason: reason}); err != nil {
			return err
		}
	}
	_, err := m.Transition(a.Name, agents.Working, agents.TransitionOptions{By: "session", Reason: reason, Edit: edit})
	return err
}

// EndSession ends a session that owns its agent: the items it holds go
// back to pending, its reservations are dropped, a sleep summary is
// written (a core memory, as `tavern sleep` writes), and the agent goes to
// idle with host, pid and session_id cleared — which tells the keeper to
// let the lock go. A session that does not own the agent changes nothing.
func EndSession(e *Env, agent, sessionID, reason string) error {
	m := e.Manager
	a, err := m.GetAgent(agent)
	if errors.Is(err, docstore.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if sessionID == "" || a.SessionID != sessionID {
		return nil
	}
	var errs []error
	var released []string
	items, err := agents.ClaimedItems(e.Store, agent)
	errs = append(errs, err)
	if len(items) > 0 {
		b, err := e.Broker()
		errs = append(errs, err)
		if err == nil {
			for _, it := range items {
				if _, err := b.Release(it.ID, int(it.Attempt)); err != nil {
					errs = append(errs, err)
					continue
				}
				released = append(released, it.Queue+"/"+it.ID)
			}
		}
	}
	unreserved := 0
	if sp, err := e.Space(); err == nil {
		n, err := sp.Unreserve(agent, nil, tuples.UnreserveOptions{})
		unreserved = n
		errs = append(errs, err)
	} else {
		errs = append(errs, err)
	}
	cs, _ := m.Commitments(agent)
	passed := 0
	for _, c := range cs {
		if c.Status == agents.StatusPassed {
			passed++
		}
	}
	summary := fmt.Sprintf("Session %s ended (%s) at %s.", sessionID, orDash(reason), e.now().UTC().Format(time.RFC3339))
	if len(released) > 0 {
		summary += " Released unfinished: " + strings.Join(released, ", ") + "."
	}
	if unreserved > 0 {
		summary += fmt.Sprintf(" Reservations dropped: %d.", unreserved)
	}
	if len(cs) > 0 {
		summary += fmt.Sprintf(" Commitments: %d of %d passed.", passed, len(cs))
	}
	if _, err := agents.Sleep(e.Store, agent, summary, e.now()); err != nil {
		errs = append(errs, err)
	}
	clear := func(d *docstore.Doc) error {
		for _, f := range []string{"pid", "host", "session_id"} {
			if d.Has(f) {
				if err := d.Delete(f); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if st := a.Effective(); st == agents.Working || st == agents.Waiting {
		_, err = m.Transition(agent, agents.Idle, agents.TransitionOptions{By: "session", Reason: "session ended: " + orDash(reason), Edit: clear})
	} else {
		_, err = m.EditAgent(agent, clear)
	}
	errs = append(errs, err)
	_, err = m.Journal.Append(journal.Event{Type: "session.ended", Kind: "agent", Path: agents.AgentPath(agent), Agent: agent,
		Data: map[string]any{"session": sessionID, "reason": reason, "released": released, "unreserved": unreserved}})
	errs = append(errs, err)
	return joinErrs(errs)
}

func joinErrs(errs []error) error {
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// KeepSession watches a session for its keeper, which holds the agent's
// liveness lock (`tavern hook keep`, handed the lock by session-start):
// every KeeperPoll it checks that the tool process (toolPID; 0: not
// checked) lives and that the agent document still names session. When
// the tool died without a session end, it ends the session itself
// (reason "tool exited"); when the document moved on (session end ran,
// or a person cleared it), it just returns, and the caller lets the lock
// go.
func KeepSession(ctx context.Context, e *Env, agent, session string, toolPID int) error {
	t := time.NewTicker(KeeperPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		d, err := e.Store.Get(agents.AgentPath(agent))
		if err != nil || d.String("session_id") != session {
			return nil // ended, or the document is gone or broken: nothing to keep
		}
		if toolPID > 0 && !processAlive(toolPID) {
			return EndSession(e, agent, session, "tool exited")
		}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// shells are skipped when looking for the tool process above a hook: the
// tools run hook commands through a shell.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "fish": true, "ksh": true, "busybox": true, "tavern": true}

// ToolPID finds the process of the tool that ran this hook: the nearest
// ancestor that is not a shell (the tools run hook commands with sh -c).
// $TAVERN_SESSION_PID, when set, is taken as it is. 0 when unknown.
func ToolPID() int {
	if v := os.Getenv("TAVERN_SESSION_PID"); v != "" {
		n, _ := strconv.Atoi(v)
		return n
	}
	pid := os.Getppid()
	for range 8 {
		if pid <= 1 {
			return 0
		}
		comm, ppid, ok := procInfo(pid)
		if !ok {
			return 0
		}
		if !shells[comm] {
			return pid
		}
		pid = ppid
	}
	return 0
}

// procInfo reads a process's command name and parent from /proc.
func procInfo(pid int) (comm string, ppid int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	s := string(data)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open {
		return "", 0, false
	}
	comm = s[open+1 : close]
	f := strings.Fields(s[close+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return comm, ppid, err == nil
}

// WriteEnvFile appends export lines for env to path: Claude Code's
// $CLAUDE_ENV_FILE, which it sources before each Bash command of the
// session.
func WriteEnvFile(path string, env map[string]string) error {
	if path == "" || len(env) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	// A file whose last line has no newline (written by the tool, another
	// hook or a person) would glue our first export onto it.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			b.WriteByte('\n')
		}
	}
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	_, err = f.WriteString(b.String())
	return errors.Join(err, f.Close())
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
