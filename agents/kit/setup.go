package kit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Markers delimit what setup writes into markdown files, so it can update
// or remove its block in place.
const (
	BlockBegin = "<!-- tavern:begin -->"
	BlockEnd   = "<!-- tavern:end -->"
)

// AgentsBlock is the block setup puts in AGENTS.md: short on purpose (the
// tools read AGENTS.md into every session); prime has the rest.
const AgentsBlock = `## Tavern
This project coordinates its agents with Tavern (` + "`.tavern/`" + `). Start with ` + "`tavern prime`" + `: who you are, your work, messages and commands.
Take work with ` + "`tavern next --take`" + `, report with ` + "`tavern item done|fail`" + `, talk with ` + "`tavern send`/`tavern recv`" + `, ask with ` + "`tavern ask`" + `.
Reserve shared paths before editing (` + "`tavern reserve GLOB`" + `); edits of paths others reserved are refused.
Record checks with ` + "`tavern commit add`" + `: you cannot stop while you hold an item whose checks fail.
Track work in Tavern, not in TODO files or markdown checklists.`

// SetupOptions say where and how to install.
type SetupOptions struct {
	Project string // the project directory (holding .tavern/)
	// Bin is the command the hooks run ("tavern": found on PATH; an
	// absolute path pins one binary).
	Bin string
}

// Change is one thing setup or remove did (or found already done).
type Change struct {
	Path   string `json:"path"`   // relative to the project
	Action string `json:"action"` // created, updated, unchanged, removed, note
	What   string `json:"what"`
}

// CheckItem is one line of `setup --check`.
type CheckItem struct {
	Path   string `json:"path"`
	What   string `json:"what"`
	Status string `json:"status"` // ok, missing, outdated, warning
	Detail string `json:"detail,omitempty"`
}

// hookSpec is one hook setup installs.
type hookSpec struct {
	native  string // the tool's event name
	event   Event
	matcher string // "" : none (every occurrence)
	timeout int    // in the tool's unit
}

// toolHooks is where a tool reads hooks from and what setup installs
// there. Timeouts: Claude Code and Codex in seconds, Gemini CLI in
// milliseconds. The stop hook runs the agent's commitments: ten minutes.
func toolHooks(t Tool) (file string, specs []hookSpec) {
	switch t {
	case Claude: // code.claude.com/docs/en/hooks: project settings
		return filepath.Join(".claude", "settings.json"), []hookSpec{
			{"SessionStart", SessionStart, "startup|resume|clear|compact", 30},
			{"UserPromptSubmit", UserPromptSubmit, "", 10},
			{"PreToolUse", PreToolUse, "Edit|Write|MultiEdit|NotebookEdit|Bash", 10},
			{"PostToolUse", PostToolUse, "", 10},
			{"Stop", Stop, "", 600},
			{"SessionEnd", SessionEnd, "", 30},
		}
	case Codex: // developers.openai.com/codex/hooks: <repo>/.codex/hooks.json
		return filepath.Join(".codex", "hooks.json"), []hookSpec{
			{"SessionStart", SessionStart, "startup|resume|clear|compact", 30},
			{"UserPromptSubmit", UserPromptSubmit, "", 10},
			{"PreToolUse", PreToolUse, "apply_patch|Edit|Write|Bash", 10},
			{"PostToolUse", PostToolUse, "", 10},
			{"Stop", Stop, "", 600},
			{"SessionEnd", SessionEnd, "", 30},
		}
	case Gemini: // geminicli.com/docs/hooks: .gemini/settings.json
		return filepath.Join(".gemini", "settings.json"), []hookSpec{
			{"SessionStart", SessionStart, "", 30000},
			{"BeforeAgent", UserPromptSubmit, "", 10000},
			{"BeforeTool", PreToolUse, "write_file|replace|run_shell_command", 10000},
			{"AfterTool", PostToolUse, "*", 10000},
			{"AfterAgent", Stop, "", 600000},
			{"SessionEnd", SessionEnd, "", 30000},
		}
	}
	return "", nil
}

// importFile is the tool's instructions file and the line that imports
// AGENTS.md into it: Claude Code reads CLAUDE.md (imports: @path), Gemini
// CLI GEMINI.md (imports: @./path). Codex reads AGENTS.md itself.
func importFile(t Tool) (file, line string) {
	switch t {
	case Claude:
		return "CLAUDE.md", "@AGENTS.md"
	case Gemini:
		return "GEMINI.md", "@./AGENTS.md"
	}
	return "", ""
}

const aiderConf = ".aider.conf.yml"
const aiderComment = "added by tavern setup aider"

func hookCommand(bin string, t Tool, ev Event) string {
	if bin == "" {
		bin = "tavern"
	}
	if strings.ContainsAny(bin, " \t'\"$\\") {
		bin = "'" + strings.ReplaceAll(bin, "'", `'\''`) + "'"
	}
	return fmt.Sprintf("%s hook %s --tool %s", bin, ev, t)
}

func hookHandler(t Tool, spec hookSpec, bin string) *jsonObject {
	h := newObject()
	if t == Gemini {
		h.set("name", "tavern-"+string(spec.event))
	}
	h.set("type", "command")
	h.set("command", hookCommand(bin, t, spec.event))
	h.set("timeout", spec.timeout)
	if t == Gemini {
		h.set("description", "Tavern: "+string(spec.event))
	}
	return h
}

func hookGroup(t Tool, spec hookSpec, bin string) *jsonObject {
	g := newObject()
	if spec.matcher != "" {
		g.set("matcher", spec.matcher)
	}
	g.set("hooks", []any{hookHandler(t, spec, bin)})
	return g
}

// isOurs reports whether a hook handler is one setup wrote: its command is
// "<…/>tavern hook …".
func isOurs(h any) bool {
	o, ok := h.(*jsonObject)
	if !ok {
		return false
	}
	cmd, _ := o.vals["command"].(string)
	// Words as the shell reads them: hookCommand quotes a --bin with a
	// space ('/opt/My Tools/tavern'), which splitting at blanks would
	// miss — setup would add its hooks again and remove would leave them.
	// A first word with an expansion ("$CLAUDE_PROJECT_DIR"/bin/tavern,
	// written by hand) is read as it is spelled.
	if cmds, ok := parseShell(cmd); ok && len(cmds) == 1 && len(cmds[0].words) >= 3 && cmds[0].words[0] != "" {
		f := cmds[0].words
		return f[1] == "hook" && filepath.Base(f[0]) == "tavern"
	}
	f := strings.Fields(cmd)
	if len(f) < 3 || f[1] != "hook" {
		return false
	}
	return filepath.Base(strings.Trim(f[0], `'"`)) == "tavern"
}

func sameJSON(a, b any) bool { return bytes.Equal(formatJSON(a), formatJSON(b)) }

// hooksFile holds a settings file, parsed with the byte spans setup edits
// (jsonedit.go): it is changed by splices, never re-formatted.
type hooksFile struct {
	path   string // absolute
	rel    string
	exists bool
	doc    *jsonDoc    // the text and its parse ("{}" for a missing or blank file)
	root   *jsonObject // the same, as plain values (read-only)
}

func readHooksFile(project, rel string) (*hooksFile, error) {
	f := &hooksFile{path: filepath.Join(project, rel), rel: rel}
	data, err := os.ReadFile(f.path)
	text := string(data)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		text = "{}\n"
	case err != nil:
		return nil, err
	default:
		f.exists = true
		if strings.TrimSpace(text) == "" {
			text = "{}\n"
		}
	}
	doc, err := parseJSONDoc(text)
	if err != nil {
		e := &Error{Op: "setup", Path: rel + ":" + err.Error(), Err: ErrBadConfig}
		var se *jsonSyntaxError
		if errors.As(err, &se) {
			e.File, e.Line, e.Col = rel, se.Line, se.Col
		}
		return nil, e
	}
	if doc.root.kind != '{' {
		return nil, &Error{Op: "setup", Path: rel + ":1:1: the top level is not an object", Err: ErrBadConfig, File: rel, Line: 1, Col: 1}
	}
	f.doc, f.root = doc, doc.root.plain().(*jsonObject)
	return f, nil
}

// hooksNode returns the file's "hooks" object node (added when create is
// set; nil when absent otherwise), or an error when "hooks" is something
// else.
func (f *hooksFile) hooksNode(create bool) (*jnode, error) {
	h := f.doc.at("hooks")
	if h == nil {
		if !create {
			return nil, nil
		}
		if err := f.doc.addMember(f.doc.root, "hooks", newObject()); err != nil {
			return nil, err
		}
		return f.doc.at("hooks"), nil
	}
	if h.kind != '{' {
		return nil, &Error{Op: "setup", Path: f.rel + `: "hooks" is not an object`, Err: ErrBadConfig}
	}
	return h, nil
}

// eventHooks returns the plain value of hooks.<event> (nil when absent),
// or an error when it is not an array.
func (f *hooksFile) eventHooks(event string) ([]any, error) {
	n := f.doc.at("hooks", event)
	if n == nil {
		return nil, nil
	}
	if n.kind != '[' {
		return nil, &Error{Op: "setup", Path: fmt.Sprintf("%s: hooks.%s is not an array", f.rel, event), Err: ErrBadConfig}
	}
	return n.plain().([]any), nil
}

// removeOurs takes every handler setup wrote out of hooks.<event>'s
// groups, dropping groups it leaves empty (and, with dropEmpty, the event
// when it is left with no group). It reports whether anything changed.
func (f *hooksFile) removeOurs(event string, dropEmpty bool) (bool, error) {
	changed := false
	for {
		arr := f.doc.at("hooks", event)
		if arr == nil || arr.kind != '[' {
			return changed, nil
		}
		done := true
	groups:
		for gi := len(arr.elems) - 1; gi >= 0; gi-- {
			g := arr.elems[gi]
			if g.kind != '{' {
				continue
			}
			_, hs := g.member("hooks")
			if hs == nil || hs.kind != '[' {
				continue
			}
			for hi := len(hs.elems) - 1; hi >= 0; hi-- {
				if !isOurs(hs.elems[hi].plain()) {
					continue
				}
				var err error
				if len(hs.elems) == 1 {
					err = f.doc.removeAt(arr, gi)
				} else {
					err = f.doc.removeAt(hs, hi)
				}
				if err != nil {
					return changed, err
				}
				changed, done = true, false
				break groups
			}
		}
		if done {
			break
		}
	}
	if arr := f.doc.at("hooks", event); changed && dropEmpty && arr != nil && len(arr.elems) == 0 {
		h := f.doc.at("hooks")
		i, _ := h.member(event)
		if err := f.doc.removeAt(h, i); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// dropOurs takes setup's handlers out of every event but those in keep,
// deleting events it leaves empty, and reports whether anything changed.
func (f *hooksFile) dropOurs(keep map[string]bool) (bool, error) {
	h := f.doc.at("hooks")
	if h == nil || h.kind != '{' {
		return false, nil
	}
	var events []string
	for _, m := range h.members {
		if !keep[m.key] {
			events = append(events, m.key)
		}
	}
	changed := false
	for _, ev := range events {
		ch, err := f.removeOurs(ev, true)
		if err != nil {
			return changed, err
		}
		changed = changed || ch
	}
	return changed, nil
}

// hookState says how the file holds one spec: "ok" (exactly setup's
// group), "outdated" (a handler of ours that differs), "missing".
func hookState(arr []any, want *jsonObject) string {
	state := "missing"
	for _, g := range arr {
		if sameJSON(g, want) {
			return "ok"
		}
		if gobj, ok := g.(*jsonObject); ok {
			if hs, ok := gobj.vals["hooks"].([]any); ok && slices.ContainsFunc(hs, isOurs) {
				state = "outdated"
			}
		}
	}
	return state
}

// write saves the edited text; a file left with an empty top level goes
// (and its directory, when nothing else is in it).
func (f *hooksFile) write() error {
	if len(f.doc.root.members) == 0 {
		if f.exists {
			if err := os.Remove(f.path); err != nil {
				return err
			}
			_ = os.Remove(filepath.Dir(f.path)) // .claude/ and the like, when nothing else is in it
		}
		return nil
	}
	return writeFileAtomic(f.path, []byte(f.doc.text))
}

// writeFileAtomic writes data beside path and renames it into place, so a
// tool reading its settings never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	// A symlink is written where it points: renaming over the link would
	// replace it with a regular file (AGENTS.md -> docs/AGENTS.md).
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tavern-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Setup installs tool's hooks and instructions in the project, merging
// with what is there: other keys, other hooks and other text are kept as
// they are, and running it again changes nothing.
func Setup(t Tool, opt SetupOptions) ([]Change, error) {
	// The files setup edits after the hooks file are checked first: one it
	// must refuse leaves every file as it was, the hooks file included.
	if err := setupPreflight(t, opt.Project); err != nil {
		return nil, err
	}
	var changes []Change
	if rel, specs := toolHooks(t); rel != "" {
		f, err := readHooksFile(opt.Project, rel)
		if err != nil {
			return nil, err
		}
		changed := false
		wanted := map[string]bool{}
		for _, spec := range specs {
			wanted[spec.native] = true
			want := hookGroup(t, spec, opt.Bin)
			if _, err := f.hooksNode(false); err != nil {
				return nil, err
			}
			arr, err := f.eventHooks(spec.native)
			if err != nil {
				return nil, err
			}
			if hookState(arr, want) == "ok" && countOurs(arr) == 1 {
				continue
			}
			if _, err := f.removeOurs(spec.native, false); err != nil {
				return nil, err
			}
			h, err := f.hooksNode(true)
			if err != nil {
				return nil, err
			}
			if ev := f.doc.at("hooks", spec.native); ev != nil {
				err = f.doc.addElem(ev, want)
			} else {
				err = f.doc.addMember(h, spec.native, []any{want})
			}
			if err != nil {
				return nil, err
			}
			changed = true
		}
		ch, err := f.dropOurs(wanted) // ours under events setup no longer installs
		if err != nil {
			return nil, err
		}
		changed = changed || ch
		action := "unchanged"
		if changed {
			if err := f.write(); err != nil {
				return changes, err
			}
			action = "updated"
			if !f.exists {
				action = "created"
			}
		}
		changes = append(changes, Change{Path: rel, Action: action, What: string(t) + " hooks (" + hookCommand(opt.Bin, t, "EVENT") + ")"})
	}
	c, err := upsertBlockFile(opt.Project, "AGENTS.md", AgentsBlock, "the Tavern block")
	if err != nil {
		return changes, err
	}
	changes = append(changes, c)
	if file, line := importFile(t); file != "" {
		c, err := ensureImport(opt.Project, file, line)
		if err != nil {
			return changes, err
		}
		changes = append(changes, c)
	}
	if t == Aider {
		c, err := aiderSetup(opt.Project)
		if err != nil {
			return changes, err
		}
		changes = append(changes, c)
	}
	switch t {
	case Codex:
		changes = append(changes, Change{Path: hooksFileOf(t), Action: "note", What: "Codex runs new project hooks once you trust them: start codex and accept the hooks review (releases before hooks were on by default also need [features] hooks = true in config.toml)"})
	case Gemini:
		changes = append(changes, Change{Path: hooksFileOf(t), Action: "note", What: "Gemini CLI runs project hooks in a trusted folder while hooksConfig.enabled is on (tools.enableHooks in older releases); setup --check warns when they are off"})
	case Aider:
		changes = append(changes, Change{Path: aiderConf, Action: "note", What: "Aider has no hooks: run it under `tavern spawn` (see examples/agents) for identity, claims and messages"})
	}
	return changes, nil
}

func hooksFileOf(t Tool) string {
	f, _ := toolHooks(t)
	return f
}

func countOurs(arr []any) int {
	n := 0
	for _, g := range arr {
		if gobj, ok := g.(*jsonObject); ok {
			if hs, ok := gobj.vals["hooks"].([]any); ok {
				for _, h := range hs {
					if isOurs(h) {
						n++
					}
				}
			}
		}
	}
	return n
}

// Check reports what of tool's setup is installed and whether it is
// current.
func Check(t Tool, opt SetupOptions) ([]CheckItem, error) {
	var items []CheckItem
	if rel, specs := toolHooks(t); rel != "" {
		f, err := readHooksFile(opt.Project, rel)
		if err != nil {
			return nil, err
		}
		if _, err := f.hooksNode(false); err != nil {
			return nil, err
		}
		for _, spec := range specs {
			arr, _ := f.eventHooks(spec.native)
			st := hookState(arr, hookGroup(t, spec, opt.Bin))
			if st == "ok" && countOurs(arr) > 1 {
				st = "outdated"
			}
			items = append(items, CheckItem{Path: rel, What: "hook " + spec.native, Status: st})
		}
		switch t {
		case Gemini:
			items = append(items, geminiSwitches(f)...)
		case Codex:
			items = append(items, codexSwitches(opt.Project)...)
		}
		bin := opt.Bin
		if bin == "" {
			bin = "tavern"
		}
		if _, err := exec.LookPath(bin); err != nil {
			items = append(items, CheckItem{Path: rel, What: "hook command", Status: "warning", Detail: bin + " is not found (not on PATH?): the hooks cannot run; setup --bin /path/to/tavern pins one"})
		}
	}
	items = append(items, checkBlockFile(opt.Project, "AGENTS.md", AgentsBlock))
	if file, line := importFile(t); file != "" {
		items = append(items, checkImport(opt.Project, file, line))
	}
	if t == Aider {
		items = append(items, aiderCheck(opt.Project))
	}
	return items, nil
}

// geminiSwitches reports settings that keep Gemini CLI from running the
// hooks: hooksConfig.enabled false (the master switch), Tavern's hooks
// named in hooksConfig.disabled, and tools.enableHooks false (older
// releases). Only the project's file is read; the user's
// ~/.gemini/settings.json can switch them off too.
func geminiSwitches(f *hooksFile) []CheckItem {
	var items []CheckItem
	if hc, ok := f.root.vals["hooksConfig"].(*jsonObject); ok {
		if on, ok := hc.vals["enabled"].(bool); ok && !on {
			items = append(items, CheckItem{Path: f.rel, What: "hooksConfig.enabled", Status: "warning", Detail: "false: Gemini CLI runs no hooks"})
		}
		if names, ok := hc.vals["disabled"].([]any); ok {
			var ours []string
			for _, n := range names {
				if s, ok := n.(string); ok && strings.HasPrefix(s, "tavern-") {
					ours = append(ours, s)
				}
			}
			if len(ours) > 0 {
				items = append(items, CheckItem{Path: f.rel, What: "hooksConfig.disabled", Status: "warning", Detail: "lists " + strings.Join(ours, ", ") + ": Gemini CLI skips them"})
			}
		}
	}
	if tools, ok := f.root.vals["tools"].(*jsonObject); ok {
		if on, ok := tools.vals["enableHooks"].(bool); ok && !on {
			items = append(items, CheckItem{Path: f.rel, What: "tools.enableHooks", Status: "warning", Detail: "false: older Gemini CLI releases run no hooks"})
		}
	}
	return items
}

// codexSwitches reports a config.toml (the project's .codex/config.toml,
// then $CODEX_HOME/config.toml, default ~/.codex) that turns Codex's
// hooks off: hooks = false (or the older codex_hooks = false) in its
// [features] table. Releases before hooks were on by default need it
// true; that is said in setup's note, not checked.
func codexSwitches(project string) []CheckItem {
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, ".codex")
		}
	}
	var items []CheckItem
	for _, p := range []string{filepath.Join(project, ".codex", "config.toml"), filepath.Join(home, "config.toml")} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if key, line, off := codexFeatureOff(string(data)); off {
			shown := p
			if r, err := filepath.Rel(project, p); err == nil && !strings.HasPrefix(r, "..") {
				shown = r
			}
			items = append(items, CheckItem{Path: fmt.Sprintf("%s:%d", shown, line), What: "features." + key, Status: "warning", Detail: "false: Codex runs no hooks"})
		}
	}
	return items
}

// codexFeatureOff finds hooks = false or codex_hooks = false in the
// [features] table of a config.toml (or as features.hooks = false at the
// top level): a line scan, enough for the one key it looks for.
func codexFeatureOff(text string) (key string, line int, off bool) {
	table := ""
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if c := strings.IndexByte(l, '#'); c >= 0 {
			l = strings.TrimSpace(l[:c])
		}
		if strings.HasPrefix(l, "[") {
			table = strings.TrimSpace(strings.Trim(l, "[]"))
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if table == "" {
			k = strings.TrimPrefix(k, "features.")
		} else if table != "features" {
			continue
		}
		if (k == "hooks" || k == "codex_hooks") && v == "false" {
			return k, i + 1, true
		}
	}
	return "", 0, false
}

// Remove takes out exactly what Setup added for tool: its hook handlers
// (and the groups, events and "hooks" object they leave empty; a file
// left with nothing at all is deleted), its import of AGENTS.md, and the
// AGENTS.md block when no other tool's hooks still use it.
func Remove(t Tool, opt SetupOptions) ([]Change, error) {
	var changes []Change
	if rel, _ := toolHooks(t); rel != "" {
		f, err := readHooksFile(opt.Project, rel)
		if err != nil {
			return nil, err
		}
		if _, err := f.hooksNode(false); err != nil {
			return nil, err
		}
		changed, err := f.dropOurs(nil)
		if err != nil {
			return nil, err
		}
		if h := f.doc.at("hooks"); changed && h != nil && len(h.members) == 0 {
			i, _ := f.doc.root.member("hooks")
			if err := f.doc.removeAt(f.doc.root, i); err != nil {
				return nil, err
			}
		}
		if changed {
			if err := f.write(); err != nil {
				return changes, err
			}
			changes = append(changes, Change{Path: rel, Action: "removed", What: string(t) + " hooks"})
		} else {
			changes = append(changes, Change{Path: rel, Action: "unchanged", What: "no tavern hooks"})
		}
	}
	if file, _ := importFile(t); file != "" && isAgentsMD(opt.Project, file) {
		changes = append(changes, Change{Path: file, Action: "unchanged", What: "is AGENTS.md (a link to it)"})
	} else if file != "" {
		c, err := removeBlockFile(opt.Project, file)
		if err != nil {
			return changes, err
		}
		changes = append(changes, c)
	}
	if t == Aider {
		c, err := aiderRemove(opt.Project)
		if err != nil {
			return changes, err
		}
		changes = append(changes, c)
	}
	// AGENTS.md serves every tool: keep the block while another uses it.
	var users []string
	for _, other := range Tools {
		if other != t && installed(other, opt.Project) {
			users = append(users, string(other))
		}
	}
	if len(users) > 0 {
		changes = append(changes, Change{Path: "AGENTS.md", Action: "unchanged", What: "the Tavern block (still used by " + strings.Join(users, ", ") + ")"})
		return changes, nil
	}
	c, err := removeBlockFile(opt.Project, "AGENTS.md")
	if err != nil {
		return changes, err
	}
	return append(changes, c), nil
}

// installed reports whether tool's setup is (at least partly) present.
func installed(t Tool, project string) bool {
	if rel, _ := toolHooks(t); rel != "" {
		f, err := readHooksFile(project, rel)
		if err != nil {
			return false
		}
		hooks, _ := f.root.vals["hooks"].(*jsonObject)
		if hooks == nil {
			return false
		}
		for _, k := range hooks.keys {
			if arr, ok := hooks.vals[k].([]any); ok && countOurs(arr) > 0 {
				return true
			}
		}
		return false
	}
	if t == Aider {
		return aiderCheck(project).Status == "ok"
	}
	return false
}

// Marker blocks in markdown files.

func readText(project, rel string) (string, bool, error) {
	data, err := os.ReadFile(filepath.Join(project, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

// findBlock locates the marker block: begin and end offsets of the whole
// block (markers included) and its body.
func findBlock(text string) (start, end int, body string, ok bool) {
	start = strings.Index(text, BlockBegin)
	if start < 0 {
		return 0, 0, "", false
	}
	e := strings.Index(text[start:], BlockEnd)
	if e < 0 {
		return 0, 0, "", false
	}
	end = start + e + len(BlockEnd)
	body = strings.Trim(text[start+len(BlockBegin):start+e], "\n")
	return start, end, body, true
}

func upsertBlockFile(project, rel, body, what string) (Change, error) {
	text, exists, err := readText(project, rel)
	if err != nil {
		return Change{}, err
	}
	block := BlockBegin + "\n" + body + "\n" + BlockEnd
	var out string
	action := "updated"
	if start, end, old, ok := findBlock(text); ok {
		if old == body {
			return Change{Path: rel, Action: "unchanged", What: what}, nil
		}
		out = text[:start] + block + text[end:]
	} else if err := openBlock(rel, text); err != nil {
		return Change{}, err
	} else {
		sep := ""
		switch {
		case !exists || text == "":
			action = "created"
			if exists {
				action = "updated"
			}
		case strings.HasSuffix(text, "\n\n"):
		case strings.HasSuffix(text, "\n"):
			sep = "\n"
		default:
			sep = "\n\n"
		}
		out = text + sep + block + "\n"
	}
	if err := writeFileAtomic(filepath.Join(project, rel), []byte(out)); err != nil {
		return Change{}, err
	}
	return Change{Path: rel, Action: action, What: what}, nil
}

// openBlock is the error for a text whose block is begun and never
// ended (a hand edit gone wrong), at the begin marker: setup cannot tell
// where its block stops, so it leaves the file to be fixed by hand.
func openBlock(rel, text string) error {
	if _, _, _, ok := findBlock(text); ok {
		return nil
	}
	i := strings.Index(text, BlockBegin)
	if i < 0 {
		return nil
	}
	line := strings.Count(text[:i], "\n") + 1
	col := utf8.RuneCountInString(text[strings.LastIndex(text[:i], "\n")+1:i]) + 1
	return &Error{Op: "setup", Path: fmt.Sprintf("%s:%d:%d", rel, line, col), Err: fmt.Errorf("%s without %s (fix by hand): %w", BlockBegin, BlockEnd, ErrBadConfig),
		File: rel, Line: line, Col: col}
}

// setupPreflight reads the files Setup edits after the hooks file and
// returns the error one of them would stop it with.
func setupPreflight(t Tool, project string) error {
	files := []string{"AGENTS.md"}
	if file, _ := importFile(t); file != "" {
		files = append(files, file)
	}
	for _, rel := range files {
		text, _, err := readText(project, rel)
		if err != nil {
			return err
		}
		if err := openBlock(rel, text); err != nil {
			return err
		}
	}
	if t == Aider {
		if _, _, err := aiderPlan(project); err != nil {
			return err
		}
	}
	return nil
}

func checkBlockFile(project, rel, body string) CheckItem {
	text, _, err := readText(project, rel)
	if err != nil {
		return CheckItem{Path: rel, What: "the Tavern block", Status: "warning", Detail: err.Error()}
	}
	_, _, old, ok := findBlock(text)
	switch {
	case !ok:
		return CheckItem{Path: rel, What: "the Tavern block", Status: "missing"}
	case old != body:
		return CheckItem{Path: rel, What: "the Tavern block", Status: "outdated"}
	}
	return CheckItem{Path: rel, What: "the Tavern block", Status: "ok"}
}

// ensureImport makes file import AGENTS.md: nothing to do when it already
// has the import line anywhere (the user's own), else a marker block.
func ensureImport(project, file, line string) (Change, error) {
	if isAgentsMD(project, file) {
		return Change{Path: file, Action: "unchanged", What: "is AGENTS.md (a link to it)"}, nil
	}
	text, _, err := readText(project, file)
	if err != nil {
		return Change{}, err
	}
	if _, _, _, ok := findBlock(text); !ok && hasLine(text, line) {
		return Change{Path: file, Action: "unchanged", What: "imports AGENTS.md already"}, nil
	}
	return upsertBlockFile(project, file, line, "import of AGENTS.md ("+line+")")
}

// isAgentsMD reports whether file is AGENTS.md itself, through a symlink
// (CLAUDE.md -> AGENTS.md, the usual way to give every tool one file):
// it needs no import, and its block is AGENTS.md's, not its own.
func isAgentsMD(project, file string) bool {
	a, err1 := os.Stat(filepath.Join(project, file))
	b, err2 := os.Stat(filepath.Join(project, "AGENTS.md"))
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

func checkImport(project, file, line string) CheckItem {
	text, _, _ := readText(project, file)
	if isAgentsMD(project, file) || hasLine(text, line) {
		return CheckItem{Path: file, What: "import of AGENTS.md", Status: "ok"}
	}
	return CheckItem{Path: file, What: "import of AGENTS.md", Status: "missing"}
}

func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// removeBlockFile takes the marker block out of a file (and the blank
// line setup put before it); a file left empty is deleted.
func removeBlockFile(project, rel string) (Change, error) {
	text, exists, err := readText(project, rel)
	if err != nil {
		return Change{}, err
	}
	start, end, _, ok := findBlock(text)
	if !exists || !ok {
		return Change{Path: rel, Action: "unchanged", What: "no Tavern block"}, nil
	}
	before, after := text[:start], strings.TrimPrefix(text[end:], "\n")
	if strings.HasSuffix(before, "\n\n") {
		before = strings.TrimSuffix(before, "\n")
	}
	out := before + after
	path := filepath.Join(project, rel)
	if strings.TrimSpace(out) == "" {
		if err := os.Remove(path); err != nil {
			return Change{}, err
		}
		return Change{Path: rel, Action: "removed", What: "the file (it held only the Tavern block)"}, nil
	}
	if err := writeFileAtomic(path, []byte(out)); err != nil {
		return Change{}, err
	}
	return Change{Path: rel, Action: "removed", What: "the Tavern block"}, nil
}

// Aider reads instruction files named in .aider.conf.yml's read: list.
// Setup adds AGENTS.md to it with a comment marking the entry as its own,
// so remove can take out that entry and nothing else.

func readAiderConf(project string) (*yaml.Node, bool, error) {
	data, err := os.ReadFile(filepath.Join(project, aiderConf))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, true, nil
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, true, &Error{Op: "setup", Path: aiderConf + ": " + err.Error(), Err: ErrBadConfig}
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, true, &Error{Op: "setup", Path: aiderConf + ": the top level is not a mapping", Err: ErrBadConfig}
	}
	return &doc, true, nil
}

// aiderRead returns the read: value node of the mapping (nil if absent).
func aiderRead(m *yaml.Node) (key, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "read" {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// aiderSetup adds AGENTS.md to read: as a text edit, so the rest of the
// file stays as written: a new "read: AGENTS.md" line when there is no
// read:, a new item after the last of a block list (indented like it), an
// entry at the end of a one-line flow list, or a one-line scalar made a
// flow list. The line it adds or changes ends with the marker comment;
// aiderRemove undoes exactly that.
func aiderSetup(project string) (Change, error) {
	out, c, err := aiderPlan(project)
	if err != nil || out == nil {
		return c, err
	}
	if err := writeFileAtomic(filepath.Join(project, aiderConf), out); err != nil {
		return Change{}, err
	}
	return c, nil
}

// aiderPlan is what aiderSetup writes: the new text of .aider.conf.yml
// (nil when there is nothing to write) and the change to report.
func aiderPlan(project string) ([]byte, Change, error) {
	doc, exists, err := readAiderConf(project)
	if err != nil {
		return nil, Change{}, err
	}
	text, _, err := readText(project, aiderConf)
	if err != nil {
		return nil, Change{}, err
	}
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	marker := "  # " + aiderComment
	var val *yaml.Node
	if doc != nil {
		_, val = aiderRead(doc.Content[0])
	}
	switch {
	case val == nil:
		if len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
			lines[len(lines)-1] += "\n"
		}
		lines = append(lines, "read: AGENTS.md"+marker+"\n")
	case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
		// An empty `read:` takes the entry as its value; a null spelled
		// out (~, null) is the user's to change. Splicing a list into
		// either gave `read:[, AGENTS.md]`, which is no YAML.
		key, _ := aiderRead(doc.Content[0])
		i := key.Line - 1
		if i < 0 || i >= len(lines) {
			return nil, Change{}, &Error{Op: "setup", Path: aiderConf + ": cannot place an entry in read: (add AGENTS.md by hand)", Err: ErrBadConfig}
		}
		l := strings.TrimSuffix(lines[i], "\n")
		if val.Value != "" || key.Column < 1 || key.Column-1 > len(l) || strings.TrimRight(l, " \t") != l[:key.Column-1]+key.Value+":" {
			return nil, Change{}, &Error{Op: "setup", Path: fmt.Sprintf("%s:%d:%d", aiderConf, val.Line, val.Column), Err: fmt.Errorf("read: is null (make it a file name or a list, or add AGENTS.md by hand): %w", ErrBadConfig)}
		}
		lines[i] = l + " AGENTS.md" + marker + aiderWasEmpty + "\n"
	case val.Kind == yaml.ScalarNode && val.Value == "AGENTS.md":
		return nil, Change{Path: aiderConf, Action: "unchanged", What: "reads AGENTS.md already"}, nil
	case val.Kind == yaml.SequenceNode && slices.ContainsFunc(val.Content, func(n *yaml.Node) bool { return n.Value == "AGENTS.md" }):
		return nil, Change{Path: aiderConf, Action: "unchanged", What: "reads AGENTS.md already"}, nil
	case val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0:
		last := val.Content[len(val.Content)-1]
		if last.Line < 1 || last.Line > len(lines) || last.Column < 1 {
			return nil, Change{}, &Error{Op: "setup", Path: aiderConf + ": cannot place an entry in read: (add AGENTS.md by hand)", Err: ErrBadConfig}
		}
		l := lines[last.Line-1]
		prefix := l[:min(last.Column-1, len(l))]
		if strings.TrimSpace(strings.TrimSpace(prefix)) != "-" {
			return nil, Change{}, &Error{Op: "setup", Path: fmt.Sprintf("%s:%d: cannot place an entry after this item (add AGENTS.md by hand)", aiderConf, last.Line), Err: ErrBadConfig}
		}
		if !strings.HasSuffix(l, "\n") {
			lines[last.Line-1] += "\n"
		}
		lines = slices.Insert(lines, last.Line, prefix+"AGENTS.md"+marker+"\n")
	case (val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle != 0) || (val.Kind == yaml.ScalarNode && val.Style == 0):
		i := val.Line - 1
		if i < 0 || i >= len(lines) {
			return nil, Change{}, &Error{Op: "setup", Path: aiderConf + ": cannot place an entry in read: (add AGENTS.md by hand)", Err: ErrBadConfig}
		}
		l := strings.TrimSuffix(lines[i], "\n")
		var out string
		if val.Kind == yaml.SequenceNode {
			end := strings.LastIndexByte(l, ']')
			if end < 0 || strings.Count(l, "[") != 1 {
				return nil, Change{}, &Error{Op: "setup", Path: fmt.Sprintf("%s:%d: read: is a flow list over several lines (add AGENTS.md by hand)", aiderConf, val.Line), Err: ErrBadConfig}
			}
			sep := ", "
			if len(val.Content) == 0 {
				sep = ""
			}
			out = l[:end] + sep + "AGENTS.md" + l[end:] + marker
		} else {
			start := val.Column - 1
			if start < 0 || start+len(val.Value) > len(l) || l[start:start+len(val.Value)] != val.Value {
				return nil, Change{}, &Error{Op: "setup", Path: fmt.Sprintf("%s:%d: cannot rewrite read: (add AGENTS.md by hand)", aiderConf, val.Line), Err: ErrBadConfig}
			}
			out = l[:start] + "[" + val.Value + ", AGENTS.md]" + l[start+len(val.Value):] + marker + aiderWasScalar
		}
		lines[i] = out + "\n"
	default:
		return nil, Change{}, &Error{Op: "setup", Path: aiderConf + ": read is neither a file name nor a list", Err: ErrBadConfig}
	}
	action := "updated"
	if !exists {
		action = "created"
	}
	return []byte(strings.Join(lines, "")), Change{Path: aiderConf, Action: action, What: "read: AGENTS.md"}, nil
}

// aiderWasScalar follows the marker on a read: line that setup turned
// from one file name into a flow list, so remove can turn it back.
const aiderWasScalar = " (was one file)"

// aiderWasEmpty follows the marker on a read: line that was empty.
const aiderWasEmpty = " (was empty)"

func aiderCheck(project string) CheckItem {
	doc, _, err := readAiderConf(project)
	if err != nil {
		return CheckItem{Path: aiderConf, What: "read: AGENTS.md", Status: "warning", Detail: err.Error()}
	}
	if doc != nil {
		if _, val := aiderRead(doc.Content[0]); val != nil {
			if val.Value == "AGENTS.md" {
				return CheckItem{Path: aiderConf, What: "read: AGENTS.md", Status: "ok"}
			}
			for _, n := range val.Content {
				if n.Value == "AGENTS.md" {
					return CheckItem{Path: aiderConf, What: "read: AGENTS.md", Status: "ok"}
				}
			}
		}
	}
	return CheckItem{Path: aiderConf, What: "read: AGENTS.md", Status: "missing"}
}

func aiderRemove(project string) (Change, error) {
	text, exists, err := readText(project, aiderConf)
	if err != nil || !exists {
		return Change{Path: aiderConf, Action: "unchanged", What: "no entry of tavern's"}, err
	}
	marker := "  # " + aiderComment
	lines := strings.SplitAfter(text, "\n")
	changed := false
	var out []string
	for _, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		nl := l[len(body):]
		switch {
		case strings.HasSuffix(body, " AGENTS.md"+marker+aiderWasEmpty):
			body = strings.TrimSuffix(body, " AGENTS.md"+marker+aiderWasEmpty)
			out, changed = append(out, body+nl), true
		case strings.HasSuffix(body, marker+aiderWasScalar):
			body = strings.TrimSuffix(body, marker+aiderWasScalar)
			if i := strings.Index(body, "["); i >= 0 {
				if j := strings.Index(body[i:], ", AGENTS.md]"); j >= 0 {
					body = body[:i] + body[i+1:i+j] + body[i+j+len(", AGENTS.md]"):]
				}
			}
			out, changed = append(out, body+nl), true
		case strings.HasSuffix(body, marker):
			body = strings.TrimSuffix(body, marker)
			trimmed := strings.TrimSpace(body)
			if trimmed == "read: AGENTS.md" || trimmed == "- AGENTS.md" {
				changed = true
				continue // the line is setup's
			}
			for _, entry := range []string{", AGENTS.md]", "AGENTS.md]"} {
				if i := strings.LastIndex(body, entry); i >= 0 {
					body = body[:i] + "]" + body[i+len(entry):]
					break
				}
			}
			out, changed = append(out, body+nl), true
		default:
			out = append(out, l)
		}
	}
	if !changed {
		return Change{Path: aiderConf, Action: "unchanged", What: "no entry of tavern's"}, nil
	}
	path := filepath.Join(project, aiderConf)
	rest := strings.Join(out, "")
	if strings.TrimSpace(rest) == "" {
		if err := os.Remove(path); err != nil {
			return Change{}, err
		}
		return Change{Path: aiderConf, Action: "removed", What: "the file (it held only tavern's entry)"}, nil
	}
	if err := writeFileAtomic(path, []byte(rest)); err != nil {
		return Change{}, err
	}
	return Change{Path: aiderConf, Action: "removed", What: "read: AGENTS.md"}, nil
}
