package tui

import (
	"bytes"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// markdown renders detail panes: goldmark's parse (GFM, as the web face
// uses) walked into styled, word-wrapped terminal text. It is small on
// purpose: a renderer with syntax highlighting (glamour, through chroma)
// registers its styles and lexers when the program starts, and that cost
// every `tavern` process paid — the hooks run on every tool call of an
// agent session and must start fast. The last result is cached.
type markdown struct {
	st       mdStyles
	md       goldmark.Markdown
	lastIn   string
	lastOut  string
	lastSize int
}

type mdStyles struct {
	heading, strong, emph, code, block, quote, link, rule lipgloss.Style
}

func newMarkdown(style string) *markdown {
	if style == "" {
		style = "dark"
	}
	plain := lipgloss.NewStyle()
	st := mdStyles{heading: plain, strong: plain, emph: plain, code: plain, block: plain, quote: plain, link: plain, rule: plain}
	if style != "notty" {
		accent, faint, code := lipgloss.Color("39"), lipgloss.Color("244"), lipgloss.Color("203")
		if style == "light" {
			accent, faint, code = lipgloss.Color("27"), lipgloss.Color("242"), lipgloss.Color("160")
		}
		st = mdStyles{
			heading: plain.Bold(true).Foreground(accent),
			strong:  plain.Bold(true),
			emph:    plain.Italic(true),
			code:    plain.Foreground(code),
			block:   plain.Foreground(faint),
			quote:   plain.Foreground(faint).Italic(true),
			link:    plain.Foreground(accent).Underline(true),
			rule:    plain.Foreground(faint),
		}
	}
	return &markdown{st: st, md: goldmark.New(goldmark.WithExtensions(extension.GFM))}
}

func (md *markdown) render(src string, width int) string {
	if src == md.lastIn && width == md.lastSize {
		return md.lastOut
	}
	r := &mdRender{st: md.st, src: []byte(src), width: max(width-2, 10)}
	doc := md.md.Parser().Parse(text.NewReader(r.src))
	r.blocks(doc, "")
	out := strings.TrimRight(r.out.String(), "\n") + "\n"
	md.lastIn, md.lastSize, md.lastOut = src, width, out
	return out
}

// title renders a pane's title as typed, styled and wrapped as a
// heading: a title is text, so `*x*`, `# x` or `[a](b)` show as written.
func (md *markdown) title(t string, width int) string {
	w := max(width-2, 10)
	var b strings.Builder
	for _, l := range strings.Split(ansi.Wrap("# "+t, w, ""), "\n") {
		b.WriteString(md.st.heading.Render(strings.TrimRight(l, " ")) + "\n")
	}
	return b.String()
}

type mdRender struct {
	st    mdStyles
	src   []byte
	width int
	out   strings.Builder
}

// blocks renders the block children of n, each line prefixed by indent,
// with a blank line between blocks.
func (r *mdRender) blocks(n gast.Node, indent string) {
	first := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if !first {
			r.out.WriteString(strings.TrimRight(indent, " ") + "\n")
		}
		first = false
		r.block(c, indent)
	}
}

func (r *mdRender) block(n gast.Node, indent string) {
	switch t := n.(type) {
	case *gast.Heading:
		line := strings.Repeat("#", t.Level) + " " + r.inline(t)
		r.lines(r.st.heading.Render(line), indent)
	case *gast.Paragraph, *gast.TextBlock:
		r.wrapped(r.inline(n), indent)
	case *gast.FencedCodeBlock, *gast.CodeBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(r.src))
		}
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			r.out.WriteString(indent + "  " + r.st.block.Render(l) + "\n")
		}
	case *gast.Blockquote:
		r.blocks(n, indent+r.st.quote.Render("│")+" ")
	case *gast.List:
		i := t.Start
		for it := n.FirstChild(); it != nil; it = it.NextSibling() {
			marker := "• "
			if t.IsOrdered() {
				marker = strconv.Itoa(i) + ". "
				i++
			}
			r.listItem(it, indent, marker)
		}
	case *gast.ThematicBreak:
		r.out.WriteString(indent + r.st.rule.Render(strings.Repeat("─", min(r.width, 40))) + "\n")
	case *east.Table:
		r.table(t, indent)
	case *gast.HTMLBlock:
		// raw HTML is not shown (as on the web face)
	default:
		if n.HasChildren() {
			r.blocks(n, indent)
		}
	}
}

// listItem renders one item: its first block after the marker, the rest
// (and nested lists) indented under it.
func (r *mdRender) listItem(it gast.Node, indent, marker string) {
	var sub mdRender
	sub.st, sub.src, sub.width = r.st, r.src, max(r.width-len(indent)-len(marker), 10)
	for c := it.FirstChild(); c != nil; c = c.NextSibling() {
		sub.block(c, "") // a tight list: no blank line between an item's blocks
	}
	pad := strings.Repeat(" ", len([]rune(marker)))
	for i, l := range strings.Split(strings.TrimRight(sub.out.String(), "\n"), "\n") {
		if i == 0 {
			r.out.WriteString(indent + marker + l + "\n")
		} else {
			r.out.WriteString(indent + pad + l + "\n")
		}
	}
}

func (r *mdRender) table(t *east.Table, indent string) {
	var rows [][]string
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, r.inline(cell))
		}
		rows = append(rows, cells)
	}
	widths := map[int]int{}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	for ri, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i > 0 {
				b.WriteString(" │ ")
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-ansi.StringWidth(c)))
		}
		line := strings.TrimRight(b.String(), " ")
		if ri == 0 {
			line = r.st.strong.Render(line)
		}
		r.out.WriteString(indent + line + "\n")
	}
}

// inline renders n's inline children as one string of styled text
// (soft line breaks as spaces, hard ones as newlines).
func (r *mdRender) inline(n gast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch t := c.(type) {
		case *gast.Text:
			b.Write(t.Segment.Value(r.src))
			switch {
			case t.HardLineBreak():
				b.WriteString("\n")
			case t.SoftLineBreak():
				b.WriteString(" ")
			}
		case *gast.String:
			b.Write(t.Value)
		case *gast.CodeSpan:
			var cb bytes.Buffer
			for g := t.FirstChild(); g != nil; g = g.NextSibling() {
				if s, ok := g.(*gast.Text); ok {
					cb.Write(s.Segment.Value(r.src))
				}
			}
			b.WriteString(r.st.code.Render(cb.String()))
		case *gast.Emphasis:
			s := r.st.emph
			if t.Level >= 2 {
				s = r.st.strong
			}
			b.WriteString(s.Render(r.inline(t)))
		case *east.Strikethrough:
			b.WriteString("~" + r.inline(t) + "~")
		case *gast.Link:
			label := r.inline(t)
			b.WriteString(r.st.link.Render(label))
			if dest := string(t.Destination); dest != "" && dest != label {
				b.WriteString(" (" + dest + ")")
			}
		case *gast.AutoLink:
			b.WriteString(r.st.link.Render(string(t.URL(r.src))))
		case *gast.Image:
			b.WriteString("[" + r.inline(t) + "]")
		case *gast.RawHTML:
			// not shown
		case *east.TaskCheckBox:
			if t.IsChecked {
				b.WriteString("[x] ")
			} else {
				b.WriteString("[ ] ")
			}
		default:
			b.WriteString(r.inline(c))
		}
	}
	return b.String()
}

// wrapped writes s word-wrapped to the width, each line after indent.
func (r *mdRender) wrapped(s, indent string) {
	w := max(r.width-ansi.StringWidth(indent), 10)
	for _, para := range strings.Split(s, "\n") {
		r.lines(ansi.Wrap(para, w, ""), indent)
	}
}

func (r *mdRender) lines(s, indent string) {
	for _, l := range strings.Split(s, "\n") {
		r.out.WriteString(indent + strings.TrimRight(l, " ") + "\n")
	}
}
