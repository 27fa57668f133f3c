package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tavernhq/tavern/agents/view"
)

var (
	tabStyle       = lipgloss.NewStyle().Padding(0, 1)
	activeTabStyle = lipgloss.NewStyle().Padding(0, 1).Bold(true).Reverse(true)
	headStyle      = lipgloss.NewStyle().Bold(true)
	selStyle       = lipgloss.NewStyle().Reverse(true)
	dimStyle       = lipgloss.NewStyle().Faint(true)
	errStyle       = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
	okStyle        = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	hotStyle       = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
	paneStyle      = lipgloss.NewStyle().BorderStyle(lipgloss.NormalBorder()).BorderLeft(true).PaddingLeft(1)
	kindStyles     = map[string]lipgloss.Style{
		"question": lipgloss.NewStyle().Foreground(lipgloss.Color("12")),
		"failed":   lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		"dead":     lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		"working":  lipgloss.NewStyle().Foreground(lipgloss.Color("14")),
		"claimed":  lipgloss.NewStyle().Foreground(lipgloss.Color("14")),
		"waiting":  lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		"done":     lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
	}
)

func (m *Model) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	return v
}

func (m *Model) frame() string {
	if m.mode == modeHelp {
		return help
	}
	var b strings.Builder
	// Tab bar.
	var tabs []string
	for i, name := range tabNames {
		label := fmt.Sprintf("%d %s", i+1, name)
		if i == tabNeeds && m.snap != nil && len(m.snap.Needs) > 0 {
			label += " " + hotStyle.Render(fmt.Sprintf("(%d)", len(m.snap.Needs)))
		}
		if i == m.tab {
			tabs = append(tabs, activeTabStyle.Render(label))
		} else {
			tabs = append(tabs, tabStyle.Render(label))
		}
	}
	b.WriteString(lipgloss.JoinHorizontal(lipgloss.Top, tabs...))
	b.WriteString("\n")

	lw := m.listWidth()
	h := max(m.height-4, 3)
	left := m.renderList(lw, h)
	right := paneStyle.Height(h).Render(m.detail.View())
	b.WriteString(lipgloss.JoinHorizontal(lipgloss.Top, left, right))
	b.WriteString("\n")
	b.WriteString(m.footer())
	return b.String()
}

func (m *Model) renderList(w, h int) string {
	lines := make([]string, 0, h)
	if m.snap == nil {
		lines = append(lines, dimStyle.Render("loading…"))
	} else if len(m.list) == 0 {
		msg := "nothing here"
		if m.tab == tabNeeds && m.filter[m.tab] == "" {
			msg = "Nothing waits on you."
		} else if m.filter[m.tab] != "" {
			msg = "nothing matches /" + m.filter[m.tab]
		}
		lines = append(lines, dimStyle.Render(msg))
	}
	// Scroll so the cursor is visible.
	cur := m.cursor[m.tab]
	start := 0
	if cur >= h {
		start = cur - h + 1
	}
	for i := start; i < len(m.list) && len(lines) < h; i++ {
		r := m.list[i]
		text := truncate(r.text, w-1)
		switch {
		case i == cur && !r.header:
			text = selStyle.Render(pad(text, w-1))
		case r.header:
			text = headStyle.Render(text)
		default:
			if st, ok := kindStyles[r.kind]; ok {
				text = st.Render(text)
			}
		}
		lines = append(lines, text)
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lipgloss.NewStyle().Width(w).Render(strings.Join(lines, "\n"))
}

// inputPrefix is what the footer shows before the text input, in the
// modes that type into it.
func (m *Model) inputPrefix() string {
	switch m.mode {
	case modeFilter:
		return "/"
	case modeInput:
		return view.Visible(fmt.Sprintf("%s %s: ", m.pending.Label, m.pending.Target))
	case modeTarget:
		return "send to: "
	}
	return ""
}

// fitInput gives the text input the rest of the footer line: with no
// width, the input shows only the first letter of its placeholder.
func (m *Model) fitInput() {
	m.input.SetWidth(max(m.width-lipgloss.Width(m.inputPrefix()+m.input.Prompt)-1, 1))
}

func (m *Model) footer() string {
	switch m.mode {
	case modeFilter, modeInput, modeTarget:
		return m.inputPrefix() + m.input.View()
	case modeConfirm:
		text := ""
		if m.pending.Text != "" {
			text = fmt.Sprintf(" “%s”", truncate(m.pending.Text, 60))
		}
		return hotStyle.Render(m.pending.Confirm + text + " [y/N]")
	case modeReedit:
		const prompt = "  Edit again? [Y/n]"
		lines := wrap(m.status, m.width-1, statusLines)
		last := len(lines) - 1
		if lipgloss.Width(lines[last])+len(prompt) > m.width-1 {
			if len(lines) < statusLines {
				lines = append(lines, "")
				last++
			} else {
				lines[last] = truncate(lines[last], m.width-1-len(prompt))
			}
		}
		for i := range lines {
			lines[i] = errStyle.Render(lines[i])
		}
		lines[last] += hotStyle.Render(prompt)
		return strings.Join(lines, "\n")
	}
	prefix := ""
	if m.filter[m.tab] != "" {
		prefix = dimStyle.Render("/" + m.filter[m.tab] + " (esc clears) ")
	}
	w := m.width - 1 - lipgloss.Width(prefix)
	st := dimStyle.Render("tab/1-6 switch · j/k move · / filter · enter act · a answer · r retry · x release · R reap · s respawn · p/d approve/reject · m message · e edit · ? help · q quit")
	if m.status != "" {
		if m.isErr {
			// An error is read to the end: its tail often says what to do
			// or where something is (the file an edit is kept in).
			lines := wrap(m.status, w, statusLines)
			for i := range lines {
				lines[i] = errStyle.Render(lines[i])
			}
			st = strings.Join(lines, "\n")
		} else {
			st = okStyle.Render(truncate(m.status, w))
		}
	}
	return prefix + st
}

const help = `tavern ui — keys

  tab, shift+tab, 1-6, h/l   switch tabs: Needs you, Agents, Queues, Messages, Journal, Resources
  j/k, up/down, g/G          move in the list
  pgup/pgdn, ctrl+u/ctrl+d   scroll the detail pane
  /                          filter the list (enter keeps it, esc clears it)
  enter                      the selected entry's first action
  a                          answer the question
  r                          retry the dead item
  x                          release the claim (fenced by its attempt)
  R                          reap dead holders
  s                          respawn a failed agent (failed -> idle)
  p / d                      approve / reject (deny) a human gate
  m                          send a message (to the agent, channel, or one you name)
  e                          edit the document in $EDITOR (nothing is saved until it is valid)
  q, ctrl+c                  quit

Every action asks for a confirmation and is journaled as view.action with you as the agent.
The views update live as the store changes.

(any key to go back)`

func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	// Every line the list, footer and prompts show is cut here: user
	// text (titles, names, messages) with its control characters escaped.
	s = view.Visible(strings.ReplaceAll(s, "\n", " "))
	if lipgloss.Width(s) <= n {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r)) > n-1 {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// statusLines is how many lines an error may take at the bottom: the
// frame leaves that room below the panes.
const statusLines = 3

// wrap is s on at most n lines of width w, broken at spaces (a word wider
// than w is cut), the last cut with "…" if it does not all fit; control
// characters escaped as truncate does.
func wrap(s string, w, n int) []string {
	if w <= 0 || n <= 0 {
		return []string{""}
	}
	s = view.Visible(strings.ReplaceAll(s, "\n", " "))
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for lipgloss.Width(word) > w {
			// Too wide for any line: fill this one and go on.
			room := w
			if line != "" {
				room = w - lipgloss.Width(line) - 1
			}
			if room <= 0 {
				lines, line = append(lines, line), ""
				continue
			}
			r := []rune(word)
			k := 0
			for k < len(r) && lipgloss.Width(string(r[:k+1])) <= room {
				k++
			}
			if k == 0 && line == "" {
				k = 1 // a letter wider than the line: it goes on one of its own, or this never ends
			}
			if line != "" {
				line += " "
			}
			lines, line = append(lines, line+string(r[:k])), ""
			word = string(r[k:])
		}
		switch {
		case line == "":
			line = word
		case lipgloss.Width(line)+1+lipgloss.Width(word) <= w:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	lines = append(lines, line)
	if len(lines) > n {
		rest := strings.Join(lines[n-1:], " ")
		lines = append(lines[:n-1], truncate(rest, w))
	}
	return lines
}

func pad(s string, n int) string {
	if w := lipgloss.Width(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}
