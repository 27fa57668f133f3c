package kit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// Tool is an agent tool Tavern integrates with.
type Tool string

// The tools. Aider has no hooks: setup writes its AGENTS.md block and
// configuration only.
const (
	Claude Tool = "claude"
	Codex  Tool = "codex"
	Gemini Tool = "gemini"
	Aider  Tool = "aider"
)

// Tools lists the tools setup knows, in the order help shows them.
var Tools = []Tool{Claude, Codex, Gemini, Aider}

// HookTools are the tools with hooks.
var HookTools = []Tool{Claude, Codex, Gemini}

// ParseTool checks a tool name setup knows (Tools).
func ParseTool(s string) (Tool, error) {
	return parseTool(s, Tools)
}

// ParseHookTool checks the tool name a hook is given (--tool): one of
// HookTools. Aider has no hooks, so a hook run for it is a mistake.
func ParseHookTool(s string) (Tool, error) {
	return parseTool(s, HookTools)
}

// parseTool is s if it is one of known, else an ErrUnknownTool that
// names the near ones ("did you mean") and lists them all.
func parseTool(s string, known []Tool) (Tool, error) {
	if t := Tool(s); slices.Contains(known, t) {
		return t, nil
	}
	names := make([]string, len(known))
	for i, t := range known {
		names[i] = string(t)
	}
	msg := "%w (one of " + strings.Join(names, ", ") + ")"
	if near := schema.Near(strings.ToLower(s), names); len(near) > 0 {
		msg = "%w (did you mean " + schema.NearList(near) + "? one of " + strings.Join(names, ", ") + ")"
	} else if slices.Contains(Tools, Tool(s)) {
		msg = "%w: " + s + " has no hooks (one of " + strings.Join(names, ", ") + ")"
	} else if slices.Contains(names, strings.ToLower(s)) {
		msg = "%w (did you mean " + strconv.Quote(strings.ToLower(s)) + "? one of " + strings.Join(names, ", ") + ")"
	}
	return "", &Error{Op: "tool", Path: s, Err: fmt.Errorf(msg, ErrUnknownTool)}
}

// Event is a hook event, by Tavern's name for it (`tavern hook EVENT`).
type Event string

// The events Tavern handles.
const (
	SessionStart     Event = "session-start"
	PreToolUse       Event = "pre-tool-use"
	UserPromptSubmit Event = "user-prompt-submit"
	PostToolUse      Event = "post-tool-use"
	Stop             Event = "stop"
	SessionEnd       Event = "session-end"
)

// Events lists the events in session order.
var Events = []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd}

// ParseEvent checks an event name. The tools' own names are accepted too
// (SessionStart, PreToolUse, BeforeTool, AfterAgent, ...).
func ParseEvent(s string) (Event, error) {
	if e := Event(s); slices.Contains(Events, e) {
		return e, nil
	}
	for _, t := range HookTools {
		for _, e := range Events {
			if NativeEvent(t, e) == s {
				return e, nil
			}
		}
	}
	names := make([]string, len(Events))
	for i, e := range Events {
		names[i] = string(e)
	}
	return "", &Error{Op: "hook", Path: s, Err: fmt.Errorf("%w (one of session-start, pre-tool-use, user-prompt-submit, post-tool-use, stop, session-end)%s", ErrUnknownEvent, schema.ChoiceHint(s, names))}
}

// NativeEvent is the tool's name for an event. Claude Code and Codex CLI
// share names; Gemini CLI calls the prompt hook BeforeAgent, the tool
// hooks BeforeTool/AfterTool and the end of a turn AfterAgent
// (geminicli.com/docs/hooks, "Migration from Claude Code").
func NativeEvent(t Tool, e Event) string {
	if t == Gemini {
		switch e {
		case PreToolUse:
			return "BeforeTool"
		case PostToolUse:
			return "AfterTool"
		case UserPromptSubmit:
			return "BeforeAgent"
		case Stop:
			return "AfterAgent"
		}
	}
	switch e {
	case SessionStart:
		return "SessionStart"
	case PreToolUse:
		return "PreToolUse"
	case UserPromptSubmit:
		return "UserPromptSubmit"
	case PostToolUse:
		return "PostToolUse"
	case Stop:
		return "Stop"
	case SessionEnd:
		return "SessionEnd"
	}
	return string(e)
}

// Input is a hook's stdin payload: the fields Tavern reads of the common
// and event-specific fields the three tools document (Claude Code:
// code.claude.com/docs/en/hooks; Codex CLI: codex-rs/hooks/schema/generated
// /*.command.input.schema.json; Gemini CLI: docs/hooks/reference.md).
// Unknown fields are ignored.
type Input struct {
	Tool           Tool            `json:"-"`
	Event          Event           `json:"-"`
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	TranscriptPath string          `json:"transcript_path"`
	Source         string          `json:"source"` // SessionStart: startup, resume, clear, compact
	Reason         string          `json:"reason"` // SessionEnd: clear, logout, prompt_input_exit, exit, other
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	Prompt         string          `json:"prompt"`
	StopHookActive bool            `json:"stop_hook_active"`
	Model          string          `json:"model"`
	TurnID         string          `json:"turn_id"`   // Codex
	Timestamp      string          `json:"timestamp"` // Gemini
}

// MaxPayload bounds what ReadInput reads of a hook's stdin. A payload
// carries the tool call whole — a Write's entire content — so the bound
// is far above any file a tool writes in one call: a payload cut short
// would not parse, and the gates would let the call through unchecked.
const MaxPayload = 1 << 30

// ReadInput reads a hook payload from r (at most MaxPayload bytes; a
// longer one is refused as such, not as JSON cut short) and decodes it
// with ParseInput.
func ReadInput(tool Tool, event Event, r io.Reader) (*Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, &Error{Op: "hook " + string(event), Path: "stdin", Err: err}
	}
	if len(data) > MaxPayload {
		return nil, &Error{Op: "hook " + string(event), Path: "stdin", Err: fmt.Errorf("%w: over %d MiB", ErrBadPayload, MaxPayload>>20)}
	}
	return ParseInput(tool, event, data)
}

// ParseInput decodes a hook payload for event. tool "" detects the tool
// from the payload: Gemini's event names and timestamp, Codex's turn_id
// or apply_patch, the tool's directory in transcript_path, else Claude
// Code. (`tavern setup` always writes --tool: detection is for hooks
// written by hand.)
func ParseInput(tool Tool, event Event, data []byte) (*Input, error) {
	in := &Input{}
	if len(bytes.TrimSpace(data)) > 0 {
		// A field of another type than expected (a tool's newer release
		// changing one Tavern barely reads) leaves that field empty:
		// json.Unmarshal decodes the rest, and the gates must still see
		// the tool call. Only JSON that does not parse is refused.
		var ute *json.UnmarshalTypeError
		if err := json.Unmarshal(data, in); err != nil && (!errors.As(err, &ute) || ute.Field == "") { // "": not an object at all
			return nil, &Error{Op: "hook " + string(event), Path: "stdin", Err: fmt.Errorf("%w: %v", ErrBadPayload, err)}
		}
	}
	if tool == "" {
		tool = detectTool(in)
	}
	in.Tool, in.Event = tool, event
	return in, nil
}

func detectTool(in *Input) Tool {
	switch in.HookEventName {
	case "BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent":
		return Gemini
	}
	switch {
	case in.Timestamp != "" || strings.Contains(in.TranscriptPath, "/.gemini/"):
		return Gemini
	case in.TurnID != "" || in.ToolName == "apply_patch" || strings.Contains(in.TranscriptPath, "/.codex/"):
		return Codex
	case in.Model != "" && in.HookEventName == "SessionEnd": // Claude's SessionEnd has no model
		return Codex
	}
	return Claude
}

// SessionAgent is the agent name of a hooked session that has no
// $TAVERN_AGENT: the tool and the first 8 letters and digits of the
// session id ("claude-0f1e2d3c"), or of its sha256 when the id has fewer.
// It is a function of the session id, so every hook of a session finds
// the same agent without looking anything up.
func SessionAgent(tool Tool, sessionID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(sessionID) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			if b.Len() == 8 {
				break
			}
		}
	}
	id := b.String()
	if len(id) < 8 {
		sum := sha256.Sum256([]byte(sessionID))
		id = hex.EncodeToString(sum[:4])
	}
	return string(tool) + "-" + id
}

// Response is a handler's answer, rendered per tool by Render.
type Response struct {
	Context string            // additional context for the model
	Deny    string            // pre-tool-use: refuse the call, with this reason
	Block   string            // stop: do not stop, with this reason
	Env     map[string]string // session-start: environment for the session's shell commands
	Message string            // shown to the user, whatever the decision (a warning: a typo, a broken file)
}

// Render is the response's stdout for tool and event: the JSON each tool
// documents, or nothing when there is nothing to say (exit 0 with empty
// stdout is "no decision" for all three tools).
//
//   - context: {"hookSpecificOutput":{"hookEventName":E,"additionalContext":…}},
//     E the tool's event name (Gemini: BeforeAgent, AfterTool);
//   - deny: Claude Code and Codex {"hookSpecificOutput":{"hookEventName":
//     "PreToolUse","permissionDecision":"deny","permissionDecisionReason":…}};
//     Gemini {"decision":"deny","reason":…};
//   - block: Claude Code and Codex {"decision":"block","reason":…}; Gemini
//     (AfterAgent) {"decision":"deny","reason":…}, which sends the reason
//     back as the next prompt;
//   - env (Codex SessionStart only): hookSpecificOutput.env. Claude Code
//     gets it through $CLAUDE_ENV_FILE instead (WriteEnvFile);
//   - message: {"systemMessage":…} beside any of the above, the field all
//     three document for a warning shown to the user (not for SessionEnd,
//     which has nobody left to show it to).
//
// Codex rejects unknown keys (its output schemas set
// additionalProperties: false), so nothing else is ever added.
func (r *Response) Render(tool Tool, event Event) ([]byte, error) {
	if r == nil {
		return nil, nil
	}
	var out map[string]any
	switch {
	case r.Deny != "" && event == PreToolUse:
		if tool == Gemini {
			out = map[string]any{"decision": "deny", "reason": r.Deny}
		} else {
			out = map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": r.Deny}}
		}
	case r.Block != "" && event == Stop:
		if tool == Gemini {
			out = map[string]any{"decision": "deny", "reason": r.Block}
		} else {
			out = map[string]any{"decision": "block", "reason": r.Block}
		}
	case r.Context != "" && event != SessionEnd && event != Stop:
		hso := map[string]any{"hookEventName": NativeEvent(tool, event), "additionalContext": r.Context}
		if event == SessionStart && tool == Codex && len(r.Env) > 0 {
			hso["env"] = r.Env
		}
		out = map[string]any{"hookSpecificOutput": hso}
	}
	if r.Message != "" && event != SessionEnd {
		if out == nil {
			out = map[string]any{}
		}
		out["systemMessage"] = r.Message
	}
	if out == nil {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
