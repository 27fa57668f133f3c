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
	f := strings.Fields(cmd)
	if len(f) < 3 || f[1] != "hook" {
		return false
	}
	return filepath.Base(strings.Trim(f[0], `'"`)) == "tavern"
}

func sameJSON(a, b any) bool { return bytes.Equal(formatJSON(a), formatJSON(b)) }

// hooksFile holds a parsed settings file.
type hooksFile struct {
	path   string // absolute
	rel    string
	root   *jsonObject
	exists bool
	raw    []byte
}

func readHooksFile(project, rel string) (*hooksFile, error) {
	f := &hooksFile{path: filepath.Join(project, rel), rel: rel, root: newObject()}
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	f.exists, f.raw = true, data
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	v, err := parseJSON(data)
	if err != nil {
		return nil, &Error{Op: "setup", Path: rel + ":" + err.Error(), Err: ErrBadConfig}
	}
	root, ok := v.(*jsonObject)
	if !ok {
		return nil, &Error{Op: "setup", Path: rel + ":1:1: the top level is not an object", Err: ErrBadConfig}
	}
	f.root = root
	return f, nil
}

// hooksObject returns the file's "hooks" object (created when create is
// set), or an error when "hooks" is something else.
func (f *hooksFile) hooksObject(create bool) (*jsonObject, error) {
	v, ok := f.root.get("hooks")
	if !ok {
		if !create {
			return nil, nil
		}
		h := newObject()
		f.root.set("hooks", h)
		return h, nil
	}
	h, ok := v.(*jsonObject)
	if !ok {
		return nil, &Error{Op: "setup", Path: f.rel + `: "hooks" is not an object`, Err: ErrBadConfig}
	}
	return h, nil
}

// removeOurs takes every handler setup wrote out of an event's groups,
// dropping groups it leaves empty. It reports whether anything changed.
func removeOurs(arr []any) ([]any, bool) {
	changed := false
	var out []any
	for _, g := range arr {
		gobj, ok := g.(*jsonObject)
		if !ok {
			out = append(out, g)
			continue
		}
		hs, ok := gobj.vals["hooks"].([]any)
		if !ok {
			out = append(out, g)
			continue
		}
		var keep []any
		for _, h := range hs {
			if isOurs(h) {
				changed = true
				continue
			}
			keep = append(keep, h)
		}
		if len(keep) == len(hs) {
			out = append(out, g)
			continue
		}
		if len(keep) == 0 {
			continue
		}
		gobj.set("hooks", keep)
		out = append(out, g)
	}
	if out == nil {
		out = []any{}
	}
	return out, changed
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

func (f *hooksFile) write() error {
	if f.root.len() == 0 {
		if f.exists {
			if err := os.Remove(f.path); err != nil {
				return err
			}
			_ = os.Remove(filepath.Dir(f.path)) // .claude/ and the like, when nothing else is in it
		}
		return nil
	}
	return writeFileAtomic(f.path, formatJSON(f.root))
}

// writeFileAtomic writes data beside path and renames it into place, so a
// tool reading its settings never sees half a file.
func writeFileAtomic(path string, data []byte) error {
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

// loadHooks reads a tool's settings file and its "hooks" object (created
// when create is set; nil when absent otherwise).
func loadHooks(project, rel string, create bool) (*hooksFile, *jsonObject, error) {
	f, err := readHooksFile(project, rel)
	if err != nil {
		return nil, nil, err
	}
	hooks, err := f.hooksObject(create)
	if err != nil {
		return nil, nil, err
	}
	return f, hooks, nil
}

// dropOurs takes setup's handlers out of every event of hooks but those in
// keep, deleting events it leaves empty, and reports whether anything
// changed.
func dropOurs(hooks *jsonObject, keep map[string]bool) bool {
	if hooks == nil {
		return false
	}
	changed := false
	for _, k := range slices.Clone(hooks.keys) {
		arr, ok := hooks.vals[k].([]any)
		if keep[k] || !ok {
			continue
		}
		if arr, ch := removeOurs(arr); ch {
			changed = true
			if len(arr) == 0 {
				hooks.del(k)
			} else {
				hooks.set(k, arr)
			}
		}
	}
	return changed
}

// Setup installs tool's hooks and instructions in the project, merging
// with what is there: other keys, other hooks and other text are kept as
// they are, and running it again changes nothing.
func Setup(t Tool, opt SetupOptions) ([]Change, error) {
	var changes []Change
	if rel, specs := toolHooks(t); rel != "" {
		f, hooks, err := loadHooks(opt.Project, rel, true)
		if err != nil {
			return nil, err
		}
		changed := false
		wanted := map[string]bool{}
		for _, spec := range specs {
			wanted[spec.native] = true
			want := hookGroup(t, spec, opt.Bin)
			var arr []any
			if v, ok := hooks.get(spec.native); ok {
				if arr, ok = v.([]any); !ok {
					return nil, &Error{Op: "setup", Path: fmt.Sprintf("%s: hooks.%s is not an array", rel, spec.native), Err: ErrBadConfig}
				}
			}
			if hookState(arr, want) == "ok" && countOurs(arr) == 1 {
				continue
			}
			arr, _ = removeOurs(arr)
			hooks.set(spec.native, append(arr, want))
			changed = true
		}
		if dropOurs(hooks, wanted) { // ours under events setup no longer installs
			changed = true
		}
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
		changes = append(changes, Change{Path: hooksFileOf(t), Action: "note", What: "Codex runs new project hooks once you trust them: start codex and accept the hooks review"})
	case Gemini:
		changes = append(changes, Change{Path: hooksFileOf(t), Action: "note", What: "Gemini CLI runs hooks when its hooks system is on (/settings, or tools.enableHooks in older releases)"})
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
		f, hooks, err := loadHooks(opt.Project, rel, false)
		if err != nil {
			return nil, err
		}
		for _, spec := range specs {
			var arr []any
			if hooks != nil {
				arr, _ = hooks.vals[spec.native].([]any)
			}
			st := hookState(arr, hookGroup(t, spec, opt.Bin))
			if st == "ok" && countOurs(arr) > 1 {
				st = "outdated"
			}
			items = append(items, CheckItem{Path: rel, What: "hook " + spec.native, Status: st})
		}
		if t == Gemini {
			if tools, ok := f.root.vals["tools"].(*jsonObject); ok {
				if on, ok := tools.vals["enableHooks"].(bool); ok && !on {
					items = append(items, CheckItem{Path: rel, What: "tools.enableHooks", Status: "warning", Detail: "false: Gemini CLI will not run hooks"})
				}
			}
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

// Remove takes out exactly what Setup added for tool: its hook handlers
// (and the groups, events and "hooks" object they leave empty; a file
// left with nothing at all is deleted), its import of AGENTS.md, and the
// AGENTS.md block when no other tool's hooks still use it.
func Remove(t Tool, opt SetupOptions) ([]Change, error) {
	var changes []Change
	if rel, _ := toolHooks(t); rel != "" {
		f, hooks, err := loadHooks(opt.Project, rel, false)
		if err != nil {
			return nil, err
		}
		changed := dropOurs(hooks, nil)
		if changed && hooks.len() == 0 {
			f.root.del("hooks")
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
	if file, _ := importFile(t); file != "" {
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
		_, hooks, err := loadHooks(project, rel, false)
		if err != nil || hooks == nil {
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
	} else if strings.Count(text, BlockBegin) > 0 {
		return Change{}, &Error{Op: "setup", Path: rel + ": " + BlockBegin + " without " + BlockEnd + " (fix by hand)", Err: ErrBadConfig}
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
	text, _, err := readText(project, file)
	if err != nil {
		return Change{}, err
	}
	if _, _, _, ok := findBlock(text); !ok && hasLine(text, line) {
		return Change{Path: file, Action: "unchanged", What: "imports AGENTS.md already"}, nil
	}
	return upsertBlockFile(project, file, line, "import of AGENTS.md ("+line+")")
}

func checkImport(project, file, line string) CheckItem {
	text, _, _ := readText(project, file)
	if hasLine(text, line) {
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

func aiderSetup(project string) (Change, error) {
	doc, exists, err := readAiderConf(project)
	if err != nil {
		return Change{}, err
	}
	if doc == nil {
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	m := doc.Content[0]
	entry := &yaml.Node{Kind: yaml.ScalarNode, Value: "AGENTS.md", LineComment: "# " + aiderComment}
	_, val := aiderRead(m)
	switch {
	case val == nil:
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "read"}, &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}})
	case val.Kind == yaml.ScalarNode:
		if val.Value == "AGENTS.md" {
			return Change{Path: aiderConf, Action: "unchanged", What: "reads AGENTS.md already"}, nil
		}
		old := *val
		*val = yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{&old, entry}}
	case val.Kind == yaml.SequenceNode:
		for _, n := range val.Content {
			if n.Value == "AGENTS.md" {
				return Change{Path: aiderConf, Action: "unchanged", What: "reads AGENTS.md already"}, nil
			}
		}
		val.Content = append(val.Content, entry)
	default:
		return Change{}, &Error{Op: "setup", Path: aiderConf + ": read is neither a file name nor a list", Err: ErrBadConfig}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return Change{}, err
	}
	if err := writeFileAtomic(filepath.Join(project, aiderConf), out); err != nil {
		return Change{}, err
	}
	action := "updated"
	if !exists {
		action = "created"
	}
	return Change{Path: aiderConf, Action: action, What: "read: AGENTS.md"}, nil
}

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
	doc, _, err := readAiderConf(project)
	if err != nil || doc == nil {
		return Change{Path: aiderConf, Action: "unchanged", What: "no entry of tavern's"}, err
	}
	m := doc.Content[0]
	key, val := aiderRead(m)
	if val == nil || val.Kind != yaml.SequenceNode {
		return Change{Path: aiderConf, Action: "unchanged", What: "no entry of tavern's"}, nil
	}
	var keep []*yaml.Node
	for _, n := range val.Content {
		if n.Value == "AGENTS.md" && strings.Contains(n.LineComment, aiderComment) {
			continue
		}
		keep = append(keep, n)
	}
	if len(keep) == len(val.Content) {
		return Change{Path: aiderConf, Action: "unchanged", What: "no entry of tavern's"}, nil
	}
	val.Content = keep
	if len(keep) == 0 {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i] == key {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
				break
			}
		}
	}
	path := filepath.Join(project, aiderConf)
	if len(m.Content) == 0 {
		if err := os.Remove(path); err != nil {
			return Change{}, err
		}
		return Change{Path: aiderConf, Action: "removed", What: "the file (it held only tavern's entry)"}, nil
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return Change{}, err
	}
	if err := writeFileAtomic(path, out); err != nil {
		return Change{}, err
	}
	return Change{Path: aiderConf, Action: "removed", What: "read: AGENTS.md"}, nil
}
