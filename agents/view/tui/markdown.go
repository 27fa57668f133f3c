package tui

import (
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// markdown renders detail panes: headings, paragraphs wrapped to the
// pane, lists, block quotes, code (indented, not highlighted), emphasis
// and links, styled with lipgloss (no styling with the "notty" style).
//
// It replaces glamour, whose syntax highlighter (chroma) registers its
// lexers and styles in package init: about 20 ms of CPU at the start of
// every tavern command, `tavern show` included, for a feature of `tavern
// ui` alone. The last result is cached.
type markdown struct {
	plain    bool
	light    bool
	lastIn   string
	lastOut  string
	lastSize int
}

// mdParser is made on first use: goldmark's setup is not free either.
var mdParser = sync.OnceValue(func() goldmark.Markdown { return goldmark.New() })

func newMarkdown(style string) *markdown {
	if style == "" {
		style = "dark"
		if lipgloss.ColorProfile() == termenv.Ascii {
			style = "notty"
		}
	}
	return &markdown{plain: style == "notty" || style == "ascii", light: style == "light"}
}

func (md *markdown) render(src string, width int) string {
	if src == md.lastIn && width == md.lastSize {
		return md.lastOut
	}
	r := &mdRender{src: []byte(src), width: max(width-2, 10), md: md}
	doc := mdParser().Parser().Parse(text.NewReader(r.src))
	r.blocks(doc, "", "")
	out := strings.TrimRight(r.out.String(), "\n") + "\n"
	md.lastIn, md.lastSize, md.lastOut = src, width, out
	return out
}

// Styles of the rendered text (ignored when plain).
var (
	mdHeading = lipgloss.NewStyle().Bold(true)
	mdTitle   = lipgloss.NewStyle().Bold(true).Underline(true)
	mdBold    = lipgloss.NewStyle().Bold(true)
	mdItalic  = lipgloss.NewStyle().Italic(true)
	mdCode    = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	mdCodeLt  = lipgloss.NewStyle().Foreground(lipgloss.Color("5"))
	mdLink    = lipgloss.NewStyle().Underline(true)
	mdDim     = lipgloss.NewStyle().Faint(true)
)

// mdRender is one rendering: blocks are written to out, each line
// prefixed (block quotes, list indentation).
type mdRender struct {
	src   []byte
	width int
	md    *markdown
	out   strings.Builder
}

// word is a run of text without spaces and the style it is shown in.
type word struct {
	text  string
	style *lipgloss.Style
	glue  bool // no space before it: it continues the previous word
}

func (r *mdRender) style(s *lipgloss.Style, t string) string {
	if r.md.plain || s == nil || t == "" {
		return t
	}
	return s.Render(t)
}

func (r *mdRender) codeStyle() *lipgloss.Style {
	if r.md.light {
		return &mdCodeLt
	}
	return &mdCode
}

// blocks renders the block children of n. first prefixes the first line
// written, rest every other one.
func (r *mdRender) blocks(n ast.Node, first, rest string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c != n.FirstChild() && !isTight(n) {
			r.out.WriteString(strings.TrimRight(rest, " ") + "\n")
		}
		r.block(c, first, rest)
		first = rest
	}
}

// isTight: the items of a tight list are not separated by blank lines.
func isTight(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.List:
		return x.IsTight
	case *ast.ListItem:
		if l, ok := x.Parent().(*ast.List); ok {
			return l.IsTight
		}
	}
	return false
}

func (r *mdRender) block(n ast.Node, first, rest string) {
	switch x := n.(type) {
	case *ast.Heading:
		st := &mdHeading
		if x.Level == 1 {
			st = &mdTitle
		}
		words := r.inlines(x, st)
		if r.md.plain {
			words = append([]word{{text: strings.Repeat("#", x.Level)}}, words...)
		}
		r.wrap(words, first, rest)
	case *ast.Paragraph, *ast.TextBlock:
		r.wrap(r.inlines(n, nil), first, rest)
	case *ast.List:
		num := x.Start
		for it := x.FirstChild(); it != nil; it = it.NextSibling() {
			if it != x.FirstChild() && !x.IsTight {
				r.out.WriteString(strings.TrimRight(rest, " ") + "\n")
			}
			bullet := "• "
			if x.IsOrdered() {
				bullet = strconv.Itoa(num) + ". "
				num++
			}
			r.blocks(it, first+bullet, rest+strings.Repeat(" ", len([]rune(bullet))))
			first = rest
		}
	case *ast.Blockquote:
		r.blocks(x, first+"│ ", rest+"│ ")
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			line := strings.TrimRight(string(seg.Value(r.src)), "\n")
			r.out.WriteString(first + "  " + r.style(r.codeStyle(), line) + "\n")
			first = rest
		}
	case *ast.ThematicBreak:
		r.out.WriteString(first + r.style(&mdDim, strings.Repeat("─", max(r.width-len([]rune(first)), 3))) + "\n")
	case *ast.HTMLBlock:
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			r.out.WriteString(first + strings.TrimRight(string(seg.Value(r.src)), "\n") + "\n")
			first = rest
		}
	default:
		if n.HasChildren() {
			r.blocks(n, first, rest)
		}
	}
}

// inlines flattens the inline children of n into words; a hard line
// break is the word "\n".
func (r *mdRender) inlines(n ast.Node, st *lipgloss.Style) []word {
	var words []word
	sep := true // a space comes before the next text
	add := func(t string, st *lipgloss.Style) {
		for i, f := range strings.Split(t, " ") {
			if i > 0 {
				sep = true
			}
			if f == "" {
				continue
			}
			words = append(words, word{text: f, style: st, glue: !sep && len(words) > 0})
			sep = false
		}
	}
	var walk func(n ast.Node, st *lipgloss.Style)
	walk = func(n ast.Node, st *lipgloss.Style) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch x := c.(type) {
			case *ast.Text:
				add(string(x.Segment.Value(r.src)), st)
				if x.HardLineBreak() {
					words = append(words, word{text: "\n"})
					sep = true
				} else if x.SoftLineBreak() {
					add(" ", st)
				}
			case *ast.String:
				add(string(x.Value), st)
			case *ast.CodeSpan:
				var b strings.Builder
				for t := x.FirstChild(); t != nil; t = t.NextSibling() {
					if s, ok := t.(*ast.Text); ok {
						b.Write(s.Segment.Value(r.src))
					}
				}
				add(b.String(), r.codeStyle())
			case *ast.Emphasis:
				es := &mdItalic
				if x.Level >= 2 {
					es = &mdBold
				}
				walk(x, es)
			case *ast.Link:
				walk(x, &mdLink)
				if dest := string(x.Destination); dest != "" {
					add(" ("+dest+")", &mdDim)
				}
			case *ast.AutoLink:
				add(string(x.URL(r.src)), &mdLink)
			case *ast.Image:
				add("[image: ", &mdDim)
				walk(x, &mdDim)
				add("]", &mdDim)
			case *ast.RawHTML:
				for i := 0; i < x.Segments.Len(); i++ {
					seg := x.Segments.At(i)
					add(string(seg.Value(r.src)), st)
				}
			default:
				walk(c, st)
			}
		}
	}
	walk(n, st)
	return words
}

// wrap writes words as lines of at most r.width columns (a longer word
// gets a line of its own).
func (r *mdRender) wrap(words []word, first, rest string) {
	prefix := first
	var line strings.Builder
	col := 0
	flush := func() {
		r.out.WriteString(prefix + line.String() + "\n")
		prefix, col = rest, 0
		line.Reset()
	}
	for _, w := range words {
		if w.text == "\n" {
			flush()
			continue
		}
		n := lipgloss.Width(w.text)
		room := r.width - lipgloss.Width(prefix)
		space := col > 0 && !w.glue
		if space && col+n+1 > room {
			flush()
			space = false
		}
		if space {
			line.WriteByte(' ')
			col++
		}
		line.WriteString(r.style(w.style, w.text))
		col += n
	}
	if col > 0 || prefix == first {
		flush()
	}
}
