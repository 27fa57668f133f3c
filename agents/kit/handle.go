package kit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/docstore"
	"github.com/tavernhq/tavern/queues"
	"github.com/tavernhq/tavern/queues/tuples"
	"github.com/tavernhq/tavern/schema"
	"github.com/tavernhq/tavern/watcher/journal"
)

// HookOptions are the parts of a hook call that do not come from stdin.
type HookOptions struct {
	// Agent is the identity given by --as or $TAVERN_AGENT; "" derives it
	// from the session (SessionAgent).
	Agent   string
	Session SessionOptions
}

// HookAgent is the agent a hook acts as: opt.Agent, else the session's
// own name. "" when the payload has no session id either.
func HookAgent(in *Input, opt HookOptions) string {
	if opt.Agent != "" {
		return opt.Agent
	}
	if in.SessionID == "" {
		return ""
	}
	return SessionAgent(in.Tool, in.SessionID)
}

// Handle runs the handler of in.Event and returns the response to render.
// An error is Tavern's own trouble (a broken document, a full disk): the
// caller reports it on stderr and lets the tool go on — every handler
// fails open, and the two gates (pre-tool-use, stop) decide against the
// tool only on a definite conflict. A response may come with an error
// (part of a delivery failed): both count.
//
// A panic in a handler (a parser bug on a command line nobody foresaw) is
// Tavern's trouble too: it is returned as an error wrapping
// ErrHandlerPanic, so the tool goes on. Left to crash, Go exits 2, which
// the tools read as "block".
func Handle(ctx context.Context, e *Env, in *Input, opt HookOptions) (resp *Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev := ""
			if in != nil {
				ev = string(in.Event)
			}
			resp, err = nil, &Error{Op: "hook", Path: ev, Err: fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, r, debug.Stack())}
		}
	}()
	return handle(ctx, e, in, opt)
}

func handle(ctx context.Context, e *Env, in *Input, opt HookOptions) (*Response, error) {
	agent := HookAgent(in, opt)
	// A tavern.md Tavern does not accept stops every command (exit 5), and
	// every hook but the gate: the gate reads only reservations, and one
	// typo in tavern.md must not let every agent edit every other agent's
	// reserved paths. Session-start tells the model and the user, since a
	// hook's stderr reaches neither.
	cfgErr := e.Store.ConfigErr()
	if cfgErr != nil && in.Event != PreToolUse {
		if in.Event == SessionStart {
			return badConfigResponse(e, cfgErr), cfgErr
		}
		return nil, cfgErr
	}
	if in.Event == PreToolUse {
		// The gate guards other agents' paths whoever asks, a name that
		// is nobody's, invalid or missing included (it holds nothing, so
		// every reservation counts); it writes nothing of the asker's.
		var nameErr error
		if agent != "" {
			nameErr = schema.ValidAgentName(agent)
		}
		r, err := CheckWrite(e, in, agent)
		return r, errors.Join(cfgErr, nameErr, err)
	}
	if agent == "" {
		return nil, nil // no session, no identity: nothing to act as
	}
	if err := schema.ValidAgentName(agent); err != nil {
		if in.Event == SessionStart {
			return invalidAgentResponse(agent, err), err
		}
		return nil, err
	}
	if in.Event == SessionStart {
		so := opt.Session
		so.Named = opt.Agent != ""
		return StartSession(e, in, agent, so)
	}
	// Only session-start registers an agent: the other hooks write
	// nothing for a name that names none (no bookmark, no delivered mark,
	// no session record), and say so.
	if err := agents.AgentExists(e.Store, agent); err != nil {
		return nil, err
	}
	switch in.Event {
	case UserPromptSubmit, PostToolUse:
		text, err := Deliver(e, agent)
		if text == "" {
			return nil, err
		}
		return &Response{Context: text}, err
	case Stop:
		f, err := stopCheck(ctx, e, agent)
		if f == nil {
			return nil, err
		}
		if in.StopHookActive {
			// The tool is already going on because a stop hook blocked
			// (Claude Code, Codex and Gemini all say so in
			// stop_hook_active): blocking again could keep the session
			// from ever stopping. The stop goes through; the user is
			// told, and the journal keeps it.
			_, _ = e.Manager.Journal.Append(journal.Event{Type: EventStopUnverified, Kind: "agent", Agent: agent,
				Data: map[string]any{"session": in.SessionID, "failing": f.names}})
			return &Response{Message: f.message(agent)}, err
		}
		return &Response{Block: f.reason(agent)}, err
	case SessionEnd:
		return nil, EndSession(e, agent, in.SessionID, in.Reason)
	}
	return nil, &Error{Op: "hook", Path: string(in.Event), Err: ErrUnknownEvent}
}

// CheckWrite is the reservation gate: it denies a tool call that is about
// to write a path another agent has reserved, naming the holder and the
// ways out, and lets every other call through without a word (no output
// keeps the tool's own permission flow). Paths outside the project are
// not Tavern's business.
//
// agent is the asker; a name that is not a valid agent name (or "") is
// nobody's, and every reservation is checked against it.
func CheckWrite(e *Env, in *Input, agent string) (*Response, error) {
	checkAs := agent
	if schema.ValidAgentName(agent) != nil {
		checkAs = ""
	}
	proj := filepath.Dir(e.Store.Root())
	cwd := in.Cwd
	if cwd == "" {
		cwd = proj
	}
	abs := resolveDirs(WritePaths(in.ToolName, in.ToolInput, cwd))
	treeAbs, wholeAbs := treePaths(in.ToolName, in.ToolInput, cwd) // git reset --hard writes no one path
	treeAbs = resolveDirs(treeAbs)
	if len(abs) == 0 && len(treeAbs) == 0 {
		return nil, nil
	}
	roots := []string{proj}
	if real, err := filepath.EvalSymlinks(proj); err == nil && real != proj {
		roots = append(roots, real)
	}
	var rels []string
	for _, p := range abs {
		for _, root := range roots {
			r, err := filepath.Rel(root, p)
			if err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && r != "." {
				rels = append(rels, filepath.ToSlash(r))
				break
			}
		}
	}
	// Directories removed or moved whole (rm -r, mv): every path under
	// them is written, the project itself when one holds it ("").
	var trees []string
	for _, p := range treeAbs {
		if key, ok := treeKey(p, roots); ok {
			trees = append(trees, key)
		}
	}
	// What the denial calls each tree (its key as CheckTrees has it,
	// "." for ""): the directory itself, not "." for one that holds the
	// project; and which ones are git work trees written whole.
	names := treeNames{name: map[string]string{}, whole: map[string]bool{}}
	for _, p := range resolveDirs(wholeAbs) {
		if key, ok := treeKey(p, roots); ok {
			names.whole[cmp.Or(key, ".")] = true
		}
	}
	for _, p := range treeAbs {
		key, ok := treeKey(p, roots)
		if !ok || names.name[cmp.Or(key, ".")] != "" {
			continue
		}
		name := key
		if key == "" {
			name = p // holds the project
			if slices.Contains(roots, filepath.Clean(p)) {
				name = "."
			}
		}
		names.name[cmp.Or(key, ".")] = name
	}
	if len(rels) == 0 && len(trees) == 0 {
		return nil, nil
	}
	sp, err := e.Space()
	if err != nil {
		return nil, err
	}
	// A reservation file the checks cannot read guards nothing: the gate
	// fails open on it, as on all of Tavern's own trouble, but not
	// silently — the answer tells the user which file (path:line:col),
	// and the error goes to stderr.
	var conflicts []tuples.Conflict
	var skipped *tuples.SkippedError // the files left out, each once
	skip := func(err error) error {
		var se *tuples.SkippedError
		if !errors.As(err, &se) {
			return err
		}
		if skipped == nil {
			skipped = &tuples.SkippedError{Op: se.Op, Path: se.Path}
		}
		for _, fe := range se.Errs {
			if !slices.ContainsFunc(skipped.Errs, func(o error) bool { return o.Error() == fe.Error() }) {
				skipped.Errs = append(skipped.Errs, fe)
			}
		}
		return nil
	}
	if len(rels) > 0 {
		cs, err := sp.CheckPaths(checkAs, rels)
		if err := skip(err); err != nil {
			return nil, err
		}
		conflicts = cs
	}
	if len(trees) > 0 {
		cs, err := sp.CheckTrees(checkAs, trees)
		if err := skip(err); err != nil {
			return nil, err
		}
		conflicts = append(conflicts, cs...)
	}
	r := &Response{}
	err = nil
	if skipped != nil {
		r.Message, err = skippedMessage(e, skipped), skipped
	}
	if len(conflicts) > 0 {
		_, _ = e.Manager.Journal.Append(journal.Event{Type: "reservation.denied", Kind: "tuple", Agent: agent, Path: conflicts[0].Held.Path,
			Data: map[string]any{"path": conflicts[0].Want, "held_by": conflicts[0].Held.Agent, "glob": conflicts[0].Held.Glob, "tool": in.ToolName}})
		r.Deny = denyReason(e, agent, conflicts, names)
	}
	if r.Message == "" && r.Deny == "" {
		return nil, nil
	}
	return r, err
}

// skippedMessage is what the user is told when reservation files were
// left out of the gate.
func skippedMessage(e *Env, se *tuples.SkippedError) string {
	files := make([]string, len(se.Errs))
	for i, fe := range se.Errs {
		files[i] = fe.Error()
	}
	return fmt.Sprintf("Tavern: a reservation file under %s could not be read, so this edit was checked without it: %s. "+
		"Fix or remove the file (`tavern reservations` names it too).", filepath.Base(e.Store.Root())+"/", strings.Join(files, "; "))
}

// resolveDirs adds to paths the real path of each one's directory where it
// differs: a write through a symlinked directory (src-link/a.go, or the
// whole project reached by a link, as a tool's cwd may be) writes the
// file under the real one, where the reservation is. The store's root is
// real, so the spelled path alone would not be in the project at all.
// Only the directory is resolved: rm or mv of a link changes the link,
// not what it points to. A path whose directory does not exist yet is
// resolved from its deepest existing ancestor.
func resolveDirs(paths []string) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		dir, rest := filepath.Dir(p), []string{filepath.Base(p)}
		for {
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				if r := filepath.Join(append([]string{real}, rest...)...); r != p && !slices.Contains(out, r) {
					out = append(out, r)
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			rest = append([]string{filepath.Base(dir)}, rest...)
			dir = parent
		}
	}
	return out
}

// treeKey is the directory p (absolute) as CheckTrees takes it: relative
// to the project (one of roots), slash-separated, or "" when p is the
// project or holds it; ok is false when p is elsewhere.
func treeKey(p string, roots []string) (key string, ok bool) {
	for _, root := range roots {
		r, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		if r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			if up, err := filepath.Rel(p, root); err == nil && up != ".." && !strings.HasPrefix(up, ".."+string(filepath.Separator)) {
				return "", true
			}
			continue
		}
		return filepath.ToSlash(r), true
	}
	return "", false
}

// treeNames are what a denial calls the trees a command writes, by the
// Want of their conflicts: name the directory (relative to the project
// when in it, else absolute), whole the git work trees written whole.
type treeNames struct {
	name  map[string]string
	whole map[string]bool
}

// denyReason says who holds what and the ways out. The commands it
// offers act --as the asker, so for a name that is no agent's (invalid,
// or one no session registered) it offers none, and says why instead: a
// command the model runs as told must not fail for its name.
func denyReason(e *Env, agent string, cs []tuples.Conflict, trees treeNames) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, c := range cs {
		line := fmt.Sprintf("%s is reserved by %s (%s", c.Want, c.Held.Agent, c.Held.Glob)
		// git reset --hard, rm -r .: ". is reserved" would say what is
		// not so, and "." what the tree is not when it holds the project
		// or is a work tree in it (git --work-tree=src merge).
		name := cmp.Or(trees.name[c.Want], c.Want)
		switch {
		case trees.whole[c.Want] || name == ".":
			line = fmt.Sprintf("the whole work tree (%s), which this command changes, has paths reserved by %s (%s", name, c.Held.Agent, c.Held.Glob)
		case c.Want == ".":
			line = fmt.Sprintf("%s, which this command changes, holds paths reserved by %s (%s", name, c.Held.Agent, c.Held.Glob)
		}
		if !c.Held.Expires.IsZero() {
			line += ", until " + schema.FormatTime(c.Held.Expires.Time)
		}
		if c.Held.Reason != "" {
			line += ": " + c.Held.Reason
		}
		line += ")"
		if !seen[line] {
			seen[line] = true
			b.WriteString("Tavern: " + line + ".\n")
		}
	}
	h := cs[0].Held.Agent
	if who := unknownAsker(e, agent); who != "" {
		fmt.Fprintf(&b, "Do not edit it now. Ask %s to release it, wait until the reservation lapses, or take other work; `tavern reservations` lists them all.\n%s", h, who)
		return b.String()
	}
	fmt.Fprintf(&b, "Do not edit it now. Ask %s to release it (`tavern send @%s \"need %s\" --as %s`), wait until the reservation lapses, or take other work; `tavern reservations` lists them all.", h, h, cmp.Or(trees.name[cs[0].Want], cs[0].Want), agent)
	return b.String()
}

// StopGate decides whether the session may stop: when the agent has
// commitments that have not passed and holds a claimed item — or
// completed one since its session began (marking the item done first is
// no way round the gate, whoever ran `item done`) — it verifies them now
// (their assertions, as the verifier would, by "hook:stop") and returns
// the reason to keep working if any fails. "" lets the stop through.
// Only a definite failure blocks — an assertion that ran and exited
// non-zero or timed out; an assertion Tavern could not run is reported as
// an error and the stop goes through.
//
// The commitments are read first: an agent whose commitments all passed
// (or who made none), the common stop, costs one directory read.
//
// Handle does not block twice in a row: when the tool says it is already
// going on because of a stop hook (stop_hook_active), a failing check
// lets the stop through with a message to the user instead.
func StopGate(ctx context.Context, e *Env, agent string) (string, error) {
	f, err := stopCheck(ctx, e, agent)
	if f == nil {
		return "", err
	}
	return f.reason(agent), err
}

// stopFailure is what a stop check found failing: the held and completed
// items it was about, and each failing commitment.
type stopFailure struct {
	what, way []string
	fails     []string // one line (and its output) per failing commitment
	names     []string // the failing commitments' descriptions
}

// stopCheck is StopGate's check; nil when the stop may go through.
func stopCheck(ctx context.Context, e *Env, agent string) (*stopFailure, error) {
	cs, err := e.Manager.Commitments(agent)
	if err != nil {
		return nil, err
	}
	open := 0
	for _, c := range cs {
		if c.Status != agents.StatusPassed {
			open++
		}
	}
	if open == 0 {
		return nil, nil
	}
	items, err := agents.ClaimedItems(e.Store, agent)
	if err != nil {
		return nil, err
	}
	done, err := CompletedInSession(e, agent)
	if err != nil || len(items)+len(done) == 0 {
		return nil, err
	}
	results, err := e.Manager.Verify(ctx, agent, "hook:stop")
	f := &stopFailure{}
	var runErrs []error
	for _, r := range results {
		switch {
		case r.Passed:
		case r.Err != nil && !r.TimedOut:
			runErrs = append(runErrs, fmt.Errorf("%s: %w", r.Commitment.Path, r.Err))
		default:
			line := fmt.Sprintf("- %s: `%s` exit %d", r.Commitment.Description, r.Commitment.Assertion, r.ExitCode)
			if r.TimedOut {
				line += " (timed out)"
			}
			if out := lastLines(r.Output, 4); out != "" {
				line += "\n  " + strings.ReplaceAll(out, "\n", "\n  ")
			}
			f.fails = append(f.fails, line)
			f.names = append(f.names, r.Commitment.Description)
		}
	}
	err = errors.Join(append([]error{err}, runErrs...)...)
	if len(f.fails) == 0 {
		return nil, err
	}
	if len(items) > 0 {
		var held []string
		for _, it := range items {
			held = append(held, fmt.Sprintf("%s/%s (attempt %d)", it.Queue, it.ID, it.Attempt))
		}
		f.what = append(f.what, "you hold "+strings.Join(held, ", "))
		f.way = append(f.way, fmt.Sprintf("or give the item back: `tavern item release %s --attempt %d`", items[0].ID, items[0].Attempt))
	}
	if len(done) > 0 {
		var ids []string
		for _, ev := range done {
			ids = append(ids, ev.Queue+"/"+ev.Item)
		}
		f.what = append(f.what, "you marked "+strings.Join(ids, ", ")+" done in this session")
		if len(items) == 0 {
			f.way = append(f.way, "marking an item done does not end the check")
		}
	}
	return f, err
}

// reason is the block's reason, addressed to the model.
func (f *stopFailure) reason(agent string) string {
	verb, they, it := "do", "they pass; they are", "one cannot pass"
	if len(f.fails) == 1 {
		verb, they, it = "does", "it passes; it is", "it cannot pass"
	}
	return fmt.Sprintf("Tavern: %s and %d of your commitments %s not pass yet:\n%s\n"+
		"Keep working until %s checked again when you stop. "+
		"If %s, say so to the user (`tavern ask --to user \"...\" --as %s`)%s.",
		strings.Join(f.what, "; "), len(f.fails), verb, strings.Join(f.fails, "\n"), they, it, agent, prefixed(", ", strings.Join(f.way, "; ")))
}

// message is what the user is told when the stop goes through anyway (a
// stop hook blocked it already: see Handle).
func (f *stopFailure) message(agent string) string {
	verb := "do"
	if len(f.fails) == 1 {
		verb = "does"
	}
	return fmt.Sprintf("Tavern: %s stops with %d of its commitments that %s not pass:\n%s\n"+
		"The stop gate blocked once already and does not block twice in a row (that could keep the session from ever stopping); "+
		"`tavern verify %s` checks them again.",
		agent, len(f.fails), verb, strings.Join(f.fails, "\n"), agent)
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// CompletedInSession lists the items agent's claims completed (the
// journal's item.completed events in its name) since it entered its
// current state — for a session that owns its agent, since the session
// began; for an agent run by a spawn wrapper, since the spawn — newest
// last, looking back at most sessionWindow. journal.Tail reads from the
// end and stops at that time, so the cost is the journal written since.
func CompletedInSession(e *Env, agent string) ([]journal.Event, error) {
	d, err := e.Store.Get(agents.AgentPath(agent))
	if err != nil {
		if errors.Is(err, docstore.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	since, ok := d.Time("state_changed")
	if !ok {
		since, ok = d.Time("created")
	}
	if !ok {
		return nil, nil
	}
	if floor := e.now().Add(-sessionWindow); since.Before(floor) {
		since = floor
	}
	evs, _, err := journal.Tail(e.Store.Root(), sessionCompletions, journal.Filter{Types: []string{queues.EventCompleted}, Agent: agent, Since: since})
	return evs, err
}

// sessionWindow bounds how far back CompletedInSession looks: an agent
// idle for weeks under one $TAVERN_AGENT must not make every stop read
// weeks of journal.
const sessionWindow = 24 * time.Hour

// sessionCompletions bounds how many of a session's completions the stop
// gate names.
const sessionCompletions = 20

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return clip(strings.Join(lines, "\n"), 600)
}

// unknownAsker is "" when agent names an agent, else what the model must
// know about its name: tavern commands acting as it fail until it is
// settled.
func unknownAsker(e *Env, agent string) string {
	if err := schema.ValidAgentName(agent); err != nil {
		if agent == "" {
			return "This session has no Tavern agent: ask the user which agent it is before running tavern commands as one."
		}
		return fmt.Sprintf("Tavern: %q is not a valid agent name (%v), so tavern commands acting as it fail: ask the user which agent this session is.", agent, nameReason(err))
	}
	err := agents.AgentExists(e.Store, agent)
	if err == nil {
		return ""
	}
	var ue *schema.UnknownError
	if errors.As(err, &ue) && len(ue.Near) > 0 {
		return fmt.Sprintf("Tavern: there is no agent %q (did you mean %s?), so tavern commands acting as it fail: ask the user which agent this session is.", agent, schema.NearList(ue.Near))
	}
	return fmt.Sprintf("Tavern: there is no agent %q (no session registered it), so tavern commands acting as it fail: ask the user which agent this session is.", agent)
}

// nameReason is what a *schema.NameError says is wrong with the name,
// else the error's text.
func nameReason(err error) string {
	var ne *schema.NameError
	if errors.As(err, &ne) && ne.Reason != "" {
		return ne.Reason
	}
	return err.Error()
}

// badConfigResponse is session-start's answer on a store whose tavern.md
// Tavern does not accept: nothing is registered, and the model and the
// user learn what to fix.
func badConfigResponse(e *Env, err error) *Response {
	head := fmt.Sprintf("Tavern: %s/%s has a problem, so tavern commands fail until it is fixed (%v).",
		filepath.Base(e.Store.Root()), docstore.ConfigFile, err)
	return &Response{
		Context: head + " Tell the user; `tavern check` shows it, and `tavern edit config` fixes it. Edits of paths other agents reserved are still refused.",
		Message: head + " `tavern check` shows it; `tavern edit config` fixes it.",
	}
}
