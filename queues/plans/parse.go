package plans

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tavernhq/tavern/schema"
)

// Task is one checkbox line of a plan.
type Task struct {
	Index   int    // position among the plan's tasks
	Line    int    // 1-based line of the body
	Offset  int    // byte offset of the box's state character ("[ ]" -> the space) in the body
	Indent  int    // columns before the list marker (a tab counts 4)
	State   byte   // ' ', 'x' or '-' (X is read as x)
	Raw     string // the text after "] " as written
	Title   string // Raw without markers, trimmed
	Key     string // Title, with " (n)" for the n-th repetition of a title
	After   []string
	Gate    string
	Body    string // the text under the checkbox, dedented
	Parent  int    // index of the enclosing task, -1 at the top
	Kids    []int  // indexes of the tasks nested directly under it
	Struck  bool   // the text is ~~struck through~~
	MarkErr string // a marker that could not be read
}

// Open reports whether the box is unchecked (a task to do).
func (t *Task) Open() bool { return t.State == ' ' }

// Cancelled reports whether the box says "won't do": [-], or a ticked
// box whose text is struck through.
func (t *Task) Cancelled() bool { return t.State == '-' || (t.State == 'x' && t.Struck) }

// Checked reports whether the box is ticked as done.
func (t *Task) Checked() bool { return t.State == 'x' && !t.Struck }

// Compiled on first use: package-level regexps would be compiled at the
// start of every tavern command.
var (
	taskLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([ \t]*)([-*+]|[0-9]{1,9}[.)])[ \t]+\[([ xX-])\](?:[ \t]+(.*?))?[ \t]*$`)
	})
	marker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\((after|gate)\s*:\s*([^)]*)\)`) })
	fence  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[ \t]*(```|~~~)") })
)

// Parse reads the tasks of a checklist body. Checkbox lines inside
// fenced code blocks are not tasks.
func Parse(body []byte) ([]*Task, error) {
	var tasks []*Task
	lines := splitKeep(body)
	off := 0
	inFence := ""
	type open struct{ idx, indent int }
	var stack []open
	keys := map[string]bool{}
	var cur *Task // the task whose body we are reading
	var bodyLines []string
	flush := func() {
		if cur != nil {
			cur.Body = dedent(bodyLines)
		}
		cur, bodyLines = nil, nil
	}
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r\n")
		if m := fence().FindStringSubmatch(line); m != nil {
			switch {
			case inFence == "":
				inFence = m[1]
			case m[1] == inFence:
				inFence = ""
			}
			if cur != nil {
				bodyLines = append(bodyLines, line)
			}
			off += len(raw)
			continue
		}
		if inFence != "" {
			if cur != nil {
				bodyLines = append(bodyLines, line)
			}
			off += len(raw)
			continue
		}
		m := taskLine().FindStringSubmatchIndex(line)
		if m == nil {
			if cur != nil && (strings.TrimSpace(line) == "" || width(leading(line)) > cur.Indent) {
				bodyLines = append(bodyLines, line)
			} else {
				flush()
			}
			off += len(raw)
			continue
		}
		flush()
		t := &Task{Index: len(tasks), Line: i + 1, Parent: -1}
		t.Indent = width(line[m[2]:m[3]])
		state := line[m[6]]
		if state == 'X' {
			state = 'x'
		}
		t.State = state
		t.Offset = off + m[6]
		if m[8] >= 0 {
			t.Raw = line[m[8]:m[9]]
		}
		t.parseMarkers()
		for len(stack) > 0 && stack[len(stack)-1].indent >= t.Indent {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			p := stack[len(stack)-1].idx
			t.Parent = p
			tasks[p].Kids = append(tasks[p].Kids, t.Index)
		}
		stack = append(stack, open{t.Index, t.Indent})
		// The key is the title, made unique with " (n)" (the n-th box of
		// that title, or the next free n if a box is titled so literally).
		t.Key = t.Title
		for n := 2; keys[t.Key]; n++ {
			t.Key = t.Title + " (" + strconv.Itoa(n) + ")"
		}
		keys[t.Key] = true
		tasks = append(tasks, t)
		cur = t
		off += len(raw)
	}
	flush()
	return tasks, nil
}

func (t *Task) parseMarkers() {
	title := t.Raw
	for _, m := range marker().FindAllStringSubmatch(t.Raw, -1) {
		val := strings.TrimSpace(m[2])
		switch m[1] {
		case "after":
			for _, p := range strings.Split(val, ",") {
				if p = strings.TrimSpace(p); p != "" {
					t.After = append(t.After, p)
				}
			}
		case "gate":
			if val != "human" {
				t.MarkErr = fmt.Sprintf("gate %q: the only gate a plan line can ask for is human", val)
			} else {
				t.Gate = val
			}
		}
		title = strings.Replace(title, m[0], "", 1)
	}
	title = strings.Join(strings.Fields(title), " ")
	if s, ok := strings.CutPrefix(title, "~~"); ok {
		if s, ok = strings.CutSuffix(s, "~~"); ok {
			t.Struck, title = true, strings.TrimSpace(s)
		}
	}
	t.Title = title
}

// splitKeep splits b into lines that keep their line endings.
func splitKeep(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func leading(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

// width is the column width of leading whitespace (tab stops of 4, as
// CommonMark lists use).
func width(ws string) int {
	n := 0
	for _, c := range ws {
		if c == '\t' {
			n += 4 - n%4
		} else {
			n++
		}
	}
	return n
}

// dedent removes the common leading whitespace of lines and the blank
// lines around them.
func dedent(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if w := len(leading(l)); common < 0 || w < common {
			common = w
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= common {
			l = l[common:]
		} else {
			l = strings.TrimLeft(l, " \t")
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// resolveAfter finds the task an (after: ref) names: a task whose title
// (or key) is ref, case-insensitive, else the only task whose title
// starts with it. The lines an ambiguous ref matches are told as file
// lines: firstLine is the file line of the body's first line, minus one.
func resolveAfter(tasks []*Task, ref string, firstLine int) (*Task, error) {
	l := strings.ToLower(ref)
	for _, t := range tasks {
		if strings.ToLower(t.Key) == l || strings.ToLower(t.Title) == l {
			return t, nil
		}
	}
	var hits []*Task
	for _, t := range tasks {
		if strings.HasPrefix(strings.ToLower(t.Title), l) {
			hits = append(hits, t)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		titles := make([]string, 0, len(tasks))
		for _, t := range tasks {
			titles = append(titles, t.Title)
		}
		if near := schema.Near(ref, titles); len(near) > 0 {
			return nil, fmt.Errorf("(after: %s) names no task (did you mean %s?)", ref, schema.NearList(near))
		}
		return nil, fmt.Errorf("(after: %s) names no task", ref)
	}
	var lines []string
	for _, h := range hits {
		lines = append(lines, strconv.Itoa(firstLine+h.Line))
	}
	return nil, fmt.Errorf("(after: %s) matches the tasks on lines %s; use more of the title", ref, strings.Join(lines, ", "))
}
