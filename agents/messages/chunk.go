package messages

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/tavernhq/tavern/schema"
)

// Message is one message of a channel.
type Message struct {
	ID      string           `json:"id"` // UUIDv7, strictly increasing within a channel
	Channel string           `json:"channel"`
	Sender  string           `json:"sender"`
	Time    schema.Timestamp `json:"time"`
	Text    string           `json:"text"`
	Chunk   string           `json:"chunk,omitempty"` // store path of the chunk holding it
}

// The body of a chunk is a sequence of sections, one per message:
//
//	### 2026-01-24T10:00:00.123Z — alice
//	<!-- id: 0194a7c2-5b1e-7c3d-8e9f-0123456789ab -->
//
//	the text, any number of lines
//
// The id line is an HTML comment so rendered markdown shows only the
// header and the text, while `grep <id>` still finds the message. Text
// lines that could be mistaken for a header (those starting with "###"
// after any number of backslashes) get one more leading backslash, which
// markdown renders as a literal "#" and the parser strips again.
const (
	headerPrefix = "### "
	senderSep    = " — "
	idPrefix     = "<!-- id: "
	idSuffix     = " -->"
)

// renderMessage appends the section for m to buf.
func renderMessage(buf *bytes.Buffer, m Message) {
	buf.WriteString(headerPrefix)
	buf.WriteString(schema.FormatTime(m.Time.Time))
	buf.WriteString(senderSep)
	buf.WriteString(m.Sender)
	buf.WriteString("\n")
	buf.WriteString(idPrefix)
	buf.WriteString(m.ID)
	buf.WriteString(idSuffix)
	buf.WriteString("\n\n")
	for i, line := range strings.Split(m.Text, "\n") {
		if i > 0 {
			buf.WriteByte('\n')
		}
		if isHeaderLike(line) {
			buf.WriteByte('\\')
		}
		buf.WriteString(line)
	}
	buf.WriteString("\n\n")
}

// isHeaderLike reports whether a line is "###..." behind zero or more
// backslashes: the lines escaping must touch to stay reversible.
func isHeaderLike(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, `\`), "###")
}

// ChunkError is a malformed message section in a chunk body. Line is the
// 1-based line within the body.
type ChunkError struct {
	Line int
	Msg  string
}

func (e *ChunkError) Error() string { return fmt.Sprintf("body line %d: %s", e.Line, e.Msg) }

func (e *ChunkError) Unwrap() error { return ErrBadChunk }

// ParseChunkBody parses the message sections of a chunk body. Lines before
// the first header (a title a person added) are ignored. A header that does
// not parse, or a header without its id line, is an error with its line:
// silently skipping it would lose a message.
func ParseChunkBody(body []byte) ([]Message, error) {
	lines := strings.Split(string(body), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1] // the body's final newline ends a line, it is not one
	}
	var out []Message
	var cur *Message
	var text []string
	flush := func() {
		if cur == nil {
			return
		}
		// Drop the blank separator line that ends every section, and
		// the one more a person adds appending a message by hand: no
		// text ends in a newline (SendMessages drops them).
		for n := len(text); n > 0 && text[n-1] == ""; n-- {
			text = text[:n-1]
		}
		cur.Text = strings.Join(text, "\n")
		out = append(out, *cur)
		cur, text = nil, nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, headerPrefix) {
			if cur != nil {
				if isHeaderLike(line) && strings.HasPrefix(line, `\`) {
					line = line[1:]
				}
				text = append(text, line)
			}
			continue
		}
		flush()
		m, err := parseHeader(line)
		if err != nil {
			return nil, &ChunkError{Line: i + 1, Msg: err.Error()}
		}
		if i+1 >= len(lines) {
			return nil, &ChunkError{Line: i + 1, Msg: "message header without its id line"}
		}
		id, ok := strings.CutPrefix(lines[i+1], idPrefix)
		if ok {
			id, ok = strings.CutSuffix(id, idSuffix)
		}
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return nil, &ChunkError{Line: i + 2, Msg: fmt.Sprintf("want %q after a message header", idPrefix+"<id>"+idSuffix)}
		}
		m.ID = id
		i++
		// One blank line separates the id from the text.
		if i+1 < len(lines) && lines[i+1] == "" {
			i++
		}
		cur = &m
	}
	flush()
	return out, nil
}

func parseHeader(line string) (Message, error) {
	rest := strings.TrimPrefix(line, headerPrefix)
	ts, sender, ok := strings.Cut(rest, senderSep)
	if !ok {
		return Message{}, fmt.Errorf("message header %q is not `### <time> — <sender>`", line)
	}
	t, err := schema.ParseTime(ts)
	if err != nil {
		return Message{}, fmt.Errorf("message header: bad time %q", ts)
	}
	if sender == "" {
		return Message{}, fmt.Errorf("message header %q has no sender", line)
	}
	return Message{Sender: sender, Time: schema.TimeOf(t)}, nil
}
