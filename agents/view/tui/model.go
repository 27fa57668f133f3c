package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/docstore"
)

// Options configure the terminal UI.
type Options struct {
	// Editor returns the command that edits file; default: $VISUAL, else
	// $EDITOR, else vi, through sh -c (as `tavern edit`).
	Editor func(file string) *exec.Cmd
	// Glamour is the style of rendered markdown ("dark", "light",
	// "notty"); default "dark", or "light" when the terminal answers
	// that its background is light. Colours are reduced to what the
	// terminal shows (none when it has none) as the frame is drawn.
	// (The name is from the renderer it once was; markdown.go.)
	Glamour string
	// StatusTimeout is how long the status line keeps a confirmation
	// ("answered q-1", "cancelled"); default 5s. Any status, an error
	// too, goes at the next key press: an error stays until then, so it
	// is not missed by someone who looked away.
	StatusTimeout time.Duration
	// AgeRefresh is how often the screen takes the view's snapshot
	// again although nothing changed, so that ages ("open for 3m",
	// "since 5m ago") move on; default 5s. (The view rechecks every
	// view.Options.Recheck and caches its snapshot in between.)
	AgeRefresh time.Duration
}

const (
	defaultStatusTimeout = 5 * time.Second
	defaultAgeRefresh    = 5 * time.Second
)

// Run runs the UI on in/out (a terminal) until the person quits or ctx
// ends.
func Run(ctx context.Context, v *view.View, opt Options, in io.Reader, out io.Writer) error {
	p := tea.NewProgram(New(v, opt), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: the normal way out besides q
	}
	return err
}

type mode int

const (
	modeList    mode = iota
	modeFilter       // typing a / filter
	modeInput        // typing an answer or a message
	modeTarget       // typing where a message goes
	modeConfirm      // y/n before an action
	modeReedit       // y/n after an invalid edit
	modeHelp
)

// Model is the Bubble Tea model of `tavern ui`.
type Model struct {
	v   *view.View
	opt Options

	snap    *view.Snapshot
	ups     <-chan uint64
	stopUps func()

	width, height int
	tab           int
	cursor        [numTabs]int
	selKey        [numTabs]string
	filter        [numTabs]string
	list          []row // rows of the current tab after the filter

	mode    mode
	input   textinput.Model
	pending view.Action // the action being prepared (input, confirm)
	edit    *editState
	status  string
	isErr   bool
	busy    bool // the status says an action is under way: its result replaces it
	statSeq int  // counts statuses: a statusTick clears only the one it was set for

	detail    viewport.Model
	detailKey string
	md        *markdown
}

type editState struct {
	file, path, rev string
	problem         string
}

// Messages.
type (
	snapMsg struct {
		s   *view.Snapshot
		err error
	}
	updateMsg uint64
	actionMsg struct {
		msg string
		err error
	}
	editedMsg  struct{ err error }
	statusTick struct{ seq int }
	ageTick    struct{}
)

// New returns the model of the view v.
func New(v *view.View, opt Options) *Model {
	ti := textinput.New()
	ti.CharLimit = 8192
	ti.Prompt = "› "
	m := &Model{v: v, opt: opt, input: ti, width: 100, height: 30}
	m.detail = viewport.New(viewport.WithWidth(50), viewport.WithHeight(20))
	m.md = newMarkdown(opt.Glamour)
	return m
}

func (m *Model) Init() tea.Cmd {
	m.ups, m.stopUps = m.v.Updates()
	cmds := []tea.Cmd{m.snapshot(), m.waitUpdate(), m.ageTick()}
	if m.opt.Glamour == "" {
		// Dark or light markdown colours: ask the terminal, inside the
		// program; the answer (if any) comes as a BackgroundColorMsg.
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

func (m *Model) snapshot() tea.Cmd {
	return func() tea.Msg {
		s, err := m.v.Snapshot()
		return snapMsg{s, err}
	}
}

// ageTick asks for the snapshot again after AgeRefresh: ages are no
// change the view announces (it would be one every second).
func (m *Model) ageTick() tea.Cmd {
	d := m.opt.AgeRefresh
	if d <= 0 {
		d = defaultAgeRefresh
	}
	return tea.Tick(d, func(time.Time) tea.Msg { return ageTick{} })
}

// waitUpdate blocks on the view's updates: live, no polling.
func (m *Model) waitUpdate() tea.Cmd {
	ups := m.ups
	return func() tea.Msg {
		ver, ok := <-ups
		if !ok {
			return nil
		}
		return updateMsg(ver)
	}
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	seq := m.statSeq
	model, cmd := m.update(msg)
	if m.statSeq != seq && m.status != "" && !m.isErr && !m.busy {
		// A new confirmation: it goes by itself after a while (the
		// Bubble Tea way: a tick message, no goroutine or timer of ours).
		d := m.opt.StatusTimeout
		if d <= 0 {
			d = defaultStatusTimeout
		}
		seq := m.statSeq
		cmd = tea.Batch(cmd, tea.Tick(d, func(time.Time) tea.Msg { return statusTick{seq} }))
	}
	return model, cmd
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case statusTick:
		if msg.seq == m.statSeq && m.mode != modeReedit {
			m.clearStatus()
		}
		return m, nil
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case snapMsg:
		if msg.err != nil {
			m.setStatus(msg.err.Error(), true)
			return m, nil
		}
		if m.snap != nil && msg.s.Version < m.snap.Version {
			// Snapshots are taken in commands, which may finish out of
			// order: an older one must not undo a newer one.
			return m, nil
		}
		m.snap = msg.s
		m.rebuild()
		return m, nil
	case updateMsg:
		return m, tea.Batch(m.snapshot(), m.waitUpdate())
	case ageTick:
		return m, tea.Batch(m.snapshot(), m.ageTick())
	case actionMsg:
		if msg.err != nil {
			m.setStatus(msg.err.Error(), true)
		} else {
			m.setStatus(msg.msg, false)
		}
		return m, m.snapshot()
	case editedMsg:
		return m.edited(msg.err)
	case tea.BackgroundColorMsg:
		// The answer to Init's question, when the terminal gives one
		// (never asked at start-up: a terminal that does not answer
		// must not hold the program up).
		if m.opt.Glamour == "" && !msg.IsDark() {
			m.md = newMarkdown("light")
			m.refreshDetail(false)
		}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.MouseMsg:
		var cmd tea.Cmd
		m.detail, cmd = m.detail.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.isErr, m.busy = s, isErr, false
	m.statSeq++
}

func (m *Model) clearStatus() {
	m.status, m.isErr, m.busy = "", false, false
}

// rebuild recomputes the current tab's rows and keeps the selection on
// the same key when it still exists.
func (m *Model) rebuild() {
	all := m.rows(m.tab)
	f := strings.ToLower(m.filter[m.tab])
	m.list = m.list[:0]
	for _, r := range all {
		if f != "" && !r.header && !strings.Contains(strings.ToLower(r.text), f) {
			continue
		}
		m.list = append(m.list, r)
	}
	cur := -1
	for i, r := range m.list {
		if !r.header && r.key == m.selKey[m.tab] {
			cur = i
		}
	}
	if cur < 0 {
		cur = min(m.cursor[m.tab], len(m.list)-1)
	}
	m.cursor[m.tab] = max(cur, 0)
	m.fixCursor(1)
	m.refreshDetail(false)
}

// fixCursor moves the cursor off group headings, in direction dir.
func (m *Model) fixCursor(dir int) {
	c := m.cursor[m.tab]
	for c >= 0 && c < len(m.list) && m.list[c].header {
		c += dir
	}
	if c < 0 || c >= len(m.list) {
		c = m.cursor[m.tab]
		for c >= 0 && c < len(m.list) && m.list[c].header {
			c -= dir
		}
	}
	if c < 0 || c >= len(m.list) {
		c = 0
	}
	m.cursor[m.tab] = c
	if r := m.selected(); r != nil {
		m.selKey[m.tab] = r.key
	}
}

func (m *Model) selected() *row {
	c := m.cursor[m.tab]
	if c < 0 || c >= len(m.list) || m.list[c].header {
		return nil
	}
	return &m.list[c]
}

func (m *Model) refreshDetail(force bool) {
	r := m.selected()
	key := ""
	if r != nil {
		key = r.key
	}
	var pn pane
	if r != nil && r.detail != nil {
		pn = r.detail()
	}
	// The pane's text is user text: its control characters escaped
	// before the markdown renderer, whose styling must stay real.
	rendered := m.md.render(view.Visible(pn.body), m.detail.Width())
	if pn.title != "" {
		rendered = m.md.title(view.Visible(pn.title), m.detail.Width()) + "\n" + rendered
	}
	if key != m.detailKey || force {
		m.detail.GotoTop()
	}
	m.detailKey = key
	m.detail.SetContent(rendered)
}

func (m *Model) layout() {
	lw := m.listWidth()
	m.detail.SetWidth(max(m.width-lw-3, 20))
	m.detail.SetHeight(max(m.height-4, 3))
	m.fitInput()
	m.refreshDetail(false)
}

func (m *Model) listWidth() int { return max(min(m.width*11/20, m.width-24), 20) }

func (m *Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	s := k.String()
	if s == "ctrl+c" {
		return m.quit()
	}
	switch m.mode {
	case modeHelp:
		m.mode = modeList
		return m, nil
	case modeFilter:
		switch s {
		case "enter":
			m.mode = modeList
		case "esc":
			m.mode = modeList
			m.filter[m.tab] = ""
			m.rebuild()
		default:
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(k)
			m.filter[m.tab] = m.input.Value()
			m.rebuild()
			return m, cmd
		}
		return m, nil
	case modeInput, modeTarget:
		switch s {
		case "esc":
			m.mode = modeList
			m.setStatus("cancelled", false)
			return m, nil
		case "enter":
			val := strings.TrimSpace(m.input.Value())
			if val == "" {
				return m, nil
			}
			if m.mode == modeTarget {
				m.pending.Target = val
				return m, m.ask(m.pending)
			}
			m.pending.Text = val
			if m.pending.Confirm == "" {
				m.pending.Confirm = "Send?"
			}
			m.mode = modeConfirm
			return m, nil
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		return m, cmd
	case modeConfirm:
		m.mode = modeList
		if s == "y" || s == "Y" {
			a := m.pending
			m.setStatus(a.Name+"…", false)
			m.busy = true
			return m, m.do(a)
		}
		m.setStatus("cancelled", false)
		return m, nil
	case modeReedit:
		m.mode = modeList
		if s == "n" || s == "N" || s == "esc" {
			m.setStatus("nothing saved; your edit is kept in "+m.edit.file, true)
			m.edit = nil
			return m, nil
		}
		return m, m.runEditor()
	}

	// A key in the list: the last status has been seen (one that says
	// an action is under way stays until its result replaces it).
	if !m.busy {
		m.clearStatus()
	}
	switch s {
	case "q":
		return m.quit()
	case "?":
		m.mode = modeHelp
	case "tab", "right", "l":
		m.switchTab((m.tab + 1) % numTabs)
	case "shift+tab", "left", "h":
		m.switchTab((m.tab + numTabs - 1) % numTabs)
	case "1", "2", "3", "4", "5", "6":
		m.switchTab(int(s[0] - '1'))
	case "j", "down":
		m.move(1)
	case "k", "up":
		m.move(-1)
	case "g", "home":
		m.cursor[m.tab] = 0
		m.fixCursor(1)
		m.refreshDetail(true)
	case "G", "end":
		m.cursor[m.tab] = len(m.list) - 1
		m.fixCursor(-1)
		m.refreshDetail(true)
	case "pgdown", "ctrl+d", "space":
		m.detail.HalfPageDown()
	case "pgup", "ctrl+u":
		m.detail.HalfPageUp()
	case "/":
		m.mode = modeFilter
		m.input.Reset()
		m.input.SetValue(m.filter[m.tab])
		m.input.Placeholder = "filter"
		m.input.Focus()
		m.fitInput()
	case "esc":
		if m.filter[m.tab] != "" {
			m.filter[m.tab] = ""
			m.rebuild()
		}
	case "enter":
		if r := m.selected(); r != nil && len(r.actions) > 0 {
			return m, m.ask(r.actions[0])
		}
	case "a", "r", "x", "R", "s", "p", "d":
		if a, ok := m.actionFor(s); ok {
			return m, m.ask(a)
		}
		m.setStatus("nothing to "+keyAction[s]+" here", true)
	case "m":
		a := view.Action{Name: view.ActSend, Label: "Send", Input: "message"}
		if r := m.selected(); r != nil && r.archived {
			m.setStatus(r.channel+" is archived: closed to new messages", true)
			return m, nil
		}
		if r := m.selected(); r != nil && r.channel != "" {
			a.Target = r.channel
			a.Confirm = "Send this message to " + r.channel + "?"
			return m, m.ask(a)
		}
		m.pending = a
		m.mode = modeTarget
		m.input.Reset()
		m.input.Placeholder = "channel or @agent"
		m.input.Focus()
		m.fitInput()
	case "e":
		if r := m.selected(); r != nil && r.path != "" {
			return m, m.beginEdit(r.path)
		}
		m.setStatus("no document to edit here", true)
	}
	return m, nil
}

// keyAction maps the action keys to action names; actionKey is the
// reverse, for hints.
var keyAction = map[string]string{"a": view.ActAnswer, "r": view.ActRetry, "x": view.ActRelease, "R": view.ActReap, "s": view.ActRespawn,
	"p": view.ActApprove, "d": view.ActReject}

func actionKey(name string) string {
	for k, n := range keyAction {
		if n == name {
			return k
		}
	}
	switch name {
	case view.ActSend:
		return "m"
	case view.ActEdit:
		return "e"
	}
	return "enter"
}

func (m *Model) actionFor(key string) (view.Action, bool) {
	r := m.selected()
	if r == nil {
		return view.Action{}, false
	}
	for _, a := range r.actions {
		if a.Name == keyAction[key] {
			return a, true
		}
	}
	return view.Action{}, false
}

// ask starts an action: its input first if it needs one, then the
// confirmation.
func (m *Model) ask(a view.Action) tea.Cmd {
	m.pending = a
	switch a.Input {
	case "answer", "message", "reason":
		m.mode = modeInput
		m.input.Reset()
		m.input.Placeholder = "your " + a.Input + " (enter to confirm, esc to cancel)"
		m.input.Focus()
		m.fitInput()
		return textinput.Blink
	case "document":
		return m.beginEdit(a.Target)
	}
	if a.Confirm == "" {
		a.Confirm = a.Label + "?"
		m.pending = a
	}
	m.mode = modeConfirm
	return nil
}

func (m *Model) do(a view.Action) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		msg, err := m.v.Do(ctx, a)
		return actionMsg{msg, err}
	}
}

func (m *Model) move(d int) {
	c := m.cursor[m.tab] + d
	if c < 0 || c >= len(m.list) {
		return
	}
	m.cursor[m.tab] = c
	m.fixCursor(d)
	m.refreshDetail(true)
}

func (m *Model) switchTab(t int) {
	if t < 0 || t >= numTabs {
		return
	}
	m.tab = t
	m.rebuild()
	m.refreshDetail(true)
}

func (m *Model) quit() (tea.Model, tea.Cmd) {
	if m.stopUps != nil {
		m.stopUps()
	}
	return m, tea.Quit
}

// The edit loop of `tavern edit`: a copy in a temp file, the editor,
// then the check; nothing is saved until the document is valid, and a
// save over someone else's change is refused with the copy kept.

func (m *Model) beginEdit(rel string) tea.Cmd {
	d, err := m.v.Doc(rel, false)
	if err != nil {
		m.setStatus(err.Error(), true)
		return nil
	}
	f, err := os.CreateTemp("", "tavern-edit-*-"+filepath.Base(rel))
	if err != nil {
		m.setStatus(err.Error(), true)
		return nil
	}
	_, err = f.WriteString(d.Text)
	f.Close()
	if err != nil {
		m.setStatus(err.Error(), true)
		return nil
	}
	m.edit = &editState{file: f.Name(), path: rel, rev: d.Rev}
	return m.runEditor()
}

func (m *Model) runEditor() tea.Cmd {
	cmd := m.editorCmd(m.edit.file)
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return editedMsg{err} })
}

func (m *Model) editorCmd(file string) *exec.Cmd {
	if m.opt.Editor != nil {
		return m.opt.Editor(file)
	}
	return exec.Command("sh", "-c", m.editorName()+` "$1"`, "editor", file)
}

// editorName is the editor command of the environment ("" with
// Options.Editor): $VISUAL, else $EDITOR, else vi.
func (m *Model) editorName() string {
	if m.opt.Editor != nil {
		return ""
	}
	for _, k := range []string{"VISUAL", "EDITOR"} {
		if e := os.Getenv(k); e != "" {
			return e
		}
	}
	return "vi"
}

func (m *Model) edited(runErr error) (tea.Model, tea.Cmd) {
	e := m.edit
	if e == nil {
		return m, nil
	}
	if runErr != nil {
		editor := "the editor"
		if name := m.editorName(); name != "" {
			editor = fmt.Sprintf("editor %q", name)
		}
		if data, err := os.ReadFile(e.file); err == nil && docstore.Revision(data) == e.rev {
			// It never ran, or changed nothing: there is no edit to keep.
			os.Remove(e.file)
			m.setStatus(editor+" failed: "+runErr.Error()+"; nothing was edited (set $VISUAL or $EDITOR)", true)
		} else {
			m.setStatus(editor+" failed: "+runErr.Error()+"; your edit is kept in "+e.file, true)
		}
		m.edit = nil
		return m, nil
	}
	data, err := os.ReadFile(e.file)
	if err != nil {
		m.setStatus(err.Error(), true)
		m.edit = nil
		return m, nil
	}
	if docstore.Revision(data) == e.rev {
		os.Remove(e.file)
		m.edit = nil
		m.setStatus("no changes", false)
		return m, nil
	}
	_, err = m.v.Do(context.Background(), view.Action{Name: view.ActEdit, Target: e.path, Rev: e.rev, Text: string(data)})
	switch {
	case err == nil:
		os.Remove(e.file)
		m.edit = nil
		m.setStatus("saved "+e.path, false)
		return m, m.snapshot()
	case errors.Is(err, docstore.ErrConflict):
		m.setStatus(fmt.Sprintf("%v; your edit is kept in %s", err, e.file), true)
		m.edit = nil
		return m, nil
	}
	e.problem = err.Error()
	m.mode = modeReedit
	m.setStatus(e.problem, true)
	return m, nil
}
