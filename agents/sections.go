package agents

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Body sections of an agent document.
const (
	SectionAssignment = "Assignment"
	SectionNotes      = "Notes"
	SectionMessages   = "Recent Messages"
)

var md = goldmark.New()

// sectionClosers end whatever block a body may have left open.
var sectionClosers = []string{"", "```", "~~~", strings.Repeat("`", 16), strings.Repeat("~", 16),
	"</pre></script></style></textarea>", "-->", "?>", "]]>", ">"}

// span is the byte range of a level-2 section: from the start of its
// heading line to the start of the next heading of level 1 or 2 (or EOF).
type span struct{ head, start, end int } // head: heading line start; start: content start

// findSection locates "## title" in body with a markdown parser, so a
// "## Notes" line inside a fenced code block or a list is not mistaken for
// the heading. ok is false if there is no such section.
func findSection(body []byte, title string) (span, bool) {
	doc := md.Parser().Parse(text.NewReader(body))
	var found *span
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, isHead := n.(*ast.Heading)
		if !isHead || h.Level > 2 {
			continue
		}
		line := headingLineStart(body, h)
		if found != nil {
			found.end = line
			return *found, true
		}
		// Only ATX headings ("## Notes") name sections: a setext heading's
		// underline would otherwise be taken for content.
		atx := bytes.HasPrefix(bytes.TrimLeft(body[line:], " "), []byte("#"))
		if h.Level == 2 && atx && strings.TrimSpace(string(headingText(h, body))) == title {
			found = &span{head: line, start: lineEnd(body, line), end: len(body)}
		}
	}
	if found != nil {
		return *found, true
	}
	return span{}, false
}

func headingText(h *ast.Heading, src []byte) []byte {
	var b bytes.Buffer
	lines := h.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	return b.Bytes()
}

// headingLineStart returns the offset of the line holding the heading.
func headingLineStart(src []byte, h *ast.Heading) int {
	off := 0
	if h.Lines().Len() > 0 {
		off = h.Lines().At(0).Start
	} else if h.HasChildren() {
		if t, ok := h.FirstChild().(*ast.Text); ok {
			off = t.Segment.Start
		}
	}
	if off > len(src) {
		off = len(src)
	}
	return bytes.LastIndexByte(src[:off], '\n') + 1
}

func lineEnd(src []byte, from int) int {
	if i := bytes.IndexByte(src[from:], '\n'); i >= 0 {
		return from + i + 1
	}
	return len(src)
}

// Section returns the text of "## title" in body, trimmed; ok is false if
// the section does not exist.
func Section(body []byte, title string) (string, bool) {
	sp, ok := findSection(body, title)
	if !ok {
		return "", false
	}
	return strings.TrimSpace(string(body[sp.start:sp.end])), true
}

// SetSection returns body with the content of "## title" replaced by
// content (the section is appended at the end if missing). Everything else
// in the body is kept byte for byte.
func SetSection(body []byte, title, content string) []byte {
	content = strings.TrimSpace(content)
	block := "\n"
	if content != "" {
		block = "\n" + content + "\n\n"
	}
	sp, ok := findSection(body, title)
	if !ok {
		// Append. A body ending inside an open code fence or raw HTML
		// block would swallow the new heading: close it first.
		for _, closer := range sectionClosers {
			out := append([]byte(nil), body...)
			if closer != "" {
				out = append(out, "\n"+closer+"\n"...)
			}
			if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
				out = append(out, '\n')
			}
			if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
				out = append(out, '\n')
			}
			out = append(out, "## "+title+"\n"...)
			out = append(out, strings.TrimRight(block, "\n")+"\n"...)
			if _, ok := findSection(out, title); ok {
				return out
			}
		}
		return body
	}
	out := append([]byte(nil), body[:sp.start]...)
	if sp.end == len(body) {
		block = strings.TrimRight(block, "\n") + "\n"
	}
	out = append(out, block...)
	return append(out, body[sp.end:]...)
}

// AppendSection appends a paragraph to "## title".
func AppendSection(body []byte, title, para string) []byte {
	cur, _ := Section(body, title)
	if cur != "" {
		cur += "\n\n"
	}
	return SetSection(body, title, cur+strings.TrimSpace(para))
}
